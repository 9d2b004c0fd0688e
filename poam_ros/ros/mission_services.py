"""The planner's mission control over ROS: its services, ``mission/state`` and the sample count.

:class:`MissionServices`, owned by the planner node, holds the mission's
:class:`~poam_ros.planners.mission_control.MissionController` and gives it its ROS
interface:

| name              | type                                  | what                              |
|-------------------|---------------------------------------|-----------------------------------|
| ~/start           | std_srvs/Trigger                      | idle -> pilot: the pilot survey;  |
|                   |                                       | paused -> resume where it was     |
| ~/pause           | std_srvs/SetBool                      | true: pause (empty plan); false:  |
|                   |                                       | resume where it was               |
| ~/abort           | std_srvs/Trigger                      | any state -> aborted (empty plan) |
| ~/return_home     | std_srvs/Trigger                      | -> returning: a plan to home      |
| mission/state     | diagnostic_msgs/DiagnosticStatus, out | latched (TL, 1): message = state, |
|                   |                                       | values = MissionStatus            |
| /diagnostics      | diagnostic_msgs/DiagnosticArray, in   | the mapper's sample count (1,000  |
|                   |                                       | deep: every node of a fleet       |
|                   |                                       | publishes there, and a lost count |
|                   |                                       | would keep its map waiting)       |
| samples           | sensor_msgs/PointCloud2, in           | ``samples_counted: own`` only:    |
|                   |                                       | the mapper's input, for the own   |
|                   |                                       | soundings of each map             |
| vehicle/state     | diagnostic_msgs/DiagnosticStatus, in  | latched (TL, 1): the vehicle      |
|                   |                                       | bridge's BridgeStatus             |

A refused request answers ``success: false`` and why (``the mission is done, not idle``).
The sample budget reads the mapper's count of each map from its status (``<mapper_name>:
mapping``, :class:`~poam_ros.diagnostics.MapperStatus`, matched by ``map_stamp``): a map counts
for the mission once both have come, whatever order DDS delivers them in. With
``mission.samples_counted: own`` (a vehicle of a distributed fleet) the budget counts the
map's own soundings instead (:class:`~poam_ros.planners.mission_control.OwnSoundings`): the
batches on ``samples``, the mapper's input, that are stamped (its own ingest's; a fleet link's
are unstamped) up to the map's stamp. The planner reads them from the batches rather than from
the ingest's or the link's status: those come once a second of wall time and tell no map,
while a batch's stamp says which maps hold it.

``vehicle/state`` is the vehicle bridge's report (:mod:`poam_ros.ros.vehicle_bridge_node`): a
bridge that had the autopilot's heartbeat and lost it (``link_up`` false with a
``heartbeat_age``) pauses a moving mission with the reason ``vehicle link lost``; the link
coming back resumes nothing, ``~/start`` does (refused while the link is still lost). With no
bridge on the graph nothing comes and nothing changes.

Every method runs under the node's ``lock`` (a reentrant ``threading.Condition``); the node's
``on_change(previous state)`` turns a change into a plan (the pilot, an empty plan, the leg
home, the rest of the plan on resume) and ``on_map(stamp)`` takes a counted map.
"""

from __future__ import annotations

import threading
from typing import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import SetBool, Trigger

from poam_ros import messages as msg
from poam_ros.diagnostics import BridgeStatus, DiagnosticsError, MapperStatus, status_name
from poam_ros.planners.mission_control import (
    ABORTED,
    OWN,
    MissionControlConfig,
    MissionController,
    OwnSoundings,
)
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.node_status import mapper_status_node

KEPT = 16  # maps waiting for their count, and counts waiting for their map


