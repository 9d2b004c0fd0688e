"""What the package imports is what it declares, and its node executables install where
``ros2 run`` finds them and nowhere on ``$PATH``.

:data:`poam_ros.dependencies.DEPENDENCIES` is the one list: every third-party module imported
anywhere under poam_ros/ (the simulator's sim/ included) is on it, every rosdep key on it is
an ``exec_depend`` of package.xml and every ``exec_depend`` a key on it, a module without a key
is a pip step package.xml and the README name, and setup.py's ``install_requires`` are its pip
requirements. The executables: the names setup.py installs are those of
:data:`poam_ros.launch_xml.EXECUTABLES`, of ``poam-ros sim``'s graph and of the launch
files, each running the module the graph runs; a real install into a scratch prefix puts them
in ``lib/poam_ros`` (executable, the launcher checking the dependencies first) and only
``poam-ros`` in ``bin``.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from poam_ros import dependencies
from poam_ros.dependencies import DEPENDENCIES
from poam_ros.launch_xml import EXECUTABLES

REPO = Path(__file__).resolve().parents[1]
PACKAGE_XML = REPO / "package.xml"


def imported_modules() -> dict[str, str]:
    """Top-level module -> a file importing it, for every absolute import under poam_ros/
    and sim/ that is neither the standard library's nor the package's own."""
    found = {}
    for path in sorted([*(REPO / "poam_ros").rglob("*.py"), *(REPO / "sim").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("poam_ros", "sim"):
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def exec_depends() -> set[str]:
    return {element.text.strip() for element in ET.parse(PACKAGE_XML).getroot()
            .iter("exec_depend")}


def install_requires() -> list[str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    keyword = next(node for node in ast.walk(tree)
                   if isinstance(node, ast.keyword) and node.arg == "install_requires")
    return [element.value for element in keyword.value.elts]


def test_every_imported_module_is_a_listed_dependency():
    unlisted = {module: path for module, path in imported_modules().items()
                if module not in DEPENDENCIES and module not in dependencies.OPTIONAL}
    assert not unlisted, f"imported but not in poam_ros/dependencies.py: {unlisted}"


def extras_require() -> dict[str, list[str]]:
    tree = ast.parse((REPO / "setup.py").read_text())
    keyword = next(node for node in ast.walk(tree)
                   if isinstance(node, ast.keyword) and node.arg == "extras_require")
    return {key.value: [element.value for element in value.elts if isinstance(
        element, ast.Constant)] for key, value in zip(keyword.value.keys, keyword.value.values)}


def test_an_optional_module_is_its_feature_s_extra_and_said_when_missing(monkeypatch):
    extras = extras_require()
    for module, optional in dependencies.OPTIONAL.items():
        assert optional.pip in extras[optional.extra], f"setup.py [{optional.extra}]"
    monkeypatch.setitem(sys.modules, "foxglove", None)  # an import that fails
    with pytest.raises(dependencies.MissingDependency,
                       match=r"the live view needs the Python package 'foxglove': python3 -m "
                             r"pip install 'foxglove-sdk>=0\.30,<0\.31'"):
        dependencies.import_optional("foxglove", "the live view")


def test_package_xml_declares_exactly_the_rosdep_keys():
    keys = {dependency.key for dependency in DEPENDENCIES.values() if dependency.key}
    assert exec_depends() == keys


def test_a_module_without_a_rosdep_key_is_a_documented_pip_step():
    text = PACKAGE_XML.read_text()
    comments = " ".join(re.findall(r"<!--(.*?)-->", text, re.S))
    readme = (REPO / "README.md").read_text()
    for module, dependency in DEPENDENCIES.items():
        if dependency.key is None:
            command = dependencies.install_command(module)
            assert dependency.pip and command in comments, f"package.xml: no {command}"
            assert command in readme, f"README: no {command}"


def test_setup_py_requires_the_pip_requirements():
    pips = [dependency.pip for dependency in DEPENDENCIES.values() if dependency.pip]
    assert sorted(install_requires()) == sorted(pips)


def test_a_missing_module_is_one_line_naming_it_and_its_install_command(monkeypatch, capsys):
    real_find_spec = dependencies.importlib.util.find_spec
    monkeypatch.setattr(dependencies.importlib.util, "find_spec",
                        lambda name: None if name in ("gpytorch", "mcap") else
                        real_find_spec(name))
    with pytest.raises(SystemExit) as stop:
        dependencies.require()
    assert stop.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    assert "'gpytorch'" in lines[0] and "python3 -m pip install 'gpytorch>=1.11'" in lines[0]
    assert "'mcap'" in lines[1] and "rosdep install" in lines[1]
    assert "mcap-ros2-support" in lines[1]


def node_executables() -> list[str]:
    """The names setup.py installs under lib/poam_ros: nodes/ links to the launcher."""
    return sorted(path.name for path in (REPO / "nodes").iterdir() if path.is_symlink())


def test_executables_are_the_launch_files_nodes():
    assert node_executables() == sorted(EXECUTABLES)
    for path in (REPO / "launch").glob("*.launch.xml"):
        for node in ET.parse(path).getroot().iter("node"):
            if node.get("pkg") == "poam_ros":
                assert node.get("exec") in EXECUTABLES, f"{path.name}: {node.get('exec')}"
    for name in node_executables():
        assert os.readlink(REPO / "nodes" / name) == "node"
    assert os.access(REPO / "nodes" / "node", os.X_OK)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package installed as colcon's ament_python build does (setup.py build, then
    install into a prefix; setup.cfg sends scripts to lib/poam_ros), as pip does (a wheel),
    and as ``pip install -e`` does, each into a prefix of its own: {how: prefix}."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"  # a copy: the builds leave build/ and egg-info behind
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "install", "log", "*.egg-info", "__pycache__", "results", "bags",
        ".venv", ".pytest_cache", ".ruff_cache", ".benchmarks"))
    prefixes = {how: root / how for how in ("colcon", "pip", "editable")}
    environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    commands = {
        "colcon": [sys.executable, "setup.py", "-q", "build", "--build-base",
                   str(root / "build"), "install", "--prefix", str(prefixes["colcon"]),
                   "--record", str(root / "record.txt"), "--single-version-externally-managed"],
        "pip": [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                "--no-build-isolation", "--no-index", "--disable-pip-version-check",
                "--prefix", str(prefixes["pip"]), "."],
    }
    commands["editable"] = [*commands["pip"][:-2], str(prefixes["editable"]), "-e", "."]
    for name, command in commands.items():
        done = subprocess.run(command, cwd=source, env=environment, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
    return prefixes


@pytest.mark.parametrize("how", ["colcon", "pip", "editable"])
def test_the_installed_executables_live_in_lib_poam_ros_only(installed, how):
    """An editable install has no data files (nor the share/ folder): `poam-ros` only."""
    prefix = installed[how]
    lib = prefix / "lib" / "poam_ros"
    for name in EXECUTABLES if how != "editable" else ():
        assert (lib / name).is_file() and os.access(lib / name, os.X_OK), f"{how}: no {name}"
        assert (lib / name).read_text() == (REPO / "nodes" / "node").read_text()
    on_path = sorted(path.name for path in (prefix / "bin").iterdir()) \
        if (prefix / "bin").is_dir() else []
    expected = [] if how == "colcon" else ["poam-ros"]  # colcon: lib/poam_ros/poam-ros
    assert on_path == expected, f"{how} puts {on_path} on $PATH"


def test_an_installed_executable_checks_its_dependencies_then_runs_its_node(installed):
    """The pip install's launcher, run by its file name with a bad parameter: the simulated
    AUV's one-line refusal shows that it ran that node's module. With gpytorch missing (an
    entry of None in sys.modules: not importable), it says so in one line and starts
    nothing."""
    executable = installed["pip"] / "lib" / "poam_ros" / "simulated_auv"
    site = next(installed["pip"].glob("lib/python*/site-packages"))
    environment = dict(os.environ, PYTHONPATH=str(site), ROS_DOMAIN_ID="232",
                       ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    runs = {}
    for case, hide in (("bad parameter", ""), ("no gpytorch", "sys.modules['gpytorch'] = None; ")):
        script = (f"import runpy, sys; {hide}sys.argv = [{str(executable)!r}, '--ros-args', "
                  f"'-p', 'time_scale:=-1.0']; runpy.run_path(sys.argv[0], run_name='__main__')")
        runs[case] = subprocess.run([sys.executable, "-c", script], env=environment, cwd="/",
                                    capture_output=True, text=True, timeout=120)
    for case, done in runs.items():
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, f"{case}: {done.stderr}"
    assert "[simulated_auv]" in runs["bad parameter"].stderr
    assert "time_scale" in runs["bad parameter"].stderr
    assert runs["no gpytorch"].stderr.strip() == (
        "poam_ros: Python package 'gpytorch' is missing; install it with: "
        "python3 -m pip install 'gpytorch>=1.11'")
