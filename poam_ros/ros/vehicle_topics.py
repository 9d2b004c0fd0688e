"""One simulated vehicle's sensor topics on a node: its events as messages, whether the
nodes that must hear it subscribe yet, and how far ahead of them the clock may run.

:class:`VehicleTopics` publishes a :class:`~poam_ros.sim.simulated_auv.SimulatedAuv`'s
events under a prefix (``odom``, ``sonar/range``, ``sonar/swath``, ``temperature``,
``seabed_class``; the
prefix ``/auv1/`` puts them under ``/auv1``), each stamped with its simulated time, so that
the fleet simulator publishes every vehicle as the single vehicle's node publishes its own.
A vehicle held in lockstep repeats its last odometry (:meth:`VehicleTopics.repeat_odometry`),
so that whoever waits for its arrival hears it even if that message was lost. The nodes of
``hold_for`` that report their progress (:mod:`poam_ros.ros.progress`) pace the lockstep
clock (:meth:`VehicleTopics.pace`, :mod:`poam_ros.sim.pacing`).
"""

from __future__ import annotations

import time
from functools import partial

from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, Range, Temperature
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.progress import progress_stamps, progress_topic
from poam_ros.sim.pacing import ClockPacing
from poam_ros.sim.seabed_class import CHANNEL as SEABED_CLASS
from poam_ros.sim.simulated_auv import Odom, Ping, Reading, SimulatedAuvConfig, Sounding
from poam_ros.sim.sonar import SonarConfig

REPEAT_PERIOD = 1.0  # s, wall: a held vehicle's last odometry goes out again this often