class MissionServices:
    """The mission's controller, services and state topic on ``node``; see the module
    docstring."""

    def __init__(self, node: Node, config: MissionControlConfig, lock: threading.Condition,
                 mapper_name: str, on_change: Callable[[str], None],
                 on_map: Callable[[int], None]) -> None:
        self.control = MissionController(config)
        self._node, self._lock = node, lock
        self._on_change, self._on_map = on_change, on_map
        self._mapper_status = status_name(mapper_status_node(node, mapper_name), MapperStatus)
        self._counts: dict[int, int] = {}  # map stamp (ns) -> the mapper's sample count
        self._pending: dict[int, float] = {}  # map stamp waiting for its count -> its std
        self._newest_map = 0  # ns, the stamp of the newest map passed on to the planner
        self._state_pub = node.create_publisher(DiagnosticStatus, "mission/state", qos.LATCHED)
        node.create_service(Trigger, "~/start", self._trigger(self.control.start))
        node.create_service(SetBool, "~/pause", self._on_pause)
        node.create_service(Trigger, "~/abort", self._trigger(self.control.abort))
        node.create_service(Trigger, "~/return_home", self._trigger(self.control.return_home))
        self._own = OwnSoundings() if config.samples_counted == OWN else None
        if config.max_samples:
            node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                     qos.DIAGNOSTICS_ALL)
        if config.max_samples and self._own is not None:
            node.create_subscription(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        node.create_subscription(DiagnosticStatus, "vehicle/state", self._on_vehicle_state,
                                 qos.LATCHED)
        self.publish()

    # ------------------------------------------------------------------ requests
    def _trigger(self, request: Callable[[], str | None]):
        def serve(_, response):
            response.success, response.message = self._request(request)
            return response
        return serve

    def _on_pause(self, request, response):
        response.success, response.message = self._request(
            lambda: self.control.pause(request.data))
        return response

    def _request(self, request: Callable[[], str | None]) -> tuple[bool, str]:
        with self._lock:
            previous = self.control.state
            refused = request()
            if refused is not None:
                self._node.get_logger().warning(f"mission request refused: {refused}")
                return False, refused
            self._changed(previous)
            return True, f"{self.control.state}: {self.control.reason}"

    def start(self) -> None:
        """Start at once (``autostart_mission``)."""
        self._request(self.control.start)

    # -------------------------------------------------------------- observations
    def advance(self, step: Callable[[], bool]) -> None:
        """Apply an observation (a :class:`MissionController` method that returns whether
        the state changed: ``observe_pose``, ``planning_started``, ``home_reached``) and
        announce a change; call with the lock."""
        previous = self.control.state
        if step():
            self._changed(previous)

    def map_received(self, stamp: int, std: float) -> None:
        """A map stamped ``stamp`` [ns] with the std statistic ``std`` [m] (NaN: none); it
        counts once the mapper's count for it is known. Call with the lock."""
        if not self.control.config.max_samples:
            self._counted(stamp, self.control.samples, std)
        elif stamp in self._counts:
            self._counted(stamp, self._counts.pop(stamp), std)
        else:
            self._pending[stamp] = std
            _keep_newest(self._pending)
            if len(self._pending) > 1:  # the count of an earlier map has not come
                self._node.get_logger().warning(
                    f"{len(self._pending)} maps wait for the mapper's sample count: no status "
                    f"{self._mapper_status!r} on /diagnostics for them (mapper_name?)",
                    throttle_duration_sec=10.0)

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name != self._mapper_status:
                continue
            try:
                record = msg.status_record(status)
            except DiagnosticsError as error:
                self._node.get_logger().warning(f"unreadable mapper status: {error}",
                                                throttle_duration_sec=10.0)
                continue
            with self._lock:
                stamp = record.map_stamp
                if stamp in self._pending:
                    self._counted(stamp, record.samples, self._pending.pop(stamp))
                else:
                    self._counts[stamp] = record.samples
                    _keep_newest(self._counts)

    def _on_samples(self, message: PointCloud2) -> None:
        with self._lock:
            self._own.add(msg.time_to_nanoseconds(message.header.stamp),
                          message.width * message.height)

    def _on_vehicle_state(self, status: DiagnosticStatus) -> None:
        try:
            record = msg.status_record(status)
        except DiagnosticsError as error:
            record = error
        if not isinstance(record, BridgeStatus):
            self._node.get_logger().warning(
                f"vehicle/state is not a vehicle bridge's status ({status.name!r}): {record}",
                throttle_duration_sec=10.0)
            return
        lost = not record.link_up and record.heartbeat_age is not None
        with self._lock:
            self.advance(lambda: self.control.observe_vehicle_link(lost))

    def _counted(self, stamp: int, samples: int, std: float) -> None:
        own = None if self._own is None else self._own.until(stamp)
        self.advance(lambda: self.control.observe_map(samples, std, own))
        if msg.not_newer(stamp, self._newest_map):
            return  # a map of the same samples again (idle training moved it, a new grid)
        self._newest_map = stamp
        self._on_map(stamp)

    # ------------------------------------------------------------------- output
    def _changed(self, previous: str) -> None:
        control = self.control
        text = f"mission {previous} -> {control.state}: {control.reason}"
        # rclpy fixes a call site's severity at its first call: one site per severity.
        if control.state == ABORTED:
            self._node.get_logger().warning(text)
        else:
            self._node.get_logger().info(text)
        self.publish()
        self._on_change(previous)

    def publish(self) -> None:
        """``mission/state`` as it stands (on every change and every diagnostics period)."""
        with self._lock:
            level = DiagnosticStatus.WARN if self.control.state == ABORTED else \
                DiagnosticStatus.OK
            self._state_pub.publish(cv.diagnostic_status(
                self._node.get_name(), level, self.control.state, self.control.status()))


def _keep_newest(by_stamp: dict) -> None:
    """Drop all but the :data:`KEPT` newest entries of a dict keyed by stamp."""
    for old in sorted(by_stamp)[:-KEPT]:
        del by_stamp[old]
