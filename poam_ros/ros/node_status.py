"""Every node's ``/diagnostics`` message, built one way: named by the node's fully qualified
name, stamped with the node's own clock, and carrying a ``hardware_id``.

A status is named ``<fully qualified name without the leading slash>: <kind>``
(:func:`poam_ros.diagnostics.status_name`): ``mapper: mapping`` in the root namespace,
``auv1/mapper: mapping`` under ``/auv1``, so that two robots on one domain publish apart. The
array is stamped with the node's clock (sim time under ``/clock``); the simulated AUV, the
clock source, passes its simulation time, which is what it publishes on ``/clock``. The
``hardware_id`` is the computer's host name, and for the mapper the torch device the model
runs on after it (``auv-pc/cuda:0``): what a fleet's operator needs to tell two machines'
reports apart.
"""

from __future__ import annotations

import socket

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node

from poam_ros.ros import conversions as cv

HOST = socket.gethostname()


def status_node_name(node: Node) -> str:
    """``auv1/mapper`` for ``/auv1/mapper``; ``mapper`` in the root namespace."""
    return node.get_fully_qualified_name().lstrip("/")


def node_status(node: Node, level, message: str, record, device: str = "") -> DiagnosticStatus:
    """``node``'s status of ``record`` (a :mod:`poam_ros.diagnostics` record)."""
    return cv.diagnostic_status(status_node_name(node), level, message, record,
                                hardware_id=f"{HOST}/{device}" if device else HOST)


def status_array(node: Node, statuses, stamp_seconds: float | None = None) -> DiagnosticArray:
    """``statuses`` stamped with ``node``'s clock (or ``stamp_seconds`` of the clock source)."""
    if stamp_seconds is not None:
        return cv.diagnostic_array(stamp_seconds, statuses)
    array = DiagnosticArray(status=list(statuses))
    array.header.stamp = node.get_clock().now().to_msg()
    return array


def mapper_status_node(node: Node, mapper_name: str) -> str:
    """The status name's node part of the mapper ``mapper_name`` as ``node`` resolves it: a
    relative name in ``node``'s namespace (``mapper`` from ``/auv1/planner`` is
    ``auv1/mapper``), an absolute one as it is."""
    if mapper_name.startswith("/"):
        return mapper_name.lstrip("/")
    namespace = node.get_namespace().strip("/")
    return f"{namespace}/{mapper_name}" if namespace else mapper_name
