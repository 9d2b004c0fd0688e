"""The monitor of ``poam-ros sim --robots N``: the fleet's one map scored, each vehicle watched.

A :class:`~poam_ros.ros.mission_monitor.MissionMonitor` in the central mapper's namespace
(``/fleet``): it scores the fleet's map from ``/fleet/samples``, ``/fleet/map`` and
``/fleet/map/evaluation`` as the single vehicle's monitor scores its map, and hears every
vehicle's planner on ``/<ns>/mission/state`` and ``/<ns>/goal``.

The fleet's mission is over when every vehicle's is (``done``, or ``aborted`` if any was:
:mod:`~poam_ros.planners.fleet_state`) and the map holding the most samples any planner
counted is scored; a vehicle that left the fleet (``fleet_sim``'s status of it says so) is not
waited for while it is away. Per vehicle it keeps the
mission state, the goals and the ingest's counts (its ``<ns>/sensor_ingest: samples``
status on ``/diagnostics``), and tells each samples batch's vehicle by its publisher (the
DDS writer's gid, matched to the ingest's namespace): every record carries, in ``extra``,
``samples_<vehicle>``, the samples of each vehicle that its map holds.

With a distributed map (``central=False``) every vehicle's own map is scored: the monitor
itself sits in the first vehicle's namespace (``/auv0``: its map's records are the run's),
and a :class:`VehicleMapMonitor` in each other vehicle's. A record's ``extra`` then tells
the map's own samples (``samples_auv0``) from those its ``fleet_link`` relayed from the
teammates (``samples_link``). The fleet's mission is over when every vehicle's is and each
vehicle's map holding the samples its planner counted is scored.
"""

from __future__ import annotations

from functools import partial

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped

from poam_ros import messages as msg
from poam_ros.diagnostics import (
    DiagnosticsError,
    FleetLinkStatus,
    IngestStatus,
    MissionStatus,
    SimulatorStatus,
    decode,
    status_name,
)
from poam_ros.planners.fleet_state import (
    ENDED,
    LEFT,
    fleet_mission,
    fleet_state,
    own_counts_current,
)
from poam_ros.ros import qos
from poam_ros.ros.mission_monitor import MissionMonitor, scored

FLEET_NAMESPACE = "/fleet"
INGEST, LINK = "sensor_ingest", "fleet_link"  # the nodes that publish a vehicle's samples
RELAYED = "link"  # the label of the samples a vehicle's fleet_link relayed


class VehicleMapMonitor(MissionMonitor):
    """One vehicle's own map in a distributed fleet, scored as the single vehicle's monitor
    scores its map, in the vehicle's ``namespace``; of the mappers' statuses it takes its
    own vehicle's alone (every mapper's comes on the one ``/diagnostics``)."""

    def __init__(self, terrain, namespace: str, fields=None, **kwargs) -> None:
        self.vehicle = namespace.strip("/")
        super().__init__(terrain, None, node_name=f"poam_ros_sim_monitor_{self.vehicle}",
                         fields=fields, namespace=namespace, **kwargs)

    def _on_diagnostics(self, message) -> None:
        super()._on_diagnostics(without_other_mappers(message, self.vehicle))


def without_other_mappers(message, vehicle: str):
    """``message`` (a DiagnosticArray) without the statuses of mappers other than
    ``vehicle``'s (``auv1/mapper: mapping``): a monitor scores its own vehicle's map by its
    own mapper's counts."""
    def other(name: str) -> bool:
        node = name.split(":")[0]
        return node.rsplit("/", 1)[-1] == "mapper" and node != f"{vehicle}/mapper"

    message.status = [status for status in message.status if not other(status.name)]
    return message


