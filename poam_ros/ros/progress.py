"""A consumer's progress on ``~/progress``, which a lockstep simulator paces its clock by.

The message is a diagnostic_msgs/DiagnosticStatus (a standard type): ``name`` the consumer's
node, one value per sensor topic it subscribes to, key the fully resolved topic and value the
newest taken stamp in seconds (Python's ``repr`` of the float, exact; ``-inf`` before the
first). Reliable and transient local, so that a simulator that joins late hears the
last one. The rule is :mod:`poam_ros.sim.pacing`'s; a consumer whose publisher is gone (its
node deactivated or dead) no longer holds the clock.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.node import Node

from poam_ros import messages as msg
from poam_ros.ros import qos
from poam_ros.sim.pacing import TakenStamps

TOPIC = "progress"


def progress_topic(prefix: str, node_name: str) -> str:
    """The progress topic of ``node_name`` as seen under ``prefix`` ("" or ``/auv1/``): a name
    starting with / is fully qualified; a plain one lives under the prefix (the vehicle's
    namespace, or the simulator's own)."""
    return f"{node_name if node_name.startswith('/') else prefix + node_name}/{TOPIC}"


def progress_message(node_name: str, stamps: dict[str, float]) -> DiagnosticStatus:
    return DiagnosticStatus(level=DiagnosticStatus.OK, name=node_name, message="taken",
                            values=[KeyValue(key=topic, value=repr(float(stamp)))
                                    for topic, stamp in stamps.items()])


def progress_stamps(message: DiagnosticStatus) -> dict[str, float]:
    """Per topic, the stamp (s) of a :func:`progress_message`."""
    return {value.key: float(value.value) for value in message.values}


class ProgressReport:
    """``node``'s ``~/progress`` publisher and its :class:`TakenStamps` of the resolved
    ``topics`` it subscribes to; created before those subscriptions, when the node starts
    taking (an ingest's activation), and destroyed with what it created then. Reports go out
    from :meth:`poll` (the node's timer), the first at once."""

    def __init__(self, node: Node, topics: list[str]) -> None:
        self._name = node.get_fully_qualified_name()
        self._taken = TakenStamps(topics)
        self._publisher = node.create_publisher(DiagnosticStatus, f"~/{TOPIC}", qos.LATCHED)
        self._send(time.monotonic())

    def take(self, topic: str, header) -> None:
        """A message with ``header`` taken off resolved ``topic``."""
        self._taken.take(topic, msg.time_to_seconds(header.stamp))

    def poll(self) -> None:
        """Reports what moved since the last report, or a heartbeat."""
        now = time.monotonic()
        if self._taken.due(now):
            self._send(now)

    def _send(self, now: float) -> None:
        self._publisher.publish(progress_message(self._name, self._taken.report(now)))
