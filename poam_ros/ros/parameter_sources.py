"""Every node's start-up check of its parameter sources (:mod:`poam_ros.params.sources`): a
parameter file that gives it nothing is said in one line, and a value its file lists in
``required`` that no source sets stops the start, one line each.

rclpy keeps no copy of the arguments it was initialised with (nor rcl's list of parameter
files), so the files are read off the process's command line, ``sys.argv``, which is what
``ros2 run``, ``ros2 launch`` and ``poam-ros sim`` hand the node's process and what
:func:`poam_ros.ros.run.run_node` initialises rclpy with. Whether a value is set is rcl's own
answer: the name declared without a type takes the value of the node's overrides (every
file, ``-p``, a launch file's parameters, ``parameter_overrides``), or none.
"""

from __future__ import annotations

import sys
from typing import Sequence

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

from poam_ros.params import ConfigError
from poam_ros.params.sources import (
    RequiredValues,
    file_report,
    params_file_arguments,
    unset_error,
    unset_line,
)
from poam_ros.ros.parameters import declare_config, read_config


def check_parameter_sources(node: Node, argv: Sequence[str] | None = None) -> None:
    """Report each parameter file of ``argv`` (default ``sys.argv``) that gives ``node``
    nothing, then raise :class:`ConfigError` if a value of its ``required`` list is unset,
    after one error line per such value. Call it before the node declares its configs."""
    logger = node.get_logger()
    fqn = node.get_fully_qualified_name()
    for path in params_file_arguments(sys.argv if argv is None else argv):
        try:
            report = file_report(path, fqn)
        except (ConfigError, OSError) as error:
            logger.warning(f"cannot check parameter file {path}: {error}")
            continue
        # One call site per severity: rclpy refuses a severity change at one call site.
        if report is not None and report.warning:
            logger.warning(report.text)
        elif report is not None:
            logger.info(report.text)
    requirements = (read_config(node, RequiredValues) if node.has_parameter("required")
                    else declare_config(node, RequiredValues, read_only=["required"]))
    missing = requirements.unset(lambda name: _given(node, name))
    for name in missing:
        logger.error(unset_line(name))
    if missing:
        raise unset_error(missing)


def _given(node: Node, name: str) -> bool:
    """Whether a source gives ``node`` a value for ``name``: declared without a type it takes
    the overrides' value or none, and is undeclared again for the node's own declaration. A
    name declared already (a configure after a cleanup) passed this check when declared."""
    if node.has_parameter(name):
        return True
    node.declare_parameter(name, None, ParameterDescriptor(dynamic_typing=True))
    try:
        return node.get_parameter(name).type_ != Parameter.Type.NOT_SET
    finally:
        node.undeclare_parameter(name)