class VehicleTopics:
    """The sensor publishers of one vehicle on ``node``, topics under ``prefix`` ("" or
    ``/auv1/``); ``swath``, ``temperature`` and ``seabed`` say whether it has those sensors,
    ``odom`` whether its odometry is published here (not when a MAVLink bridge publishes it)."""

    def __init__(self, node: Node, prefix: str, config: SimulatedAuvConfig,
                 sonar: SonarConfig, temperature_std: float | None, swath: bool,
                 seabed: bool = False, odom: bool = True) -> None:
        self._node, self.config, self._sonar = node, config, sonar
        self._temperature_variance = None if temperature_std is None else temperature_std ** 2
        sensors = qos.simulated_sensors(config.lockstep, config.max_backlog)
        self.odom = (node.create_publisher(Odometry, f"{prefix}odom", sensors)
                     if odom else None)
        self.range = node.create_publisher(Range, f"{prefix}sonar/range", sensors)
        self.swath = (node.create_publisher(PointCloud2, f"{prefix}sonar/swath", sensors)
                      if swath else None)
        self.temperature = (node.create_publisher(Temperature, f"{prefix}temperature", sensors)
                            if temperature_std is not None else None)
        self.seabed = (node.create_publisher(PointCloud2, f"{prefix}{SEABED_CLASS}", sensors)
                       if seabed else None)
        self._complete: dict[str, int] = {}  # topic -> matched subscribers when found complete
        self._last_odometry: Odometry | None = None
        self._last_odometry_wall = -float("inf")  # s, monotonic: when it last went out
        self.pacing = ClockPacing(config.max_backlog)
        self._progress = {name: node.create_subscription(
            DiagnosticStatus, progress_topic(prefix, name), partial(self._on_progress, name),
            qos.LATCHED) for name in config.hold_for}

    def publish(self, event) -> None:
        """``event`` as its message, stamped with its time ``event.t``."""
        config = self.config
        stamp = cv.seconds_to_time(event.t)
        if isinstance(event, Odom):
            if self.odom is None:
                return
            header = Header(frame_id=config.world_frame, stamp=stamp)
            self._last_odometry = cv.odometry_from_state(
                header, config.base_frame, (event.x, event.y), event.yaw, event.speed,
                event.yaw_rate, z=event.z, roll=event.roll, pitch=event.pitch)
            publisher, message = self.odom, self._last_odometry
            self._last_odometry_wall = time.monotonic()
        elif isinstance(event, Sounding):
            sonar = self._sonar
            publisher, message = self.range, cv.range_from_reading(
                Header(frame_id=config.sonar_frame, stamp=stamp), event.range,
                min_range=sonar.min_range, max_range=sonar.max_range, field_of_view=0.0,
                variance=sonar.noise_std ** 2)
        elif isinstance(event, Ping) and self.swath is not None:
            swath = event.swath
            publisher, message = self.swath, cv.points_to_cloud(
                Header(frame_id=config.sonar_frame, stamp=stamp),
                swath.points_sensor[swath.valid])
        elif isinstance(event, Reading) and event.channel == SEABED_CLASS:
            publisher, message = self.seabed, cv.channel_reading_cloud(
                Header(frame_id=config.base_frame, stamp=stamp), SEABED_CLASS, event.value)
        elif isinstance(event, Reading) and self.temperature is not None:
            publisher, message = self.temperature, cv.temperature_from_reading(
                Header(frame_id=config.base_frame, stamp=stamp), event.value,
                variance=self._temperature_variance)
        else:
            return
        publisher.publish(message)
        # the stamp as a consumer reads it back: whole nanoseconds, not event.t
        self.pacing.sent(publisher.topic_name, msg.time_to_seconds(stamp))

    def pace(self, max_steps: int, max_backlog: int, elapsed: float) -> int:
        """The steps (at most ``max_steps``) the clock may make before a reporting node of
        ``hold_for`` has ``max_backlog`` messages of a topic still to take
        (:meth:`ClockPacing.steps`); ``elapsed`` s of wall time since the last tick. A node
        whose progress publisher is gone holds nothing."""
        for name, subscription in self._progress.items():
            if subscription.get_publisher_count() == 0:
                self.pacing.forget(name)
        self.pacing.max_backlog = max_backlog
        return self.pacing.steps(max_steps, time.monotonic(), elapsed)

    def _on_progress(self, name: str, message: DiagnosticStatus) -> None:
        self.pacing.heard(name, progress_stamps(message), time.monotonic())

    def repeat_odometry(self, now: float) -> None:
        """Publish the last odometry again, unchanged (its stamp too), if it went out
        :data:`REPEAT_PERIOD` or more before wall time ``now`` [s, monotonic]; for a vehicle
        held in lockstep. Its clock stands, so nothing else would come: a lost arrival pose
        would keep the ingest and the planner waiting for ever. Both take a repeat they
        already have as nothing new."""
        if self._last_odometry is not None and now - self._last_odometry_wall >= REPEAT_PERIOD:
            self.odom.publish(self._last_odometry)
            self._last_odometry_wall = now

    def subscribers_missing(self, hold_for: list[str]) -> list[str]:
        """This vehicle's sensor topics that a node of ``hold_for`` does not subscribe to yet.

        A subscriber counts once the graph names its node and the publisher has matched
        every subscription the graph knows (names come with discovery, matching separately).
        A topic found complete is asked again only when its number of matched subscribers
        changes: a graph query costs about 80 µs, the count about 2 µs.
        """
        missing = []
        for publisher in (self.odom, self.range, self.swath, self.temperature, self.seabed):
            if publisher is None:
                continue
            topic, count = publisher.topic_name, publisher.get_subscription_count()
            if self._complete.get(topic) != count:
                self._complete.pop(topic, None)
                endpoints = self._node.get_subscriptions_info_by_topic(topic)
                names = [(e.node_namespace, e.node_name) for e in endpoints]
                if count < len(endpoints) or missing_nodes(hold_for, names):
                    missing.append(topic)
                else:
                    self._complete[topic] = count
        return missing


def missing_nodes(required: list[str], subscribers: list[tuple[str, str]]) -> list[str]:
    """The names in ``required`` that no (namespace, name) in ``subscribers`` matches: a plain
    name matches in any namespace, one starting with / only the fully qualified name."""
    plain = {name for _, name in subscribers}
    qualified = {f"{namespace.rstrip('/')}/{name}" for namespace, name in subscribers}
    return [n for n in required if n not in (qualified if n.startswith("/") else plain)]
