"""The Python packages poam_ros imports, how a ROS computer gets each, and a check at start.

On a ROS 2 computer ``rosdep install --from-paths src --ignore-src -y`` installs what
package.xml declares; a package with no rosdep key is a documented ``pip`` step instead, and
the node executables and ``poam-ros`` check at start that every one is importable, so that a
missing one costs one line naming it and the command that installs it, not a traceback from
deep inside an import. :data:`DEPENDENCIES` is the one list: tests/test_dependencies.py holds
package.xml, setup.py and every import under poam_ros/ to it.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import NamedTuple


class Dependency(NamedTuple):
    """How a module comes: its rosdep key (None: there is none, so pip), and the pip
    requirement (None: a ROS package, from the ROS installation only)."""

    key: str | None
    pip: str | None


ROSDEP = "rosdep install --from-paths src --ignore-src -y"
#: top-level module -> how it is installed. A key that installs the module as a dependency of
#: another package says so.
DEPENDENCIES = {
    "numpy": Dependency("python3-numpy", "numpy>=1.24"),
    "scipy": Dependency("python3-scipy", "scipy>=1.10"),
    "torch": Dependency("python3-torch", "torch>=2.1"),
    "gpytorch": Dependency(None, "gpytorch>=1.11"),  # no rosdep key
    "matplotlib": Dependency("python3-matplotlib", "matplotlib>=3.7"),
    "shapely": Dependency("python3-shapely", "shapely>=2.0"),
    "PIL": Dependency("python3-pil", "pillow>=9.0"),
    "yaml": Dependency("python3-yaml", "pyyaml>=6.0"),
    "tqdm": Dependency("python3-tqdm", "tqdm>=4.60"),
    "rosbags": Dependency("python3-rosbags-pip", "rosbags>=0.11.9,<0.12"),
    "mcap": Dependency("mcap-ros2-support", "mcap>=1.2"),  # the key's package requires mcap
    "zstandard": Dependency("mcap-ros2-support", "zstandard>=0.20"),  # mcap requires it
    "pyproj": Dependency("python3-pyproj", "pyproj>=3.4"),
    "rasterio": Dependency("python3-rasterio", "rasterio>=1.4"),
    "affine": Dependency("python3-rasterio", None),  # rasterio requires it
    **{name: Dependency(name, None) for name in (
        "rclpy", "rcl_interfaces", "builtin_interfaces", "std_msgs", "std_srvs", "sensor_msgs",
        "geometry_msgs", "nav_msgs", "diagnostic_msgs", "rosgraph_msgs", "lifecycle_msgs")},
}


class Optional(NamedTuple):
    """A module only a feature needs: the setup.py extra that installs it, and the pip
    requirement (no rosdep key: pip, on a ROS computer too)."""

    extra: str
    pip: str


#: top-level module -> the extra of the feature that imports it; not checked at start: the
#: feature says what is missing when it is used (:func:`import_optional`)
OPTIONAL = {
    "foxglove": Optional("view", "foxglove-sdk>=0.30,<0.31"),  # the live view
    "websockets": Optional("view", "websockets>=13"),  # bench view's client of the view
    "ray": Optional("cluster", "ray[client]>=2.9"),  # bench sweep --cluster ray
    "pymavlink": Optional("mavlink", "pymavlink>=2.4.40"),  # the vehicle bridge (MAVLink)
}


class MissingDependency(ImportError):
    """An optional module is not installed; the message names it and its install command."""


def import_optional(module: str, feature: str):
    """``module`` (one of :data:`OPTIONAL`), imported; :class:`MissingDependency` naming
    ``feature`` and the command that installs the module when it cannot be."""
    try:
        return importlib.import_module(module)
    except ImportError:
        dependency = OPTIONAL[module]
        raise MissingDependency(
            f"{feature} needs the Python package {module!r}: python3 -m pip install "
            f"'{dependency.pip}' (or the package's extra: pip install '.[{dependency.extra}]')"
        ) from None


def install_command(module: str) -> str:
    """The command that installs ``module`` (one of :data:`DEPENDENCIES`)."""
    dependency = DEPENDENCIES[module]
    if dependency.key is None:
        return f"python3 -m pip install '{dependency.pip}'"
    return f"{ROSDEP} (rosdep key {dependency.key})"


def missing() -> list[str]:
    """One line for each module of :data:`DEPENDENCIES` that cannot be imported here."""
    return [f"poam_ros: Python package {module!r} is missing; install it with: "
            f"{install_command(module)}"
            for module in DEPENDENCIES if importlib.util.find_spec(module) is None]


def require() -> None:
    """Exit with status 1 and :func:`missing`'s lines on stderr when a module is missing."""
    lines = missing()
    if lines:
        print("\n".join(lines), file=sys.stderr)
        raise SystemExit(1)