class FleetMonitor(MissionMonitor):
    """Scores the fleet's map and follows the vehicles of ``namespaces`` (``/auv0``, ...);
    the rest as :class:`MissionMonitor` (``on_state(namespace, state, reason)`` sees every
    vehicle's change of mission state)."""

    def __init__(self, terrain, namespaces: list[str], on_epoch=None, fields=None,
                 on_state=None, central: bool = True, **kwargs) -> None:
        self.namespaces, self.on_state, self.central = list(namespaces), on_state, central
        self._on_fleet_epoch = on_epoch
        # distributed: this node scores the first vehicle's map, one more node each other's
        self.vehicle_monitors = {} if central else {
            namespace: VehicleMapMonitor(terrain, namespace, fields, **kwargs)
            for namespace in self.namespaces[1:]}
        super().__init__(terrain, self._with_vehicles, fields=fields,
                         namespace=FLEET_NAMESPACE if central else self.namespaces[0],
                         **kwargs)

    def _start(self, node_name: str) -> None:
        super()._start(node_name)
        self.vehicle_states = dict.fromkeys(self.namespaces, "")
        self.vehicles_left: set[str] = set()  # as fleet_sim's statuses say
        self._sim_statuses = {namespace: status_name(f"fleet_sim{namespace}", SimulatorStatus)
                              for namespace in self.namespaces}
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

    @property
    def finished(self) -> bool:
        """Every vehicle's mission is over, and the map holding the samples its planner
        counted is scored: the central map (the most any planner counted), or each
        vehicle's own."""
        if self.mission_state not in ENDED:
            return False
        if self.central:
            return scored(self.records, self.mission)
        return all(scored(self.vehicle_records(namespace), self.vehicle_missions[namespace])
                   for namespace in self.namespaces if namespace not in self.vehicles_left)

    def vehicle_records(self, namespace: str) -> list:
        """The records of the map ``namespace``'s planner reads: its own (distributed), or
        the central one."""
        monitor = self.vehicle_monitors.get(namespace)
        return self.records if monitor is None else monitor.records

    def vehicle_link(self, namespace: str) -> FleetLinkStatus | None:
        """The newest status of the vehicle's fleet_link (distributed), None before one."""
        return self._status_records.get(status_name(f"{namespace.strip('/')}/{LINK}",
                                                    FleetLinkStatus))

    def missing_sources(self) -> list[str]:
        """The mappers, and each vehicle's ingest and planner, not heard yet."""
        missing = [node for node in super().missing_sources() if node == "mapper"]
        missing += [f"{namespace}/mapper" for namespace, monitor in self.vehicle_monitors.items()
                    if "mapper" in monitor.missing_sources()]
        for namespace in self.namespaces:
            if not any(info.node_name == INGEST and info.node_namespace == namespace
                       for info in self.get_publishers_info_by_topic(
                           self._samples_topic(namespace))):
                missing.append(f"{namespace}/{INGEST}")
            if self._goal_subscriptions[namespace].get_publisher_count() == 0:
                missing.append(f"{namespace}/planner")
        return missing

    def _samples_topic(self, namespace: str) -> str:
        """Where ``namespace``'s ingest publishes: the central map's samples, or its own."""
        return f"{FLEET_NAMESPACE if self.central else namespace}/samples"

    def _on_diagnostics(self, message) -> None:
        super()._on_diagnostics(message if self.central else
                                without_other_mappers(message, self.namespaces[0].strip("/")))
        said = {status.name: status.message for status in message.status}
        if any(name in said for name in self._sim_statuses.values()):  # fleet_sim's array
            left = {namespace for namespace, name in self._sim_statuses.items()
                    if said.get(name, "").startswith(LEFT)}
            if left != self.vehicles_left:
                self.vehicles_left = left
                self._fleet_state()

    def _on_mission(self, message) -> None:
        """The fleet's mission comes from its vehicles' (:meth:`_fleet_state`), not from the
        first vehicle's in whose namespace this node may sit."""

    def vehicle_ingest(self, namespace: str) -> IngestStatus | None:
        """The newest status of the vehicle's ingest, None before one came."""
        return self._status_records.get(status_name(f"{namespace.strip('/')}/sensor_ingest",
                                                    IngestStatus))

    def counts_current(self) -> bool:
        """Whether the ingests' diagnostics count every sample received here and, with
        distributed maps, each vehicle's ingest and link count its own last batch
        (:func:`~poam_ros.planners.fleet_state.own_counts_current`)."""
        ingests = [self.vehicle_ingest(namespace) for namespace in self.namespaces]
        if None in ingests or sum(ingest.samples_published for ingest in ingests) \
                < sum(len(z) for _, _, z in self._batches):
            return False
        return self.central or all(
            own_counts_current(ingest, self.vehicle_missions[namespace],
                               self.vehicle_link(namespace))
            for namespace, ingest in zip(self.namespaces, ingests)
            if namespace not in self.vehicles_left)

    def _on_samples(self, message, info) -> None:
        """A batch, attributed to the vehicle whose ingest published it, then scored."""
        gid = bytes(info["publisher_gid"]["data"])
        if gid not in self._samples_writers:
            self._samples_writers.update(
                (bytes(endpoint.endpoint_gid),
                 RELAYED if endpoint.node_name == LINK else endpoint.node_namespace)
                for endpoint in self.get_publishers_info_by_topic(
                    self._samples_topic(self.namespaces[0])))
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        self._vehicle_batches.append((stamp, self._samples_writers.get(gid, "unknown"),
                                      message.width * message.height))
        super()._on_samples(message)

    def vehicle_samples(self, until: int, mapped: int) -> dict[str, int]:
        """Samples per vehicle in the map stamped ``until`` (ns) that holds ``mapped``: its
        ingests' batches stamped up to then; distributed, the rest are those the link
        relayed (unstamped, so counted as the mapper counts them)."""
        counts = dict.fromkeys(self.namespaces if self.central else self.namespaces[:1], 0)
        for stamp, namespace, count in self._vehicle_batches:
            if stamp <= until and namespace != RELAYED:
                counts[namespace] = counts.get(namespace, 0) + count
        if not self.central:
            counts[RELAYED] = mapped - sum(counts.values())
        return counts

    def _with_vehicles(self, record) -> None:
        record.extra.update({f"samples_{label.strip('/')}": count for label, count in
                             self.vehicle_samples(self.record_stamps[-1],
                                                  record.num_samples).items()})
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
        self.mission_state = fleet_state(self.vehicle_states, self.vehicles_left)
        self.mission = fleet_mission(self.vehicle_missions)
        self._score_ready()
