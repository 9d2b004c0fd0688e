"""The node executables: their names (``ros2 run poam_ros <name>``, a launch file's ``exec``)
and the module each one runs.

A ROS computer runs a node as ``<prefix>/lib/poam_ros/<name>``, where ``ros2 run`` and
launch_ros look. The package installs the one launcher ``nodes/node`` there under each name
(setup.py's ``data_files``; ``nodes/<name>`` are links to it), never into a ``bin`` folder, so
neither colcon nor pip puts a bare ``mapper`` on ``$PATH``; ``poam-ros`` is the one console
script. The launcher checks the Python dependencies (:mod:`poam_ros.dependencies`), then runs
its name's module (:data:`poam_ros.launch_xml.EXECUTABLES`) as ``python3 -m <module>`` does,
which is how ``poam-ros sim`` starts them.
"""

from __future__ import annotations

import os
import runpy
import sys

from poam_ros.dependencies import MissingDependency
from poam_ros.launch_xml import EXECUTABLES  # the one table of executables


def main(argv0: str | None = None) -> None:
    """Run the node that the launcher's file name (``argv0``, default ``sys.argv[0]``)
    names, with the rest of ``sys.argv``: its ROS arguments."""
    name = os.path.basename(argv0 or sys.argv[0])
    if name not in EXECUTABLES:
        raise SystemExit(f"poam_ros: no node executable {name!r}; there are "
                         f"{', '.join(EXECUTABLES)}")
    try:
        runpy.run_module(EXECUTABLES[name], run_name="__main__", alter_sys=True)
    except MissingDependency as error:  # an optional feature's package: one line, no trace
        raise SystemExit(f"poam_ros: {error}") from None
