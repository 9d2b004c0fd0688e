"""The house's structure: rooms on floors, every import pointing down, no module too long.

A room is a package of ``poam_ros`` or one of its top-level modules. ``FLOORS`` lists them from
the ground up, as docs/architecture.md draws them; a room may import only rooms on floors below
its own, so no arrow points back up and no two rooms form a cycle. A new room must be placed
on a floor here before the suite passes.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "poam_ros"
SIM = REPO / "sim"  # poam_ros/sim links to it
MAX_MODULE_LINES = 500

FLOORS = (
    ("params", "attitude", "processes", "kernels", "inducing", "scalers", "diagnostics",
     "dependencies"),
    ("workspace", "messages", "sim", "models", "launch_xml"),
    ("geo", "figures"),
    ("ingest", "mapping", "vehicle", "fleet"),
    ("planners", "view"),
    ("setup",),
    ("mission",),
    ("bags",),
    ("ros",),
    ("cli",),
    ("benchmark",),
    ("__main__",),
)
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
PACKAGE_ITSELF = ("__init__", "__version__")  # the package's own name and version


def _modules():
    """(room, path) of every module of the package, the simulator's included."""
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        yield relative.parts[0].removesuffix(".py"), path
    for path in sorted(SIM.rglob("*.py")):
        yield "sim", path


def _imported_rooms(path: Path):
    """(line, room) of every ``poam_ros`` room the module imports, at any depth of its code."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "poam_ros":
                continue
            if len(parts) > 1:
                yield node.lineno, parts[1]
            else:
                yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "poam_ros" and len(parts) > 1:
                    yield node.lineno, parts[1]


def test_every_room_has_a_floor():
    rooms = {room for room, _ in _modules()} - {"__init__"}
    assert sorted(rooms - set(FLOOR)) == []


def test_every_import_points_down():
    upward = []
    for room, path in _modules():
        for line, target in _imported_rooms(path):
            if target == room or target in PACKAGE_ITSELF or room == "__init__":
                continue
            if FLOOR.get(target, len(FLOORS)) >= FLOOR[room]:
                upward.append(f"{path.relative_to(REPO)}:{line}: {room} -> {target}")
    assert upward == []


def test_no_module_is_longer_than_the_limit():
    long = [f"{path.relative_to(REPO)}: {lines} lines" for _, path in _modules()
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES]
    assert long == []
