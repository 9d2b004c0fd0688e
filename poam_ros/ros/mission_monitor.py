"""The monitor of ``poam-ros sim``: watches the graph as a user would and scores its maps.

It subscribes to what the stack publishes (``samples``, ``map``, ``map/inducing``,
``map/evaluation``, ``goal``, ``/diagnostics``) and makes one :class:`EpochRecord` per map,
scored as :class:`~poam_ros.mission.Mission` scores an epoch: ``map/evaluation`` holds the
map's model at the mission's evaluation points (mean and std of a new measurement,
float64), the ground truth comes from the simulator's terrain, and the MSLL baseline from
the samples the mapper holds (the mean and std of their targets, which the mapper reports
in its diagnostics of that map). Update times and counts come from the same diagnostics
(:class:`~poam_ros.diagnostics.MapperStatus`, matched by its ``map_stamp``).

With channels besides the depth (``fields``: each channel's truth, depth first, as
:func:`~poam_ros.mission.survey_fields` gives them) the samples and the evaluation carry a
field per channel, the mapper reports each channel's baseline, and each record holds the
depth's metrics and every channel's in ``extra`` (``smse_<channel>``, ...), scored by
:func:`~poam_ros.mapping.loop.score_channels` as the
ROS-free mission scores them.

A map is scored once its evaluation, the mapper's diagnostics and the samples batch it is
stamped with have all arrived, in stamp order, whatever order DDS delivers them in.

The mission is over when the planner says so on ``mission/state``
(:class:`~poam_ros.diagnostics.MissionStatus`): ``done`` or ``aborted``, once the map that
holds the samples it counted then is scored.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import PointCloud2

from poam_ros import messages as msg
from poam_ros.diagnostics import (
    DiagnosticsError,
    IngestStatus,
    MapperStatus,
    MissionStatus,
    Record,
    ScoreStatus,
    decode,
)
from poam_ros.ingest.reasons import timing_dependent
from poam_ros.mapping.channels import DEPTH
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.mapping.loop import score_channels
from poam_ros.mapping.metrics import TargetBaseline
from poam_ros.planners.mission_control import ABORTED, DONE
from poam_ros.ros import qos
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.run import StartingNode
from poam_ros.setup.truth import field_truth
from poam_ros.sim import Terrain

#: what the monitor waits to hear before the clock source starts: topic -> the node behind it
SOURCES = {"samples": "sensor_ingest", "map/evaluation": "mapper", "goal": "planner"}
KEPT_MAPS = 5  # maps (and inducing clouds) kept for the final figure


def scored(records: list, mission: MissionStatus | None) -> bool:
    """Whether the map ``mission`` counted is among ``records``: one holding its samples
    (``samples_mapped``: with a budget of a vehicle's own soundings, more than it counted)."""
    counted = 0 if mission is None else mission.samples_used \
        if mission.samples_mapped is None else mission.samples_mapped
    return counted == 0 or bool(records) and records[-1].num_samples >= counted


class MissionMonitor(StartingNode):
    """Scores the graph's maps against ``terrain`` (and the truths of further channels in
    ``fields``, name -> (G, 2) m -> (G,), depth first; those flagged in ``binary`` scored
    as binary channels) until the planner's mission ends; ``on_epoch`` sees every record as
    it comes."""

    def __init__(self, terrain: Terrain,
                 on_epoch: Callable[[EpochRecord], None] | None = None,
                 node_name: str = "poam_ros_sim_monitor",
                 fields: dict[str, Callable] | None = None, binary: Sequence[bool] = (),
                 **kwargs) -> None:
        self.terrain, self.on_epoch = terrain, on_epoch
        self.binary = tuple(binary)  # per field: a binary channel's (scored as one)
        self.fields = fields or {DEPTH: terrain.elevation}
        self.channels = tuple(self.fields)[1:]  # the samples' fields besides z
        super().__init__(node_name, **kwargs)

    def _start(self, node_name: str) -> None:
        self.records: list[EpochRecord] = []
        self.record_stamps: list[int] = []  # ns, the map stamp of each record
        self.last_progress = time.monotonic()  # when the last record (or none yet) came
        self.goals: list[tuple[float, float]] = []
        self.statuses: dict[str, dict[str, str]] = {}  # newest key-values per status (raw)
        self.messages: dict[str, str] = {}  # newest message per diagnostic status
        self._status_records: dict[str, Record] = {}  # newest record per status
        self.maps: dict[int, PointCloud2] = {}  # by stamp (ns), the newest few
        self.inducing: dict[int, PointCloud2] = {}
        # stamp ns, xy, z ((N,); (N, D) with channels)
        self._batches: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._newest_batch = -1
        self._evaluations: dict[int, PointCloud2] = {}
        self._mapper: dict[int, MapperStatus] = {}  # mapper diagnostics by map_stamp
        self._status_stamp = 0  # ns, map_stamp of the newest mapper status
        self.unscored_maps = 0  # maps passed over: their mapper status was lost
        self._truth: tuple[np.ndarray, np.ndarray] | None = None  # points, (G,) or (G, D)
        self.mission_state = ""  # the planner's, as mission/state last said
        self.mission: MissionStatus | None = None
        subscribe = self.create_subscription
        subscribe(PointCloud2, "map", self._keep(self.maps), qos.LATCHED_HISTORY)
        subscribe(PointCloud2, "map/inducing", self._keep(self.inducing), qos.LATCHED_HISTORY)
        subscribe(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS_ALL)
        self._scores = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        subscribe(DiagnosticStatus, "mission/state", self._on_mission, qos.LATCHED)
        self._sources = {
            "samples": subscribe(PointCloud2, "samples", self._on_samples, qos.SAMPLES),
            "map/evaluation": subscribe(PointCloud2, "map/evaluation", self._on_evaluation,
                                        qos.LATCHED_HISTORY),
            "goal": subscribe(PoseStamped, "goal", self._on_goal, qos.LATCHED_HISTORY),
        }

    @property
    def finished(self) -> bool:
        """The planner's mission is done or aborted and the map holding the samples it
        counted is scored: the mission is over, as :meth:`Mission.run`'s."""
        return self.mission_state in (DONE, ABORTED) and scored(self.records, self.mission)

    def missing_sources(self) -> list[str]:
        """The nodes not heard yet, by the topics in :data:`SOURCES`."""
        return [node for topic, node in SOURCES.items()
                if self._sources[topic].get_publisher_count() == 0]

    def counts_current(self) -> bool:
        """Whether the ingest's diagnostics count every sample received here."""
        ingest = self.status(IngestStatus)
        return ingest is not None and \
            ingest.samples_published >= sum(len(z) for _, _, z in self._batches)

    def timing_dependent(self) -> dict[str, dict[str, int]]:
        """Per ingest heard (its status's name), the decisions that depended on its timing
        rather than its data (:func:`~poam_ros.ingest.reasons.timing_dependent`), where any
        did."""
        found = {}
        for name, record in self._status_records.items():
            if isinstance(record, IngestStatus):
                counts = {reason: n for reason, n in timing_dependent(record).items() if n}
                if counts:
                    found[name] = counts
        return found

    def status(self, record_type: type):
        """The newest status of the kind ``record_type`` (a :mod:`poam_ros.diagnostics`
        record), None before one came."""
        return next((record for record in self._status_records.values()
                     if isinstance(record, record_type)), None)

    # ------------------------------------------------------------------ callbacks
    def _on_samples(self, message: PointCloud2) -> None:
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        xy, z = msg.cloud_to_samples(message, self.channels)
        self._batches.append((stamp, xy, z))
        self._newest_batch = max(self._newest_batch, stamp)
        self._score_ready()

    def _keep(self, store: dict) -> Callable[[PointCloud2], None]:
        def keep(message: PointCloud2) -> None:
            if message.width * message.height:  # an empty map: the mapper was reset
                store[msg.time_to_nanoseconds(message.header.stamp)] = message
                for stamp in sorted(store)[:-KEPT_MAPS]:
                    del store[stamp]
        return keep

    def _on_evaluation(self, message: PointCloud2) -> None:
        self._evaluations[msg.time_to_nanoseconds(message.header.stamp)] = message
        self._score_ready()

    def _on_mission(self, message: DiagnosticStatus) -> None:
        try:
            self.mission = decode(MissionStatus, ((kv.key, kv.value) for kv in message.values))
        except DiagnosticsError as error:
            self.get_logger().warning(f"unreadable mission state: {error}")
            return
        self.mission_state = message.message

    def _on_goal(self, message: PoseStamped) -> None:
        position = message.pose.position
        self.goals.append((position.x, position.y))

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            self.statuses[status.name] = {kv.key: kv.value for kv in status.values}
            self.messages[status.name] = status.message
            try:
                record = msg.status_record(status)
            except DiagnosticsError as error:  # a node of another version: not scored
                self.get_logger().warning(f"unreadable status {status.name!r}: {error}",
                                          throttle_duration_sec=10.0)
                continue
            if record is not None:
                self._status_records[status.name] = record
            if isinstance(record, MapperStatus):
                self._mapper[record.map_stamp] = record
                self._status_stamp = record.map_stamp
        self._score_ready()

    # ------------------------------------------------------------------ scoring
    def _score_ready(self) -> None:
        """Score the oldest waiting map while everything it needs has come. A map whose
        mapper status was lost is passed over, counted in ``unscored_maps``: a mapper's
        statuses come in order, so once the newest is of a later map none is coming for it."""
        while self._evaluations and not self.finished:
            stamp = min(self._evaluations)
            if stamp not in self._mapper:
                if self._status_stamp <= stamp:
                    return
                del self._evaluations[stamp]
                self.unscored_maps += 1
                self.get_logger().warning(
                    f"the mapper's status of the map stamped {stamp * 1e-9:.3f} s was lost; "
                    f"that map is not scored ({self.unscored_maps} so far)")
                continue
            if self._newest_batch < self._mapper[stamp].data_stamp:
                return  # a batch the map holds is still on its way here
            self._score(stamp, self._evaluations.pop(stamp), self._mapper.pop(stamp))
            for older in [key for key in self._mapper if key < stamp]:
                del self._mapper[older]  # statuses of maps already scored or lost

    def _score(self, stamp: int, evaluation: PointCloud2, mapper: MapperStatus) -> None:
        points, mean, std = msg.cloud_to_evaluation(evaluation, self.channels)
        if self._truth is None or not np.array_equal(self._truth[0], points):
            self._truth = points, field_truth(self.fields, points)
        # Against the MSLL baseline of the samples the mapper holds, as it reports them; NaN
        # where undefined (a single sample, targets all equal), as the ROS-free loop scores.
        baselines = [_baseline(mapper, name) for name in (None, *self.channels)]
        columns = [np.reshape(values, (len(points), -1)) for values in (self._truth[1], mean,
                                                                         std)]
        metrics, per_channel = score_channels(tuple(self.fields), *columns, baselines,
                                              self.binary)
        per_channel = per_channel if self.channels else {}
        record = EpochRecord(
            len(self.records), mapper.samples, **metrics, update_time=mapper.update_time,
            inducing_time=mapper.inducing_time, variational_time=mapper.variational_time,
            training_time=mapper.training_time, predict_time=mapper.map_predict_time,
            num_inducing=mapper.inducing_points, sim_time=stamp / 1e9,
            training_failure=mapper.training_failure or None,
            # the update's own figures (the learned noise, inducing inputs added, ...)
            extra={**mapper.figures, **per_channel})
        self.records.append(record)
        self.record_stamps.append(stamp)
        self.last_progress = time.monotonic()
        # the score on /diagnostics: a live view of the graph plots it
        self._scores.publish(status_array(self, [node_status(
            self, DiagnosticStatus.OK, f"epoch {record.epoch}", ScoreStatus(
                epoch=record.epoch, samples=record.num_samples, smse=record.smse,
                msll=record.msll))], stamp / 1e9))
        if self.on_epoch is not None:
            self.on_epoch(record)

    def samples(self, until: int | None = None) -> np.ndarray:
        """(N, 3) x, y, elevation of the samples kept so far, up to stamp ``until`` (ns);
        (N, 2 + D) with the channels' values (NaN where not measured)."""
        kept = [np.column_stack([xy, z]) for stamp, xy, z in self._batches
                if until is None or stamp <= until]
        return np.concatenate(kept) if kept else np.empty((0, 2 + len(self.fields)))

    def map_layers(self, stamp: int) -> dict[str, np.ndarray] | None:
        """The map of ``stamp`` (ns) as cells: ``points`` (N, 2), ``mean``, ``std`` and
        ``lengthscale`` (N,) when published, each channel's ``mean_<channel>`` and
        ``std_<channel>``, and its ``inducing`` inputs (M, 2); None when that map is no
        longer kept."""
        if stamp not in self.maps:
            return None
        fields = msg.cloud_to_arrays(self.maps[stamp])
        layers = {"points": np.column_stack([fields["x"], fields["y"]]),
                  "mean": fields["mean"], "std": fields["std"],
                  "lengthscale": fields.get("lengthscale"), "inducing": np.empty((0, 2))}
        layers.update({f"{kind}_{name}": fields[f"{kind}_{name}"] for name in self.channels
                       for kind in ("mean", "std")})
        if stamp in self.inducing:
            layers["inducing"] = msg.cloud_to_points(self.inducing[stamp])[:, :2]
        return layers


def _baseline(mapper: MapperStatus, channel: str | None) -> TargetBaseline | None:
    """The MSLL baseline the mapper reports of ``channel`` (None: the depth), None when it
    reports none (a channel not measured yet)."""
    if channel is None:
        mean, std = mapper.target_mean, mapper.target_std
    else:
        mean, std = (mapper.channel_target_means.get(channel),
                     mapper.channel_target_stds.get(channel))
    return None if mean is None else TargetBaseline(mean, std)
