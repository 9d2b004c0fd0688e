"""Re-map a recorded survey offline: a bag's raw sensor topics through the ingest and the
mapping core, with any method and parameters, without ROS or DDS.

Pipeline (what the live graph does, message for message):

1. The bag's ``odom``, ``sonar/range``, ``sonar/swath`` and ``plan`` messages go into
   :class:`~poam_ros.ingest.Ingest` with the numbers the ingest node reads off the same
   messages (:mod:`poam_ros.bags.decoding`), in data-time order: sensor messages by header
   stamp (a stamp behind its topic's newest keeps its place after that one, where the live
   ingest met it and dropped it), each plan after the data the graph had acted on when it
   was sent (the newest map, batch or pose sent before it, by the publishers' send times
   that MCAP keeps: in lockstep, the arrival it answers). The recorder's receive order
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
   terrain of the parameter file, as :class:`~poam_ros.mission.Mission` scores a run.

Samples after the last decision point (a survey stopped mid-leg) were never mapped live;
``tail`` decides: ``auto`` maps them only when the bag has no plans at all (a survey
without decision points has nothing else), ``map`` always, ``drop`` never.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from poam_ros.bags import decoding as dec
from poam_ros.bags.bag_reader import BagError, BagReader, ReadReport
from poam_ros.bags.message_types import MessageTypes
from poam_ros.ingest import Ingest, IngestConfig, SampleBatch
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.mapping.map_grid import MapGrid, MapLayers, predict_map
from poam_ros.mapping.metrics import evaluate_map, evaluation_points
from poam_ros.mission import MissionResult
from poam_ros.models import NumericalError, OnlineSparseGP, make_model
from poam_ros.models.samples import InvalidBatchError
from poam_ros.params import Params, param
from poam_ros.params.mission_setup import MissionSetup, mission_seeds
from poam_ros.workspace import Workspace, WorkspaceConfig

log = logging.getLogger(__name__)

POLL_PERIOD = 0.05  # s: the ingest node's poll timer
ODOMETRY, RANGE, CLOUD, PATH = ("nav_msgs/msg/Odometry", "sensor_msgs/msg/Range",
                                "sensor_msgs/msg/PointCloud2", "nav_msgs/msg/Path")
DIAGNOSTICS = "diagnostic_msgs/msg/DiagnosticArray"
# Counters in the ingest node's /diagnostics of what depends on its wall clock and DDS:
# where any is non-zero, the live batches cannot be reproduced from the sensor topics.
_TIMING_DEPENDENT = ("flushes_on_grace", "dropped.late", "dropped.no_pose",
                     "dropped.queue_overflow", "dropped.lost_in_transport")


@dataclass
class RemapConfig(Params):
    """Which topics feed the remap and how its updates are cut."""

    odom_topic: str = param("/odom", "vehicle odometry (nav_msgs/Odometry)")
    range_topic: str = param("/sonar/range", "echo sounder (sensor_msgs/Range)")
    swath_topic: str = param("/sonar/swath", "multibeam swaths (sensor_msgs/PointCloud2)")
    plan_topic: str = param("/plan", "plans (nav_msgs/Path): their ends cut the batches")
    map_topic: str = param("/map", "the live mapper's maps: update grouping and comparison")
    samples_topic: str = param("/samples", "the live ingest's batches (sensor_msgs/"
                                           "PointCloud2): the source with source=samples, "
                                           "else a check of the remap's own batches")
    source: str = param("sensors", "sensors: odometry and sonar through the ingest core; "
                                   "samples: the batches the live mapper received, as "
                                   "recorded", choices=("sensors", "samples"))
    diagnostics_topic: str = param("/diagnostics", "tells a simulator's bag")
    updates: str = param("auto", "map: the live mapper's updates, read from the recorded "
                                 "maps' stamps; batch: one update per batch; auto: map when "
                                 "the bag holds maps", choices=("auto", "map", "batch"))
    tail: str = param("auto", "samples after the last decision point: map, drop, or auto "
                              "(map only when the bag has no plans)",
                      choices=("auto", "map", "drop"))
    truth: str = param("auto", "score against the simulator's terrain: sim, none, or auto "
                               "(when the bag came from the simulator)",
                       choices=("auto", "sim", "none"))


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
    update_stamps: list[int]  # ns, data stamp of each update (as the live map's stamp)
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


def remap_bag(bag, setup: MissionSetup, ingest_config: IngestConfig,
              ingest_workspace: WorkspaceConfig | None = None,
              config: RemapConfig | None = None,
              on_update: Callable[[EpochRecord], None] | None = None) -> RemapResult:
    """Re-map ``bag`` (a path or :class:`BagReader`); see the module docstring.

    ``setup`` gives the mapping method and parameters (``setup.mapping``; its seed is
    derived from ``setup.mission.seed`` as the mission launcher derives the mapper's),
    the map grid and workspace, the mapper's settings and the terrain (for ground truth);
    ``ingest_config`` and ``ingest_workspace`` the sensor ingest's.

    Raises:
        BagError: the bag cannot be read, lacks the sensor topics, or holds them with
            another type than the stack's.
    """
    start = time.perf_counter()
    config = config or RemapConfig()
    reader = bag if isinstance(bag, BagReader) else BagReader(bag)
    check_topics(reader, config)
    types = MessageTypes()
    ingest = Ingest(ingest_config, Workspace.from_config(ingest_workspace)
                    if ingest_workspace is not None else None)
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
        from poam_ros.sim import terrain_from_config

        terrain = terrain_from_config(setup.terrain)
        eval_points = evaluation_points(workspace, setup.mission.eval_grid)
        truth = terrain.elevation(eval_points)

    seeds = mission_seeds(setup.mission.seed)
    model = make_model(setup.mapping.replace(seed=seeds["model"]))
    settings = setup.mapper_node
    records: list[EpochRecord] = []
    stamps: list[int] = []
    layers = None
    comparison = None
    compared = 0
    for group in groups:
        for batch in group:
            xy_z = batch.points if on_wire else dec.wire_samples(
                batch.points, ingest.config.float64_samples)
            try:
                model.add_data(xy_z[:, :2], xy_z[:, 2])
            except InvalidBatchError as error:
                notes.append(f"batch at {batch.stamp:.3f} s refused: {error}")
        try:
            report = model.update()
        except NumericalError as error:
            notes.append(f"update at {group[-1].stamp:.3f} s failed, map kept: {error}")
            continue
        if report.skipped:
            continue
        stamp = max(dec.seconds_to_nanoseconds(b.stamp) for b in group)
        layers = predict_map(model, grid, settings.std_includes_noise,
                             settings.publish_lengthscale)
        if stamp in live_maps:
            compared += 1
            comparison = _compare(live_maps, stamp, layers, compared)
        metrics = _score(model, eval_points, truth)
        record = EpochRecord(len(records), model.num_samples, **metrics,
                             update_time=report.total_time, inducing_time=report.inducing_time,
                             variational_time=report.variational_time,
                             training_time=report.training_time,
                             predict_time=layers.predict_time, num_inducing=report.num_inducing,
                             sim_time=stamp / 1e9, training_failure=report.training_failure)
        records.append(record)
        stamps.append(stamp)
        if on_update is not None:
            on_update(record)
    if not records:
        notes.append("no update: the bag gave the model no valid sample")
    if live_maps and comparison is None:
        notes.append(f"none of the {len(live_maps)} live map(s) has the data stamp of a "
                     f"remap update: no comparison (another update grouping?)")
    return RemapResult(model, grid, layers, records, batches, stamps, path,
                       Counter(ingest.dropped), read_report, notes, comparison, eval_points,
                       truth, terrain, workspace, time.perf_counter() - start, counts)


def check_topics(reader: BagReader, config: RemapConfig) -> None:
    """Raise :class:`BagError` where the bag lacks the topics the remap reads or holds
    them with another type than the stack's."""
    topics = reader.topics
    listing = ", ".join(f"{t.name} ({t.msgtype})" for t in sorted(topics.values(),
                                                                  key=lambda t: t.name))
    if config.source == "samples":
        if config.samples_topic not in topics:
            raise BagError(f"{reader.path} has no {config.samples_topic} ({CLOUD}) to map "
                           f"(source samples); it holds: {listing or 'no topics'}")
    elif config.odom_topic not in topics:
        raise BagError(f"{reader.path} has no {config.odom_topic} ({ODOMETRY}), which the "
                       f"remap needs; it holds: {listing or 'no topics'}")
    elif config.range_topic not in topics and config.swath_topic not in topics:
        raise BagError(f"{reader.path} has neither {config.range_topic} ({RANGE}) nor "
                       f"{config.swath_topic} ({CLOUD}): no soundings to map; it holds: "
                       f"{listing}")
    expected = {config.odom_topic: ODOMETRY, config.range_topic: RANGE,
                config.swath_topic: CLOUD, config.plan_topic: PATH, config.map_topic: CLOUD,
                config.diagnostics_topic: DIAGNOSTICS, config.samples_topic: CLOUD}
    for name, msgtype in expected.items():
        if name in topics and topics[name].msgtype != msgtype:
            stored = topics[name].msgtype or "a type it does not name"
            raise BagError(f"{reader.path}: {name} holds {stored}, but the stack reads "
                           f"{msgtype} there (pick another topic with the remap's topic "
                           f"options)")


def _ingest(reader: BagReader, types: MessageTypes, ingest: Ingest, config: RemapConfig,
            notes: list[str]):
    """Feed the sensor topics to ``ingest``; collect batches, poses, live map stamps."""
    wanted = {config.odom_topic, config.range_topic, config.swath_topic, config.plan_topic,
              config.map_topic, config.diagnostics_topic, config.samples_topic}
    from_samples = config.source == "samples"
    recorded: dict[int, np.ndarray] = {}  # the live ingest's batches: stamp ns -> points
    live_issues: Counter = Counter()  # the live ingest's timing-dependent decisions
    batches: list[SampleBatch] = []
    path: list[tuple[float, float, float]] = []
    counts: Counter = Counter()
    undecodable: Counter = Counter()
    live_maps: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # stamp ns -> (mean, std)
    sim_bag = False
    plans = 0
    last_poll = -math.inf
    # Pass 1: read and decode; sensor messages and plans are kept for pass 2.
    sensors: list[tuple] = []  # (order key ns, kind rank, sequence, topic, decoded, receive ns)
    newest: dict[str, int] = {}  # per topic, newest header stamp received so far
    acted: list[tuple[int, int]] = []  # (send time, data stamp) of odometry, maps, batches
    plan_messages: list[tuple[int, int, object, int]] = []  # (send time, seq, decoded, recv)
    behind: Counter = Counter()
    for sequence, message in enumerate(reader.messages(wanted)):
        topic = message.topic
        try:
            decoded = types.deserialize(message.data, message.msgtype)
        except Exception as error:  # noqa: BLE001 - damaged bytes: count, go on
            undecodable[topic] += 1
            log.debug("undecodable %s message: %s", topic, error)
            continue
        if topic in (config.odom_topic, config.range_topic, config.swath_topic):
            stamp = dec.stamp_nanoseconds(decoded.header.stamp)
            # A stamp behind its topic's newest goes where the live ingest met it (just
            # after that one) and is dropped there as out of order, as live.
            if stamp < newest.get(topic, stamp):
                behind[topic] += 1
            key = max(stamp, newest.get(topic, stamp))
            newest[topic] = key
            if topic == config.odom_topic:
                acted.append((message.publish_time or message.log_time, key))
            sensors.append((key, 0 if topic == config.odom_topic else 1, sequence, topic,
                            decoded, message.log_time))
        elif topic == config.plan_topic:
            plans += 1
            plan_messages.append((message.publish_time or message.log_time, sequence, decoded,
                                  message.log_time))
        elif topic == config.map_topic:
            stamp = dec.stamp_nanoseconds(decoded.header.stamp)
            if decoded.width * decoded.height:
                acted.append((message.publish_time or message.log_time, stamp))
                try:
                    fields = dec.cloud_fields(decoded)
                    live_maps[stamp] = (fields["mean"], fields["std"])
                except (ValueError, KeyError) as error:
                    notes.append(f"a live map could not be read: {error}")
        elif topic == config.diagnostics_topic:
            for status in decoded.status:
                values = {kv.key: kv.value for kv in status.values}
                sim_bag = sim_bag or "sim_time" in values
                for key in _TIMING_DEPENDENT:
                    try:
                        live_issues[key] = max(live_issues[key], int(values.get(key, 0)))
                    except ValueError:
                        pass
        elif topic == config.samples_topic:
            stamp = dec.stamp_nanoseconds(decoded.header.stamp)
            acted.append((message.publish_time or message.log_time, stamp))
            try:
                points = dec.cloud_points(decoded)
            except ValueError as error:
                notes.append(f"a recorded samples batch could not be read: {error}")
                continue
            recorded[stamp] = points
            wire64 = dec.cloud_is_float64(decoded)
            if wire64 != ingest.config.float64_samples:
                # The live mapper got what the live ingest sent: its precision, not the file's.
                ingest.config = ingest.config.replace(float64_samples=wire64)
                notes.append(f"the live ingest sent {'float64' if wire64 else 'float32'} "
                             f"samples: so does the remap (float64_samples: "
                             f"{str(wire64).lower()})")
            if from_samples:
                batches.append(SampleBatch(stamp / 1e9, points, "recorded"))
    # A plan acts after the data the graph had acted on when it was sent (by the send
    # times, one machine's clock): in lockstep, the arrival it answers. Receive times would
    # not do: a latched plan reaches a recorder that subscribes late long after it was sent.
    acted.sort()
    sent_times = [sent for sent, _ in acted]
    newest_acted = list(itertools.accumulate((stamp for _, stamp in acted), max))
    for sent, sequence, decoded, received in plan_messages:
        index = bisect.bisect_right(sent_times, sent)
        floor = newest_acted[index - 1] if index else -1
        sensors.append((floor, 2, sequence, config.plan_topic, decoded, received))
    # Pass 2: the ingest in data-time order. The recorder's receive order across topics is
    # not the live ingest's callback order (each DDS reader is served on its own), but its
    # batches do not depend on that order, only on what each topic delivered in order.
    sensors.sort(key=lambda item: item[:3])
    now = -math.inf
    for _, _, _, topic, decoded, received in sensors:
        now = max(now, received / 1e9)  # the receive clock stands for the node's wall clock
        if now - last_poll >= POLL_PERIOD:
            ingest.poll(now)
            last_poll = now
        counts[topic] += 1
        if topic == config.odom_topic:
            t, x, y, z, yaw = dec.odometry_pose(decoded)
            path.append((x, y, yaw))
            if not from_samples:
                ingest.add_pose(t, x, y, z, yaw, now, decoded.header.frame_id,
                                decoded.child_frame_id)
        elif from_samples:
            continue
        elif topic == config.range_topic:
            ingest.add_range(dec.stamp_seconds(decoded.header.stamp), decoded.range,
                             decoded.min_range, decoded.max_range, now,
                             decoded.header.frame_id)
        elif topic == config.swath_topic:
            try:
                points = dec.cloud_points(decoded)
            except ValueError as error:
                ingest.drop_malformed(f"sonar/swath: {error}")
            else:
                ingest.add_swath(dec.stamp_seconds(decoded.header.stamp), points, now,
                                 decoded.header.frame_id)
        elif topic == config.plan_topic:
            ingest.set_plan(dec.path_waypoints(decoded), dec.stamp_seconds(decoded.header.stamp),
                            now, decoded.header.frame_id)
        batches.extend(ingest.take_batches())
    for topic, count in behind.items():
        notes.append(f"{count} {topic} message(s) stamped earlier than the one before them "
                     f"(timestamps going backwards): the ingest drops them, as live")
    if from_samples:
        if not recorded:
            raise BagError(f"{reader.path} has no {config.samples_topic} batches to map "
                           f"(source samples); source sensors maps its odometry and sonar")
        return batches, np.array(path).reshape(-1, 3), counts, live_maps, sim_bag, True
    ingest.poll(math.inf)  # the end of the bag: grace periods and pending readings expire
    batches.extend(ingest.take_batches())
    if recorded:
        _check_batches(batches, recorded, ingest.config.float64_samples, notes)
    issues = {key: count for key, count in live_issues.items() if count}
    if issues:
        notes.append("the live ingest's decisions depended on its timing ("
                     + ", ".join(f"{key} {count}" for key, count in issues.items())
                     + "): the remap, which has every recorded message, may cut other "
                       "batches (source samples maps exactly what the live mapper got)")
    tail = ingest.batch_size
    if tail:
        if config.tail == "map" or (config.tail == "auto" and not plans):
            # Ingest has no public flush of an unfinished batch; the size rule's cut is it.
            ingest._flush(math.inf, "end")  # noqa: SLF001
            batches.extend(ingest.take_batches())
        else:
            notes.append(f"{tail} sample(s) after the last decision point left out, as the "
                         f"live mapper never got them (tail: map to include them)")
    for topic, count in undecodable.items():
        notes.append(f"{count} {topic} message(s) could not be decoded and were skipped")
    if not counts[config.odom_topic]:
        notes.append(f"no readable {config.odom_topic} message: no sample can be placed")
    return batches, np.array(path).reshape(-1, 3), counts, live_maps, sim_bag, False


def _check_batches(batches: list[SampleBatch], recorded: dict[int, np.ndarray],
                   float64: bool, notes: list[str]) -> None:
    """Note where the remap's batches differ from the live ingest's recorded ones."""
    differ = missing = 0
    for batch in batches:
        live = recorded.get(dec.seconds_to_nanoseconds(batch.stamp))
        if live is None:
            missing += 1
        elif live.shape != batch.points.shape or not np.array_equal(
                live, dec.wire_samples(batch.points, float64)):
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
        stamp = dec.seconds_to_nanoseconds(batch.stamp)
        index = int(np.searchsorted(map_stamps, stamp))
        key = map_stamps[index] if index < len(map_stamps) else -(len(order) + 1)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(batch)
    return [groups[key] for key in order]


def _score(model: OnlineSparseGP, eval_points, truth) -> dict:
    keys = ("smse", "msll", "nlpd", "rmse", "mae")
    if truth is None:
        return dict.fromkeys(keys, math.nan)
    mean, std = model.predict(eval_points, include_noise=True)
    try:
        return evaluate_map(truth, mean, std, model.buffer.y).as_dict()
    except ValueError as error:  # constant targets after one batch: MSLL undefined
        log.debug("metrics undefined: %s", error)
        return dict.fromkeys(keys, math.nan)


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


def plot_map(result: RemapResult, path, title: str = "") -> Path:
    """Mean and std of the final map with the vehicle's path and the inducing inputs (for
    bags without ground truth; :func:`poam_ros.figures.plot_mission` otherwise)."""
    import matplotlib.pyplot as plt

    from poam_ros.figures import save_figure  # selects the file-only backend

    grid, layers = result.grid, result.layers
    x, y = grid.coordinates()
    extent = (x.min() - grid.resolution / 2, x.max() + grid.resolution / 2,
              y.min() - grid.resolution / 2, y.max() + grid.resolution / 2)
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6), constrained_layout=True)
    for ax, (name, values, cmap) in zip(axes, [("predicted mean", layers.mean, "terrain"),
                                               ("standard deviation", layers.std, "viridis")]):
        shown = ax.imshow(values, origin="lower", extent=extent, cmap=cmap)
        fig.colorbar(shown, ax=ax, shrink=0.85)
        ax.set_title(name)
        ax.set_xlabel("x [m]")
    axes[0].set_ylabel("y [m]")
    if len(result.path):
        axes[0].plot(result.path[:, 0], result.path[:, 1], color="k", lw=0.6, alpha=0.7)
    axes[1].plot(*result.model.inducing_inputs.T, "+", color="r", ms=3)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)
