"""Re-map a recorded survey offline: a bag's raw sensor topics through the ingest and the
mapping core, with any method and parameters, without ROS or DDS.

Pipeline (what the live graph does, message for message):

1. The bag's ``odom``, ``sonar/range``, ``sonar/swath``, ``fix`` and ``plan`` messages, and
   those of the ingest's scalar channels (``channels`` on their topics and types:
   :mod:`poam_ros.ingest.channels`), IMU and depth sensor (``imu_attitude``,
   ``depth_from_pressure``: :mod:`poam_ros.ingest.attitude_depth`), go into
   :class:`~poam_ros.ingest.Ingest` with the numbers the ingest node reads off the same
   messages (:mod:`poam_ros.messages`), in data-time order: sensor messages by header
   stamp (a stamp behind its topic's newest keeps its place after that one, where the live
   ingest met it and dropped it; so does a stamp the ingest's clock rule holds as a suspect,
   and a topic whose clock was reset continues where its old clock left off), each plan
   after the data the graph had acted on when it was sent (the newest map, batch or pose
   sent before it, by the publishers' send times that MCAP keeps: in lockstep, the arrival
   it answers). The recorder's receive order
   across topics is not the live ingest's callback order (DDS serves each reader on its
   own); the ingest's batches do not depend on it, only on what each topic delivered, in
   order. The receive time stands for the node's wall clock (grace periods, pending
   timeouts, polled every 50 ms).
2. Each batch reaches the model as the mapper reads it off the ``samples`` cloud
   (float32 fields unless ``float64_samples``; a bag with recorded batches says which the
   live ingest sent, and that wins over the parameter file); empty batches are skipped, as
   the mapper skips them.
3. **Updates** (``updates``): the live mapper merges every batch that arrived during an
   update into its next one, so its maps depend on timing. Each map it publishes is
   stamped with the newest batch stamp it includes; ``map`` mode reads those stamps from
   the bag's ``map`` topic and makes exactly the same updates. ``batch`` mode makes one
   update per batch (the ROS-free mission's rule, and lockstep's). ``auto``: ``map`` when
   the bag holds maps, else ``batch``.
4. After each update the map is predicted on the mapper's grid, as the mapper does; where
   the bag holds a live map of the same data stamp, the two are compared
   (:class:`MapComparison`). With the same method, parameters and seed, they are equal:
   the model is deterministic given its inputs and seed, and steps 1 to 3 give it the
   live inputs. Where the live ingest's own decisions depended on its timing (a batch cut
   on its grace period, readings dropped as late or lost in transport: its
   ``/diagnostics`` say so) the remap notes it; ``source: samples`` then maps the
   recorded batches themselves, exactly what the live mapper received.
5. Against ground truth (``truth``): a bag from the simulator (its ``/diagnostics`` hold
   the simulated AUV's status) is scored on the mission's evaluation grid against the
   terrain of the parameter file, as :class:`~poam_ros.mission.Mission` scores a run. With
   channels the model maps D = 1 + C outputs (a multi-channel method) and each channel
   is scored against its simulated field where the parameter file simulates it
   (``temperature.enabled``): ``extra`` of each record holds ``smse_<channel>``,
   ``msll_<channel>``, ...; a channel without a truth has NaN metrics.

Samples after the last decision point (a survey stopped mid-leg) were never mapped live;
``tail`` decides: ``auto`` maps them only when the bag has no plans at all (a survey
without decision points has nothing else), ``map`` always, ``drop`` never.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from poam_ros import messages as msg
from poam_ros.bags.bag_reader import BagReader
from poam_ros.bags.bag_records import BagError, ReadReport
from poam_ros.bags.message_types import MessageTypes
from poam_ros.bags.recording import Recording
from poam_ros.bags.remap_config import RemapConfig, check_topics, sensor_inputs
from poam_ros.geo import GeoReference
from poam_ros.ingest import Ingest, SampleBatch
from poam_ros.ingest import feeders as fd
from poam_ros.ingest.config import IngestConfig
from poam_ros.mapping.channels import channel_names, survey_model
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.mapping.loop import MappingLoop, Scoring
from poam_ros.mapping.map_grid import MapGrid, MapLayers
from poam_ros.mapping.metrics import evaluation_points
from poam_ros.mission import MissionResult
from poam_ros.models import OnlineSparseGP
from poam_ros.setup.mission_setup import MissionSetup, mission_seeds
from poam_ros.setup.truth import mission_terrain
from poam_ros.workspace import Workspace

POLL_PERIOD = 0.05  # s: the ingest node's poll timer


@dataclass
class MapComparison:
    """The remap's map against the live map of the same data stamp (ns); differences are
    maxima over cells, in target units; ``equal`` when they are within float32 rounding."""

    stamp: int
    mean_diff: float
    std_diff: float
    same_cells: bool
    compared: int  # live maps matched so far by a remap update of the same stamp
    live_maps: int  # live maps in the bag

    @property
    def equal(self) -> bool:
        return self.same_cells and self.mean_diff <= 1e-4 and self.std_diff <= 1e-4


@dataclass
class RemapResult:
    """What a remap produced; arrays in world units."""

    model: OnlineSparseGP
    grid: MapGrid
    layers: MapLayers | None  # the final map on the mapper's grid
    records: list[EpochRecord]  # one per update; metrics NaN without ground truth
    batches: list[SampleBatch]
    path: np.ndarray  # (P, 3) x, y, yaw of every odometry pose
    ingest_drops: Counter
    read_report: ReadReport
    notes: list[str]
    comparison: MapComparison | None
    eval_points: np.ndarray | None
    truth: np.ndarray | None
    terrain: object | None
    workspace: Workspace
    wall_time: float
    messages: Counter = field(default_factory=Counter)  # per topic, fed to the ingest

    def mission_result(self) -> MissionResult | None:
        """The remap as a :class:`MissionResult` (for ``plot_mission``), with ground truth."""
        if self.truth is None:
            return None
        return MissionResult(self.records, self.model, self.terrain, self.workspace,
                             self.eval_points, self.truth, self.model.buffer.x.copy(),
                             self.model.buffer.y.copy(), self.path, self.wall_time)


def remap_bag(bag, setup: MissionSetup, config: RemapConfig | None = None,
              on_update: Callable[[EpochRecord], None] | None = None) -> RemapResult:
    """Re-map ``bag`` (a path or :class:`BagReader`); see the module docstring.

    ``setup`` gives the mapping method and parameters (``setup.mapping``; its seed is
    derived from ``setup.mission.seed`` as the mission launcher derives the mapper's),
    the map grid and workspace, the mapper's settings, the sensor ingest's configuration
    and workspace (``setup.ingest``, ``setup.ingest_workspace``) and the terrain (for
    ground truth).

    Raises:
        BagError: the bag cannot be read, lacks the sensor topics, or holds them with
            another type than the stack's.
    """
    start = time.perf_counter()
    config = config or RemapConfig()
    reader = bag if isinstance(bag, BagReader) else BagReader(bag)
    check_topics(reader, config, setup.ingest)
    seeds = mission_seeds(setup.mission.seed)
    model = survey_model(setup.mapping.replace(seed=seeds["model"]), setup.ingest.channels)
    types = MessageTypes()
    ingest = Ingest(setup.ingest, Workspace.from_config(setup.ingest_workspace),
                    GeoReference.from_config(setup.geo))
    notes: list[str] = []
    batches, path, counts, live_maps, sim_bag, on_wire = _ingest(reader, types, ingest, config,
                                                                 notes)
    read_report = reader.report

    workspace = Workspace.from_config(setup.workspace)
    grid = MapGrid.from_config(setup.grid, workspace)
    mode = config.updates
    if mode == "auto":
        mode = "map" if live_maps else "batch"
    if mode == "map" and not live_maps:
        notes.append(f"no maps on {config.map_topic}: one update per batch")
        mode = "batch"
    groups = _group(batches, sorted(live_maps) if mode == "map" else None)

    eval_points = truth = terrain = None
    if config.truth == "sim" or (config.truth == "auto" and sim_bag):
        terrain = mission_terrain(setup)
        eval_points = evaluation_points(workspace, setup.mission.eval_grid)
        truth = _truth(setup, terrain, eval_points, notes)

    channels = setup.ingest.channels
    scoring = (None if truth is None else
               Scoring(eval_points, truth, channel_names(channels) if channels else ()))
    loop = MappingLoop(model, scoring, workspace)
    float64 = on_wire or ingest.config.float64_samples
    updates = _Updates(loop, grid, setup.mapper_node, live_maps, notes, on_update)
    for group in groups:
        updates.step(group, float64)
    if not updates.records:
        notes.append("no update: the bag gave the model no valid sample")
    if live_maps and updates.comparison is None:
        notes.append(f"none of the {len(live_maps)} live map(s) has the data stamp of a "
                     f"remap update: no comparison (another update grouping?)")
    return RemapResult(loop.model, grid, updates.layers, updates.records, batches, path,
                       Counter(ingest.drops.counts), read_report, notes, updates.comparison,
                       eval_points, truth, terrain, workspace, time.perf_counter() - start,
                       counts)


class _Updates:
    """The remap's updates through the shared :class:`MappingLoop`: each group of batches
    as the live mapper read it off the wire, one update, the map on the mapper's grid
    compared with the live map of the same data stamp, and a record."""

    def __init__(self, loop: MappingLoop, grid: MapGrid, settings, live_maps: dict,
                 notes: list[str], on_update: Callable[[EpochRecord], None] | None) -> None:
        self.loop, self.grid, self.settings, self.live_maps = loop, grid, settings, live_maps
        self.notes, self.on_update = notes, on_update
        self.records: list[EpochRecord] = []
        self.layers: MapLayers | None = None
        self.comparison: MapComparison | None = None
        self.compared = 0

    def step(self, group: list[SampleBatch], float64: bool) -> None:
        received = [wire_samples(batch.points, float64) for batch in group]
        step = self.loop.step((points[:, :2], SampleBatch(0.0, points, "").targets)
                              for points in received)
        stamp = max(msg.seconds_to_nanoseconds(batch.stamp) for batch in group)
        for error in step.refused:
            self.notes.append(f"a batch up to {stamp / 1e9:.3f} s refused: {error}")
        if step.failure is not None:
            self.notes.append(f"update at {stamp / 1e9:.3f} s failed, map kept: "
                              f"{step.failure}")
        elif step.report.skipped:
            return
        else:
            self.layers = self.loop.layers(self.grid, self.settings.std_includes_noise,
                                           self.settings.publish_lengthscale)
            if stamp in self.live_maps:
                self.compared += 1
                self.comparison = _compare(self.live_maps, stamp, self.layers, self.compared)
        record = self.loop.record(len(self.records), step, stamp / 1e9,
                                  self.layers.predict_time if self.layers else math.nan)
        self.records.append(record)
        if self.on_update is not None:
            self.on_update(record)


def wire_samples(points: np.ndarray, float64: bool) -> np.ndarray:
    """Samples as the mapper reads them off a ``samples`` cloud: float32 fields unless
    ``float64`` (the ingest's ``float64_samples``), read back as float64."""
    points = np.asarray(points, dtype=float)
    return points if float64 else points.astype("<f4").astype(np.float64)


def _ingest(reader: BagReader, types: MessageTypes, ingest: Ingest, config: RemapConfig,
            notes: list[str]):
    """Feed the sensor topics to ``ingest``; collect batches, poses, live map stamps."""
    recording = Recording.read(reader, types, ingest, config, notes)
    recording.place_plans(config.plan_topic)
    from_samples = config.source == "samples"
    batches, path, counts = _feed(recording, ingest, config, from_samples)
    for topic, count in recording.behind.items():
        notes.append(f"{count} {topic} message(s) stamped earlier than the one before them "
                     f"(timestamps going backwards): the ingest drops them, as live")
    for stream, count in sorted(ingest.streams.clock_resets.items()):
        notes.append(f"{count} {stream} clock reset(s), the latest: "
                     f"{ingest.streams.reset_details[stream]}")
    if from_samples:
        if not recording.recorded:
            raise BagError(f"{reader.path} has no {config.samples_topic} batches to map "
                           f"(source samples); source sensors maps its odometry and sonar")
        batches = recording.batches
    else:
        _finish(recording, ingest, config, batches, notes)
    for topic, count in recording.undecodable.items():
        notes.append(f"{count} {topic} message(s) could not be decoded and were skipped")
    if not from_samples and not counts[config.odom_topic]:
        notes.append(f"no readable {config.odom_topic} message: no sample can be placed")
    return (batches, np.array(path).reshape(-1, 3), counts, recording.live_maps,
            recording.sim_bag, from_samples)


def _feed(recording: Recording, ingest: Ingest, config: RemapConfig, from_samples: bool):
    """Pass 2: the ingest in data-time order. The recorder's receive order across topics is
    not the live ingest's callback order (each DDS reader is served on its own), but its
    batches do not depend on that order, only on what each topic delivered in order."""
    batches: list[SampleBatch] = []
    path: list[tuple[float, float, float]] = []
    counts: Counter = Counter()
    feeds = _feeds(ingest.config, config)
    now = last_poll = -math.inf
    for _, _, _, topic, decoded, received in sorted(recording.sensors,
                                                     key=lambda item: item[:3]):
        now = max(now, received / 1e9)  # the receive clock stands for the node's wall clock
        if now - last_poll >= POLL_PERIOD:
            ingest.poll(now)
            last_poll = now
        counts[topic] += 1
        if topic == config.odom_topic:
            _, x, y, _, yaw = msg.odometry_to_pose(decoded)
            path.append((x, y, yaw))
        if not from_samples:
            feeds[topic](ingest, decoded, now)
        batches.extend(ingest.take_batches())
    return batches, path, counts


def _feeds(ingest: IngestConfig, config: RemapConfig) -> dict[str, Callable]:
    """Each sensor topic's and the plan's ``feed(ingest, message, now)``, as the ingest node
    hands them over (:mod:`poam_ros.ingest.feeders`; a topic named twice goes to the
    odometry first, then the channels, IMU and depth sensor)."""
    feeds = {config.range_topic: fd.feed_range, config.swath_topic: fd.feed_swath,
             config.fix_topic: fd.feed_fix, config.plan_topic: fd.feed_plan}
    feeds.update({topic: feed for topic, (_, feed) in sensor_inputs(ingest, config).items()})
    feeds[config.odom_topic] = fd.feed_odometry
    return feeds


def _finish(recording: Recording, ingest: Ingest, config: RemapConfig,
            batches: list[SampleBatch], notes: list[str]) -> None:
    """The end of the bag: grace periods and pending readings expire (their batches join
    ``batches``), which are checked against the recorded ones; the tail is mapped or left
    out (``tail``)."""
    ingest.poll(math.inf)
    batches += ingest.take_batches()
    if recording.recorded:
        _check_batches(batches, recording.recorded, ingest.config.float64_samples, notes)
    issues = {key: count for key, count in recording.live_issues.items() if count}
    if issues:
        notes.append("the live ingest's decisions depended on its timing ("
                     + ", ".join(f"{key} {count}" for key, count in issues.items())
                     + "): the remap, which has every recorded message, may cut other "
                       "batches (source samples maps exactly what the live mapper got)")
    tail = ingest.batcher.size
    if tail and (config.tail == "map" or (config.tail == "auto" and not recording.plans)):
        ingest.flush_tail()
        batches += ingest.take_batches()
    elif tail:
        notes.append(f"{tail} sample(s) after the last decision point left out, as the "
                     f"live mapper never got them (tail: map to include them)")


def _check_batches(batches: list[SampleBatch], recorded: dict[int, np.ndarray],
                   float64: bool, notes: list[str]) -> None:
    """Note where the remap's batches differ from the live ingest's recorded ones."""
    differ = missing = 0
    for batch in batches:
        live = recorded.get(msg.seconds_to_nanoseconds(batch.stamp))
        if live is None:
            missing += 1
        elif live.shape != batch.points.shape or not np.array_equal(
                live, wire_samples(batch.points, float64)):
            differ += 1
    if differ or missing:
        notes.append(f"{differ} of the remap's {len(batches)} batch(es) differ from the live "
                     f"ingest's and {missing} have no recorded counterpart")


def _group(batches: list[SampleBatch], map_stamps: list[int] | None) -> list[list[SampleBatch]]:
    """Non-empty batches cut into updates: one each, or as the live maps' stamps cut them
    (each batch into the first map stamped at or after it; later ones one each)."""
    batches = [b for b in batches if len(b)]
    if map_stamps is None:
        return [[b] for b in batches]
    groups: dict[int, list[SampleBatch]] = {}
    order: list[int] = []
    for batch in batches:
        stamp = msg.seconds_to_nanoseconds(batch.stamp)
        index = int(np.searchsorted(map_stamps, stamp))
        key = map_stamps[index] if index < len(map_stamps) else -(len(order) + 1)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(batch)
    return [groups[key] for key in order]


def _compare(live: dict, stamp: int, layers: MapLayers, compared: int) -> MapComparison:
    """The live map of data stamp ``stamp`` against ``layers``, both as float32 (the
    ``map`` cloud's fields)."""
    mean_live, std_live = live[stamp]
    mean = layers.mean.astype(np.float32).astype(float).ravel()
    std = layers.std.astype(np.float32).astype(float).ravel()
    if mean_live.shape != mean.shape:
        return MapComparison(stamp, math.inf, math.inf, False, compared, len(live))
    same = bool(np.array_equal(np.isnan(mean_live), np.isnan(mean)))
    inside = ~np.isnan(mean_live) & ~np.isnan(mean)
    return MapComparison(stamp, float(np.max(np.abs(mean_live - mean)[inside], initial=0.0)),
                         float(np.max(np.abs(std_live - std)[inside], initial=0.0)), same,
                         compared, len(live))


def _truth(setup: MissionSetup, terrain, points: np.ndarray, notes: list[str]) -> np.ndarray:
    """The simulator's truth at ``points`` (G, 2): the terrain's elevation (G,), with the
    ingest's channels (G, 1 + C), a channel the parameter file does not simulate NaN."""
    channels = setup.ingest.channels
    if not channels:
        return terrain.elevation(points)
    from poam_ros.setup.truth import simulated_channels

    simulated = simulated_channels(setup, terrain)
    columns = [terrain.elevation(points)]
    for name in channels:
        if name in simulated:
            columns.append(simulated[name].truth(points))
        else:
            notes.append(f"no simulated truth of channel {name!r}: its metrics are NaN")
            columns.append(np.full(len(points), np.nan))
    return np.column_stack(columns)
