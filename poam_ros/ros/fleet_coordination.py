"""The planner node's part in a fleet: its teammates' announced plans in, its own out.

The core is :class:`~poam_ros.planners.coordination.Coordinator`; this adapter declares its
parameters (``fleet.*``: :class:`FleetMemberConfig`; ``coordination.*``:
:class:`CoordinationConfig`, all read-only), listens to each teammate's announcement topic
(``fleet.teammates``) and announces this vehicle's own plan on ``fleet/plan`` when a plan is
issued and every ``coordination.announce_period`` s, so that a teammate can tell a quiet
vehicle from a lost one (``coordination.plan_timeout``).

An announcement is a ``nav_msgs/Path`` (latched) in ``map_frame``, stamped when sent: its
first pose is the vehicle's position, the others its remaining waypoints (none: it holds).
One in another frame, empty or not finite is dropped (``dropped.announcement`` is not in
the planner's diagnostics schema: it is counted in :attr:`FleetCoordination.dropped` and
warned about). Topic names are the teammates' (``/auv1/fleet/plan``); the fleet's launch
file gives each vehicle its teammates'.

With ``coordination.enabled`` false nothing is subscribed or announced and the planner plans
alone, as a single vehicle.
"""

from __future__ import annotations

import threading
from functools import partial

import numpy as np
from nav_msgs.msg import Path
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.params import ConfigError
from poam_ros.planners import Planner
from poam_ros.planners.coordination import (
    ConditionedStd,
    CoordinationConfig,
    Coordinator,
    FleetMemberConfig,
)
from poam_ros.planners.progress import remaining_plan
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.parameters import declare_config

ANNOUNCEMENTS = "fleet/plan"


class FleetCoordination:
    """``node``'s coordination with its teammates, planning with ``planner`` in ``frame``.

    Made at configure (parameters, the announcement publisher); :meth:`activate` subscribes
    and starts the announcements. The node reports its position (:meth:`observe`) and each
    plan it issues (:meth:`issued`), plans through :meth:`plan` and flies :meth:`pilot`.
    """

    def __init__(self, node: ManagedNode, planner: Planner, frame: str) -> None:
        self._node, self._frame = node, frame
        member = declare_config(node, FleetMemberConfig, "fleet",
                                read_only=[spec.name for spec in FleetMemberConfig.specs()])
        config = declare_config(node, CoordinationConfig, "coordination",
                                read_only=[spec.name for spec in CoordinationConfig.specs()])
        own = node.resolve_topic_name(ANNOUNCEMENTS)
        if any(node.resolve_topic_name(topic) == own for topic in member.teammates):
            raise ConfigError(f"fleet.teammates names this vehicle's own announcements {own}")
        self.coordinator = Coordinator(config, member, planner)
        self._lock = threading.Lock()
        self._position: np.ndarray | None = None
        self._waypoints = np.empty((0, 2))
        self.dropped = 0
        self._publisher = node.create_lifecycle_publisher(Path, ANNOUNCEMENTS, qos.LATCHED)

    @property
    def enabled(self) -> bool:
        return self.coordinator.config.enabled

    def activate(self) -> None:
        """Listen to the teammates and announce periodically (the node's activate hook: the
        base destroys both at deactivate)."""
        if not self.enabled:
            return
        for topic in self.coordinator.member.teammates:
            self._node.create_subscription(Path, topic, partial(self._on_announcement, topic),
                                           qos.LATCHED)
        self._node.create_timer(self.coordinator.config.announce_period, self.announce)

    def pilot(self, pilot: np.ndarray) -> np.ndarray:
        """This vehicle's share of the pilot survey (W, 2) [m]."""
        return self.coordinator.pilot(pilot)

    def observe(self, position: np.ndarray) -> None:
        """The vehicle's position (2,) [m], from its odometry."""
        with self._lock:
            self._position = np.array(position[:2], dtype=float)

    def issued(self, waypoints: np.ndarray) -> None:
        """A plan (K, 2) [m] the node issued (K = 0: it holds); announced at once."""
        with self._lock:
            self._waypoints = np.asarray(waypoints, dtype=float).reshape(-1, 2)
        self.announce()

    def plan(self, position: np.ndarray, predict_std: ConditionedStd,
             heading: float | None) -> np.ndarray:
        """The planner's next waypoints given the teammates as heard now (the lock is held
        only to read them: the query's wait runs without it)."""
        with self._lock:
            view = self.coordinator.view(self._now())
        return self.coordinator.plan(position, predict_std, heading, view)

    def announce(self) -> None:
        """Send this vehicle's position and what is left of its plan (nothing before the
        first odometry, or when not coordinating)."""
        with self._lock:
            if not self.enabled or self._position is None:
                return
            position, waypoints = self._position, self._waypoints
        if len(waypoints):
            waypoints = remaining_plan(waypoints, position)
        header = Header(stamp=self._node.get_clock().now().to_msg(), frame_id=self._frame)
        self._publisher.publish(cv.path_from_waypoints(header, np.vstack([position,
                                                                          waypoints])))

    def _on_announcement(self, topic: str, message: Path) -> None:
        points = msg.path_to_waypoints(message)
        if message.header.frame_id != self._frame or not len(points) or \
                not np.isfinite(points).all():
            with self._lock:
                self.dropped += 1
            self._node.warn_throttled("announcement", f"dropped an announcement on {topic}: "
                                                      f"empty, not finite or in frame "
                                                      f"'{message.header.frame_id}', not "
                                                      f"'{self._frame}'")
            return
        with self._lock:
            self.coordinator.teammates.update(topic, points[0], points[1:],
                                              msg.time_to_seconds(message.header.stamp))

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds / 1e9
