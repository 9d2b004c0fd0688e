"""The monitor of ``poam-ros sim --robots N``: the fleet's one map scored, each vehicle watched.

A :class:`~poam_ros.ros.mission_monitor.MissionMonitor` in the central mapper's namespace
(``/fleet``): it scores the fleet's map from ``/fleet/samples``, ``/fleet/map`` and
``/fleet/map/evaluation`` as the single vehicle's monitor scores its map, and hears every
vehicle's planner on ``/<ns>/mission/state`` and ``/<ns>/goal``.

The fleet's mission is over when every vehicle's is (``done``, or ``aborted`` if any was:
:mod:`~poam_ros.planners.fleet_state`) and the map holding the most samples any planner
counted is scored. Per vehicle it keeps the
mission state, the goals and the ingest's counts (its ``<ns>/sensor_ingest: samples``
status on ``/diagnostics``), and tells each samples batch's vehicle by its publisher (the
DDS writer's gid, matched to the ingest's namespace): every record carries, in ``extra``,
``samples_<vehicle>``, the samples of each vehicle that its map holds.
"""

from __future__ import annotations

from functools import partial

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped

from poam_ros import messages as msg
from poam_ros.diagnostics import DiagnosticsError, IngestStatus, MissionStatus, decode, status_name
from poam_ros.planners.fleet_state import fleet_mission, fleet_state
from poam_ros.ros import qos
from poam_ros.ros.mission_monitor import MissionMonitor

FLEET_NAMESPACE = "/fleet"


class FleetMonitor(MissionMonitor):
    """Scores the fleet's map and follows the vehicles of ``namespaces`` (``/auv0``, ...);
    the rest as :class:`MissionMonitor` (``on_state(namespace, state, reason)`` sees every
    vehicle's change of mission state)."""

    def __init__(self, terrain, namespaces: list[str], on_epoch=None, fields=None,
                 on_state=None, **kwargs) -> None:
        self.namespaces, self.on_state = list(namespaces), on_state
        self._on_fleet_epoch = on_epoch
        super().__init__(terrain, self._with_vehicles, fields=fields, namespace=FLEET_NAMESPACE,
                         **kwargs)

    def _start(self, node_name: str) -> None:
        super()._start(node_name)
        self.vehicle_states = dict.fromkeys(self.namespaces, "")
        self.vehicle_missions: dict[str, MissionStatus | None] = dict.fromkeys(self.namespaces)
        self.vehicle_goals: dict[str, list[tuple[float, float]]] = {
            namespace: [] for namespace in self.namespaces}
        self._goal_subscriptions = {}
        self._samples_writers: dict[bytes, str] = {}  # samples writer's gid -> ingest namespace
        self._vehicle_batches: list[tuple[int, str, int]] = []  # stamp ns, vehicle, samples
        for namespace in self.namespaces:
            self.create_subscription(DiagnosticStatus, f"{namespace}/mission/state",
                                     partial(self._on_vehicle_mission, namespace), qos.LATCHED)
            self._goal_subscriptions[namespace] = self.create_subscription(
                PoseStamped, f"{namespace}/goal", partial(self._on_vehicle_goal, namespace),
                qos.LATCHED_HISTORY)

    def missing_sources(self) -> list[str]:
        """The central mapper, and each vehicle's ingest and planner, not heard yet."""
        missing = [node for node in super().missing_sources() if node == "mapper"]
        ingests = {info.node_namespace for info in self.get_publishers_info_by_topic(
            f"{FLEET_NAMESPACE}/samples")}
        for namespace in self.namespaces:
            if namespace not in ingests:
                missing.append(f"{namespace}/sensor_ingest")
            if self._goal_subscriptions[namespace].get_publisher_count() == 0:
                missing.append(f"{namespace}/planner")
        return missing

    def vehicle_ingest(self, namespace: str) -> IngestStatus | None:
        """The newest status of the vehicle's ingest, None before one came."""
        return self._status_records.get(status_name(f"{namespace.strip('/')}/sensor_ingest",
                                                    IngestStatus))

    def counts_current(self) -> bool:
        """Whether the ingests' diagnostics count every sample received here."""
        ingests = [self.vehicle_ingest(namespace) for namespace in self.namespaces]
        return None not in ingests and sum(ingest.samples_published for ingest in ingests) \
            >= sum(len(z) for _, _, z in self._batches)

    def _on_samples(self, message, info) -> None:
        """A batch, attributed to the vehicle whose ingest published it, then scored."""
        gid = bytes(info["publisher_gid"]["data"])
        if gid not in self._samples_writers:
            self._samples_writers.update((bytes(endpoint.endpoint_gid), endpoint.node_namespace)
                                    for endpoint in self.get_publishers_info_by_topic(
                                        f"{FLEET_NAMESPACE}/samples"))
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        self._vehicle_batches.append((stamp, self._samples_writers.get(gid, "unknown"),
                                      message.width * message.height))
        super()._on_samples(message)

    def vehicle_samples(self, until: int) -> dict[str, int]:
        """Samples per vehicle in the batches stamped up to ``until`` (ns)."""
        counts = dict.fromkeys(self.namespaces, 0)
        for stamp, namespace, count in self._vehicle_batches:
            if stamp <= until:
                counts[namespace] = counts.get(namespace, 0) + count
        return counts

    def _with_vehicles(self, record) -> None:
        record.extra.update({f"samples_{namespace.strip('/')}": count for namespace, count
                             in self.vehicle_samples(self.record_stamps[-1]).items()})
        if self._on_fleet_epoch is not None:
            self._on_fleet_epoch(record)

    def _on_vehicle_goal(self, namespace: str, message: PoseStamped) -> None:
        position = message.pose.position
        self.vehicle_goals[namespace].append((position.x, position.y))
        self.goals.append((position.x, position.y))

    def _on_vehicle_mission(self, namespace: str, message: DiagnosticStatus) -> None:
        try:
            mission = decode(MissionStatus, ((kv.key, kv.value) for kv in message.values))
        except DiagnosticsError as error:
            self.get_logger().warning(f"unreadable mission state of {namespace}: {error}")
            return
        changed = message.message != self.vehicle_states[namespace]
        self.vehicle_states[namespace], self.vehicle_missions[namespace] = \
            message.message, mission
        if changed and self.on_state is not None:
            self.on_state(namespace, message.message, mission.reason)
        self._fleet_state()

    def _fleet_state(self) -> None:
        """The fleet's state and mission (:mod:`poam_ros.planners.fleet_state`)."""
        self.mission_state = fleet_state(self.vehicle_states)
        self.mission = fleet_mission(self.vehicle_missions)
        self._score_ready()
