"""The mapper node: POAM's online sparse GP behind the graph's ``samples`` and ``map`` topics.

Callbacks only convert and buffer. A worker thread owned by the node runs ``add_data`` and
``update()`` on the batches that arrived since its last update (all of them merged into one
update: one step of its :class:`~poam_ros.mapping.loop.MappingLoop`), predicts the map on the
grid and publishes it, so that subscriptions, services and uncertainty queries stay
responsive during an update. The worker alone touches the live model; after each successful
update and its map it hands a deep copy (the *served* model,
:meth:`~poam_ros.mapping.loop.MappingLoop.snapshot`) to the callbacks, which answer queries,
``~/save`` and ``~/export`` from it. A query during an update is therefore answered by the
last good model, never by one older than a map already published, and a failed update leaves
the last good map published.

Maps are stamped with the newest samples stamp they include (the data time, or the clock
when the samples carry none). A batch that adds nothing (empty: every sounding of the leg
fell outside the workspace; or every sample refused) republishes the current map with its
stamp, as the ROS-free mission scores such an epoch, so a lockstep planner waiting for the
leg's map goes on. /diagnostics reports, besides the model, the latency from a
batch's arrival to its map and its parts (queue wait, update, map prediction, the rest).

Topics (names relative, remappable):

| topic                  | type                            | direction | QoS                  |
|------------------------|---------------------------------|-----------|----------------------|
| samples                | sensor_msgs/PointCloud2         | in        | reliable, depth 10   |
| uncertainty/query      | sensor_msgs/PointCloud2         | in        | reliable, depth 10   |
| map                    | sensor_msgs/PointCloud2         | out       | latched (TL, 1)      |
| map/std                | nav_msgs/OccupancyGrid          | out       | latched (TL, 1)      |
| map/<channel>/mean     | nav_msgs/OccupancyGrid          | out       | latched (TL, 1)      |
| map/<channel>/std      | nav_msgs/OccupancyGrid          | out       | latched (TL, 1)      |
| map/inducing           | sensor_msgs/PointCloud2         | out       | latched (TL, 1)      |
| map/memory             | sensor_msgs/PointCloud2         | out       | latched (TL, 1)      |
| map/evaluation         | sensor_msgs/PointCloud2         | out       | latched (TL, 1)      |
| uncertainty/response   | sensor_msgs/PointCloud2         | out       | reliable, depth 10   |
| /diagnostics           | diagnostic_msgs/DiagnosticArray | out       | reliable, depth 10   |

Services: ``~/save`` (std_srvs/Trigger), ``~/reset`` (Trigger), ``~/pause`` (SetBool),
``~/export`` (Trigger): the published map's model on the map grid as a georeferenced,
cloud-optimised GeoTIFF at ``export_path`` (mean, std, learned lengthscale, sample density;
:mod:`poam_ros.mapping.survey_product`) in the CRS of the map frame's anchor (``geo.*``),
refused without an anchor or a map. Like ``~/save`` it runs beside the worker, on the
served model, and answers with the file's name. At start the node deletes the temporaries
that saves to ``save_path`` killed mid-write left beside it; a ``state_file`` it cannot load
stops the start with one line naming the file.

Crash journal (``journal.*``, :mod:`poam_ros.mapping.persistence`): every samples message the
node accepts is journaled as it arrives and the model autosaved every
``journal.autosave_period``; a start after a process that did not shut down in order (SIGKILL,
out of memory, a power loss) resumes its map (it wins over ``state_file``); an orderly shutdown
removes the journal, so the next start begins a new map: ``~/save`` keeps a map.

Parameters: ``mapping.*`` (:class:`MappingConfig`) take effect when a model is created: at
start and on ``~/reset`` (a model resumed from ``state_file`` keeps the settings saved with
it, except the device). ``grid.*`` (:class:`MapGridConfig`), ``workspace.*`` (the map's
default extent and mask; a ``workspace.geojson`` file in lat/lon is placed with the anchor
``geo.*``, and refused without one), ``map_frame``, ``save_path``, ``export_path``,
``publish_lengthscale`` and ``std_includes_noise`` apply at once (the map is republished);
``state_file``, ``diagnostics_period``, ``evaluation_grid``, ``torch_threads``, ``journal.*``
and ``geo.*`` (the map frame's anchor, :class:`GeoConfig`) are read-only.

Channels (``channels``, read-only: the ingest's, which ``poam-ros`` passes): the samples carry a
field per channel besides z (NaN where not measured), the model maps D = 1 + C outputs
(:func:`~poam_ros.mapping.channels.survey_model`: ``poam-mt`` or ``cmogp``), the map adds
``mean_<channel>`` and ``std_<channel>`` fields, each channel has its ``map/<channel>/*``
grids, uncertainty answers carry the channels' covariance (``cov_<d>_<e>``,
:meth:`~poam_ros.mapping.loop.MappingLoop.uncertainty`) and /diagnostics each channel's
baseline and the model's per-channel noise and correlations; the crash journal records every
channel's values. Without channels everything is as above.

With ``evaluation_grid`` set, each map is followed by ``map/evaluation``, stamped as the
map: the same model's mean and std of a new measurement, float64, at the mission's
evaluation points, which is what :class:`~poam_ros.mission.Mission` scores, so that a
monitor with the ground truth (``poam-ros sim``) scores the live maps like for like.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import OccupancyGrid
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header
from std_srvs.srv import SetBool, Trigger

from poam_ros import messages as msg
from poam_ros.diagnostics import MapperStatus
from poam_ros.geo import GeoConfig, GeoError, GeoReference, resolve_workspace
from poam_ros.mapping.channels import channel_names, check_method, survey_model
from poam_ros.mapping.journal import JournalConfig
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid, MapGridConfig
from poam_ros.mapping.metrics import TargetBaseline, evaluation_points
from poam_ros.mapping.persistence import MapPersistence, OpenedMap
from poam_ros.mapping.survey_product import export_map
from poam_ros.models import (
    MappingConfig,
    ModelNotReadyError,
    NumericalError,
    OnlineSparseGP,
    StateFileError,
    UpdateReport,
    resolve_device,
)
from poam_ros.params import ConfigError
from poam_ros.params.node_settings import MapperSettings
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.parameters import (
    add_config_callback,
    declare_config,
    proposed_config,
    read_config,
)
from poam_ros.ros.run import StartingNode, run_node
from poam_ros.workspace import Workspace, WorkspaceConfig

# Rejections the node counts itself, beside the model's (non-finite, duplicate, malformed).
WRONG_FRAME = "wrong_frame"
UNREADABLE_MESSAGE = "unreadable_message"
LATENCY_WINDOW = 20  # updates over which the median latency is reported
SNAPSHOT_WAIT = 10.0  # s a query waits at most for the model of a map just published
SHUTDOWN_WAIT = 10.0  # s destroy_node waits for an update in progress


@dataclass
class QueuedBatch:
    """A samples message as the callback queued it for the worker."""

    xy: np.ndarray  # (N, 2) m
    z: np.ndarray  # (N,); (N, 1 + C) with channels, depth first, NaN where not measured
    stamp: int  # ns, the message's header stamp (the data time of its samples)
    arrival: float  # time.monotonic() when the message reached the callback


@dataclass
class _Status:
    """What /diagnostics reports; written by the worker and callbacks under the node lock."""

    updates: int = 0
    failures: int = 0
    last_failure: str = ""
    failed: bool = False  # the latest update attempt failed
    report: UpdateReport | None = None
    num_samples: int = 0
    num_inducing: int = 0
    device: str = ""
    method: str = ""
    rejections: Counter = field(default_factory=Counter)  # the node's own reasons
    model_rejections: Counter = field(default_factory=Counter)  # the model's, copied
    queries: int = 0
    latency: float = float("nan")
    queue_wait: float = float("nan")
    map_time: float = float("nan")
    overhead: float = float("nan")
    latencies: deque = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    map_stamp: int = 0  # ns, header stamp of the last map published
    # of the samples the model holds (MSLL baseline); with channels, one per channel
    targets: TargetBaseline | list[TargetBaseline | None] | None = None
    autosaves: int = 0
    autosave_time: float = float("nan")  # s, the last autosave's


class MapperNode(StartingNode):
    """POAM mapping node; see the module docstring for its interface."""

    _worker: threading.Thread | None = None
    _persistence: MapPersistence | None = None

    def __init__(self, node_name: str = "mapper", **kwargs) -> None:
        super().__init__(node_name, **kwargs)

    def _start(self, node_name: str) -> None:
        self._mapping = declare_config(self, MappingConfig, "mapping")
        grid_config = declare_config(self, MapGridConfig, "grid")
        self._settings = declare_config(self, MapperSettings,
                                        read_only=("state_file", "diagnostics_period",
                                                   "evaluation_grid", "torch_threads",
                                                   "channels"))
        # The samples' channels fix the model's outputs and the map's layers: set once.
        self._channels = tuple(self._settings.channels)
        check_method(self._mapping, self._channels)
        journal_config = declare_config(
            self, JournalConfig, "journal", read_only=[s.name for s in JournalConfig.specs()])
        self._georeference = GeoReference.from_config(declare_config(
            self, GeoConfig, "geo", read_only=[s.name for s in GeoConfig.specs()]))
        workspace_config = resolve_workspace(
            declare_config(self, WorkspaceConfig, "workspace"), self._georeference)
        self._settings.use_torch_threads()
        resolve_device(self._mapping.device)  # a device torch can use, or ConfigError
        self._grid = _make_grid(grid_config, workspace_config)
        # Samples outside its bounding box are refused before they reach the model.
        self._workspace = Workspace.from_config(workspace_config)
        self._evaluation = _evaluation_points(self._settings, workspace_config)
        self.add_on_set_parameters_callback(self._vet_parameters)
        add_config_callback(self, MappingConfig, self._apply_mapping, "mapping")
        add_config_callback(self, MapGridConfig, self._apply_grid, "grid")
        add_config_callback(self, WorkspaceConfig, self._apply_grid, "workspace")
        add_config_callback(self, MapperSettings, self._apply_settings)

        # _lock guards everything the worker shares with callbacks; _publish_lock orders map
        # publications against ~/reset (taken first when both are needed).
        self._lock = threading.Condition()
        self._publish_lock = threading.Lock()
        self._incoming: list[QueuedBatch] = []
        self._paused = False
        self._reset_requested = False
        self._republish = False
        self._stopping = False
        self._generation = 0  # bumped by ~/reset: results of older generations are dropped
        self._served: MappingLoop | None = None  # a copy of the published map's model
        self._snapshot_due = False  # a map is out whose model is not yet _served
        # Maps are stamped with the newest samples stamp they include (the data time), so
        # that a planner can tell a map made after its goal was reached; 0: none yet.
        self._data_stamp = 0
        self._status = _Status(device=str(resolve_device(self._mapping.device)),
                               method=self._mapping.method)
        # The worker's own loop and model. Built now rather than at the first batch: the
        # first model of a process costs seconds of one-off initialisation, which belongs to
        # start-up.
        self._persistence = MapPersistence(journal_config, self._settings.save_path,
                                           self._channels, _ros_logger(self))
        opened = self._persistence.open(self._mapping, self._settings.state_file)
        self._loop = MappingLoop(opened.model, workspace=self._workspace)
        self._model_stale = False  # a reset dropped the model and making the next failed
        self._open(opened)

        self._map_pub = self.create_publisher(PointCloud2, "map", qos.LATCHED)
        self._std_pub = self.create_publisher(OccupancyGrid, "map/std", qos.LATCHED)
        self._channel_pubs = {name: tuple(self.create_publisher(
            OccupancyGrid, f"map/{name}/{layer}", qos.LATCHED) for layer in ("mean", "std"))
            for name in self._channels}
        self._inducing_pub = self.create_publisher(PointCloud2, "map/inducing", qos.LATCHED)
        self._memory_pub = self.create_publisher(PointCloud2, "map/memory", qos.LATCHED)
        self._evaluation_pub = self.create_publisher(PointCloud2, "map/evaluation",
                                                     qos.LATCHED)
        self._response_pub = self.create_publisher(PointCloud2, "uncertainty/response",
                                                   qos.QUERY)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        self.create_subscription(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        # Queries and services each get a group, so that a multi-threaded executor runs a
        # prediction for a query beside incoming samples and service calls.
        self.create_subscription(PointCloud2, "uncertainty/query", self._on_query, qos.QUERY,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/save", self._on_save, callback_group=services)
        self.create_service(Trigger, "~/reset", self._on_reset, callback_group=services)
        self.create_service(SetBool, "~/pause", self._on_pause, callback_group=services)
        self.create_service(Trigger, "~/export", self._on_export, callback_group=services)
        self.create_timer(self._settings.diagnostics_period, self._publish_diagnostics)
        if self._persistence.journal is not None and journal_config.sync_period > 0:
            self.create_timer(journal_config.sync_period, self._persistence.sync,
                              callback_group=MutuallyExclusiveCallbackGroup())

        self._worker = threading.Thread(target=self._work, name=f"{node_name}_worker",
                                        daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"mapping with {self._mapping.method} on {self._status.device}, "
            f"{self._grid.shape[0]} x {self._grid.shape[1]} map grid in "
            f"'{self._settings.map_frame}'")

    def _open(self, opened: OpenedMap) -> None:
        """Serve a model loaded at start (its map is due at once) and queue the journal's
        batches to replay as the first update."""
        model = opened.model
        self._data_stamp = opened.stamp
        if opened.loaded:
            self._served = self._loop.snapshot()
            self._republish = True
            self._status.num_samples = model.num_samples
            self._status.num_inducing = model.inducing.shape[0]
            self._status.device, self._status.method = str(model.device), model.method
        if opened.replay is not None:
            xy, z, stamp = opened.replay
            self._incoming.append(QueuedBatch(xy, z, stamp, time.monotonic()))

    # ---------------------------------------------------------------- parameters
    def _vet_parameters(self, parameters) -> SetParametersResult:
        """Checks across configs and against the machine, beyond each dataclass's own."""
        try:
            mapping = proposed_config(self, MappingConfig, parameters, "mapping")
            resolve_device(mapping.device)
            check_method(mapping, self._channels)
            _make_grid(proposed_config(self, MapGridConfig, parameters, "grid"),
                       resolve_workspace(proposed_config(self, WorkspaceConfig, parameters,
                                                         "workspace"), self._georeference))
        except (ConfigError, ValueError) as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_mapping(self, config: MappingConfig) -> None:
        with self._lock:
            self._mapping = config
        self.get_logger().info("mapping.* changed: applies from the next ~/reset")

    def _apply_grid(self, _config) -> None:
        workspace = resolve_workspace(read_config(self, WorkspaceConfig, "workspace"),
                                      self._georeference)
        grid = _make_grid(read_config(self, MapGridConfig, "grid"), workspace)
        with self._lock:
            self._grid = grid
            self._workspace = Workspace.from_config(workspace)
            self._evaluation = _evaluation_points(self._settings, workspace)
            self._republish = True
            self._lock.notify_all()

    def _apply_settings(self, settings: MapperSettings) -> None:
        with self._lock:
            self._settings = settings
            self._republish = True
            self._lock.notify_all()

    # ---------------------------------------------------------------- callbacks
    def _on_samples(self, message: PointCloud2) -> None:
        arrival = time.monotonic()
        with self._lock:
            frame = self._settings.map_frame
        if message.header.frame_id != frame:
            self._reject(WRONG_FRAME, f"samples in frame '{message.header.frame_id}', "
                                      f"expected '{frame}'")
            return
        try:
            xy, z = msg.cloud_to_samples(message, self._channels)
        except ValueError as error:
            self._reject(UNREADABLE_MESSAGE, f"unreadable samples cloud: {error}")
            return
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        with self._lock:  # an empty batch too: it ends a leg, and lockstep waits for its map
            self._persistence.append(xy, z, stamp)  # in the queue's order, before any update
            self._incoming.append(QueuedBatch(xy, z, stamp, arrival))
            self._lock.notify_all()

    def _reject(self, reason: str, text: str) -> None:
        with self._lock:
            self._status.rejections[reason] += 1
        self.warn_throttled(reason, text)

    def _on_query(self, message: PointCloud2) -> None:
        """Predictive std of a new measurement at the query's points (with channels, their
        covariance), from the served model; an empty response means there is no model yet
        (or the query was unusable)."""
        served = self._served_model()
        with self._lock:
            frame = self._settings.map_frame
            self._status.queries += 1
        xy, spread = np.empty((0, 2)), np.empty(0)
        if message.header.frame_id != frame:
            self.warn_throttled("query_frame", f"query in frame '{message.header.frame_id}', "
                                               f"expected '{frame}': answered empty")
        elif served is not None:
            try:
                points = msg.cloud_to_query(message)
                # The paper's planner scores the predictive distribution of a measurement
                # (of every channel, with several).
                spread = served.uncertainty(points)
                xy = points
            except (ValueError, NumericalError, ModelNotReadyError) as error:
                self.warn_throttled("query_failed", f"query answered empty: {error}")
        self._response_pub.publish(cv.response_to_cloud(
            Header(stamp=message.header.stamp, frame_id=frame), xy, spread))

    def _on_save(self, _request, response):
        served = self._served_model()
        with self._lock:
            path = Path(self._settings.save_path).expanduser()
        if served is None:
            return self._answer(response, False, "no map to save yet")
        model = served.model
        try:
            model.save(path)
        except OSError as error:
            return self._answer(response, False, f"cannot save to {path}: {error}")
        return self._answer(response, True, f"saved the model of the published map "
                                            f"({model.num_samples} samples, "
                                            f"{model.inducing.shape[0]} inducing inputs) to "
                                            f"{path}")

    def _on_export(self, _request, response):
        """The served model's map on the map grid as a GeoTIFF at ``export_path``."""
        anchor = self._georeference
        if anchor is None:
            return self._answer(response, False, "no geodetic anchor (geo.anchor: none): the "
                                                 "map has no place on the Earth to export; "
                                                 "set geo.anchor to latlon or projected")
        served = self._served_model()
        with self._lock:
            path = Path(self._settings.export_path).expanduser()
            grid, include_noise = self._grid, self._settings.std_includes_noise
        if served is None:
            return self._answer(response, False, "no map to export yet")
        model = served.model
        try:
            export_map(path, model, grid, anchor, include_noise)
        except (GeoError, ModelNotReadyError, NumericalError) as error:
            return self._answer(response, False, f"cannot export to {path}: {error}")
        rows, cols = grid.shape
        return self._answer(response, True, f"exported the published map ({rows} x {cols} "
                                            f"cells of {grid.resolution:g} m, "
                                            f"{model.num_samples} samples) to {path} in "
                                            f"{anchor.crs.name}")

    def _on_reset(self, _request, response):
        """Drop the model, the map and buffered batches; later samples start a new model."""
        with self._publish_lock:
            with self._lock:
                self._generation += 1
                dropped = len(self._incoming)
                self._incoming.clear()
                self._served, self._snapshot_due = None, False
                self._reset_requested = True
                self._status = _Status(device=str(resolve_device(self._mapping.device)),
                                       method=self._mapping.method,
                                       queries=self._status.queries)
                self._persistence.new_map()
                self._lock.notify_all()
            self._publish_empty_map()
        return self._answer(response, True, f"map reset ({dropped} buffered batches dropped); "
                                            f"the next samples start a new "
                                            f"{self._mapping.method} model")

    def _answer(self, response, success: bool, message: str):
        """A service's response, logged when it did something."""
        response.success, response.message = success, message
        if success:
            self.get_logger().info(message)
        return response

    def _on_pause(self, request, response):
        with self._lock:
            self._paused = bool(request.data)
            buffered = len(self._incoming)
            self._lock.notify_all()
        response.success = True
        response.message = (f"paused: incoming batches are buffered ({buffered} so far)"
                            if request.data else
                            f"resumed: {buffered} buffered batches go into the next update")
        return response

    # ---------------------------------------------------------------- worker
    def _work(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._stopping or self._reset_requested
                                    or self._republish or (self._incoming and not self._paused))
                if self._stopping:
                    return
                reset, self._reset_requested = self._reset_requested, False
                batches = [] if self._paused else self._incoming
                if not self._paused:
                    self._incoming = []
                republish, self._republish = self._republish, False
                generation, mapping = self._generation, self._mapping
                # The journal's segment boundary at exactly the batches taken: the model
                # holds all before it once they are in, and is then autosaved with its number.
                checkpoint = self._persistence.checkpoint() if batches else None
            taken = time.monotonic()
            try:
                if reset:
                    self._data_stamp = 0
                    self._model_stale = True  # batches wait for a new model if making it fails
                    self._new_model(mapping)
                if batches:
                    if (self._update(batches, generation, mapping, taken)
                            and checkpoint is not None):
                        self._autosave(checkpoint, generation)
                elif republish:
                    self._republish_served(generation)
            except Exception as error:  # noqa: BLE001 - the node must outlive any failure
                with self._lock:
                    self._snapshot_due = False  # no copy is coming: serve the last one
                    self._lock.notify_all()
                self._fail(f"{type(error).__name__}: {error}")
                self.get_logger().error(f"mapping failed: {error!r}")

    def _new_model(self, mapping: MappingConfig) -> None:
        """The loop takes a new model (``mapping.*`` as they are now) after a reset."""
        self._loop.model = survey_model(mapping, self._channels)
        self._model_stale = False

    def _update(self, batches: list[QueuedBatch], generation: int, mapping: MappingConfig,
                taken: float) -> bool:
        """One step of the mapping loop on ``batches`` and its map; whether it succeeded."""
        if self._model_stale:  # making it at the reset failed: try again
            self._new_model(mapping)
        loop = self._loop
        with self._lock:
            loop.workspace = self._workspace
        step = loop.step((batch.xy, batch.z) for batch in batches)
        for error in step.refused:  # counted by the model as malformed_batch
            self.get_logger().warning(f"batch refused: {error}")
        if step.recovery is not None:
            self.get_logger().warning(step.recovery)
        if step.set_aside:
            self._rebase_journal(generation)
        if step.failure is not None:
            self._fail(f"update failed, kept the last good map: {step.failure}", loop.model)
            self.get_logger().error(f"model update failed (the last good map stays): "
                                    f"{step.failure}")
            return False
        report = step.report
        self._data_stamp = max(self._data_stamp, *(batch.stamp for batch in batches))
        if report.skipped:  # nothing new: empty batches, or every sample refused
            self._record(loop.model, report)
            # The map stands for these batches too: republished with their stamp, as the
            # ROS-free mission scores an epoch without samples, so a lockstep planner goes on.
            if loop.model.ready and self._publish_model(loop, generation) is not None:
                self._publish_evaluation(loop, generation)
            return True
        if report.training_failure:
            self.get_logger().warning(f"hyper-parameter training failed, kept the previous "
                                      f"values: {report.training_failure}")
        published = self._publish_model(loop, generation, report)
        if published is None:
            return False
        # The copy that serves queries and ~/save is made after the map is out, so that it
        # costs the map no latency; a query in the meantime waits for it (_served_model).
        served = loop.snapshot()
        newest = max(batch.arrival for batch in batches)
        latency = published - newest
        with self._lock:
            if generation == self._generation:
                self._served, self._snapshot_due = served, False
                self._lock.notify_all()
            status = self._status
            status.latency, status.queue_wait = latency, taken - newest
            status.overhead = latency - status.queue_wait - report.total_time - status.map_time
            status.latencies.append(latency)
        self._persistence.updated()
        self._publish_evaluation(loop, generation)
        self._publish_diagnostics()
        return True

    def _rebase_journal(self, generation: int) -> None:
        """Samples were set aside: the journal's base moves past them, and the batches queued
        since the update began (journaled before that boundary) follow it again; under the
        lock, so that no batch arrives in between."""
        model = self._loop.model
        with self._lock:
            if generation != self._generation or self._stopping:
                return
            checkpoint = self._persistence.rebase(
                model, self._data_stamp, ((b.xy, b.z, b.stamp) for b in self._incoming))
        if checkpoint is not None:
            self._autosave(checkpoint, generation)

    def _autosave(self, checkpoint: int, generation: int) -> None:
        """Autosave the live model, which holds every batch before ``checkpoint``, unless a
        reset or the shutdown came since."""
        with self._lock:
            if generation != self._generation or self._stopping:
                return
        seconds = self._persistence.autosave(self._loop.model, checkpoint)
        if seconds is not None:
            with self._lock:
                self._status.autosaves += 1
                self._status.autosave_time = seconds

    def _republish_served(self, generation: int) -> None:
        """The map again (the grid or the publishing options changed, or a model was loaded
        at start), from the served model: the published map's, not the live one, which may
        hold samples pending or set aside since."""
        with self._lock:
            served = self._served
        if served is not None:
            self._publish_model(served, generation)

    def _served_model(self) -> MappingLoop | None:
        """The loop over the model of the newest published map, for queries, ~/save and
        ~/export: waits while the worker copies it (milliseconds), so no answer comes from a
        model older than a map the asker may have seen."""
        with self._lock:
            self._lock.wait_for(lambda: not self._snapshot_due or self._stopping,
                                timeout=SNAPSHOT_WAIT)
            return self._served

    def _publish_model(self, loop: MappingLoop, generation: int,
                       report: UpdateReport | None = None) -> float | None:
        """Predict the map with ``loop``'s model and publish it; returns the time.monotonic()
        after publishing, None when a reset made the result stale. With a ``report`` (a new
        model, not a republication) queries wait from now until its copy is served."""
        with self._lock:
            grid, settings = self._grid, self._settings
        layers = loop.layers(grid, settings.std_includes_noise, settings.publish_lengthscale)
        stamp = (cv.nanoseconds_to_time(self._data_stamp) if self._data_stamp
                 else self.get_clock().now().to_msg())
        header = Header(stamp=stamp, frame_id=settings.map_frame)
        grid_x, grid_y = grid.coordinates()
        cloud = cv.map_to_cloud(header, grid_x, grid_y, layers.mean, layers.std,
                                layers.lengthscale, self._channels, layers.channel_means,
                                layers.channel_stds)
        std_grid = cv.grid_from_array(header, layers.std, resolution=grid.resolution,
                                      origin=grid.origin)
        channel_grids = [cv.grid_from_array(header, layer, resolution=grid.resolution,
                                            origin=grid.origin)
                         for pair in zip(layers.channel_means, layers.channel_stds)
                         for layer in pair]
        inducing_cloud = cv.inducing_to_cloud(header, layers.inducing, layers.inducing_mean)
        memory = getattr(loop.model, "memory_samples", None)  # dual-gp: (xy, z) of its memory
        memory_cloud = None if memory is None else cv.samples_to_cloud(header, *memory())
        with self._publish_lock:
            with self._lock:
                if generation != self._generation or self._stopping:
                    return None
                self._status.map_stamp = msg.time_to_nanoseconds(stamp)
                if report is not None:
                    self._snapshot_due = True
                    self._record(loop.model, report, layers.predict_time)
            self._map_pub.publish(cloud)
            self._std_pub.publish(std_grid)
            for publisher, channel_grid in zip(self._channel_publishers(), channel_grids):
                publisher.publish(channel_grid)
            self._inducing_pub.publish(inducing_cloud)
            if memory_cloud is not None:
                self._memory_pub.publish(memory_cloud)
            return time.monotonic()

    def _publish_evaluation(self, loop: MappingLoop, generation: int) -> None:
        """``map/evaluation`` of the map just published (after its served copy, so that
        it delays no query), stamped as that map."""
        with self._lock:
            points, frame = self._evaluation, self._settings.map_frame
            stamp = self._status.map_stamp
        if points is None:
            return
        mean, std = loop.evaluation(points)
        header = Header(stamp=cv.nanoseconds_to_time(stamp), frame_id=frame)
        cloud = cv.evaluation_to_cloud(header, points, mean, std, self._channels)
        with self._publish_lock:
            with self._lock:
                if generation != self._generation or self._stopping:
                    return
            self._evaluation_pub.publish(cloud)

    def _record(self, model: OnlineSparseGP, report: UpdateReport,
                map_time: float = float("nan")) -> None:
        with self._lock:
            status = self._status
            status.updates += 0 if report.skipped else 1
            status.failed = False
            status.report = report
            status.map_time = map_time
            status.num_samples = model.num_samples
            status.num_inducing = model.inducing.shape[0] if model.ready else 0  # also if skipped
            if model.num_samples:
                status.targets = _target_baselines(model.buffer.y)
            status.device, status.method = str(model.device), model.method
            status.model_rejections = Counter(model.rejections)

    def _fail(self, text: str, model: OnlineSparseGP | None = None) -> None:
        with self._lock:
            self._status.failures += 1
            self._status.failed = True
            self._status.last_failure = text
            if model is not None:
                self._status.model_rejections = Counter(model.rejections)
        self._publish_diagnostics()

    # ---------------------------------------------------------------- publishing
    def _channel_publishers(self) -> list:
        """``map/<channel>/mean`` and ``map/<channel>/std`` of each channel, in order."""
        return [publisher for pair in self._channel_pubs.values() for publisher in pair]

    def _publish_empty_map(self) -> None:
        header = Header(stamp=self.get_clock().now().to_msg(),
                        frame_id=self._settings.map_frame)
        empty = np.empty((0, 0))
        self._map_pub.publish(cv.map_to_cloud(header, empty, empty, empty, empty))
        empty_grid = cv.grid_from_array(header, empty, resolution=1.0, origin=(0.0, 0.0))
        self._std_pub.publish(empty_grid)
        for publisher in self._channel_publishers():
            publisher.publish(empty_grid)
        self._inducing_pub.publish(cv.inducing_to_cloud(header, np.empty((0, 2)), np.empty(0)))

    def _publish_diagnostics(self) -> None:
        with self._publish_lock:
            with self._lock:
                if self._stopping:
                    return
                status = self._diagnostic_status()
            message = DiagnosticArray(status=[status])
            message.header.stamp = self.get_clock().now().to_msg()
            self._diagnostics_pub.publish(message)

    def _diagnostic_status(self) -> DiagnosticStatus:
        """The node's state as one DiagnosticStatus (call with the lock held)."""
        status, report = self._status, self._status.report
        if status.failed:
            level, text = DiagnosticStatus.ERROR, status.last_failure
        elif report is not None and report.training_failure:
            level, text = DiagnosticStatus.WARN, "hyper-parameter training failed: " \
                + report.training_failure
        elif self._served is None:
            level, text = DiagnosticStatus.OK, "waiting for samples"
        else:
            level, text = DiagnosticStatus.OK, ("paused" if self._paused else "mapping")
        return cv.diagnostic_status(self.get_name(), level, text, self._status_record(),
                                    hardware_id=status.device)

    def _status_record(self) -> MapperStatus:
        """What /diagnostics reports (call with the lock held)."""
        status, report = self._status, self._status.report
        # The MSLL baselines: one of the depth, or with channels one per channel (the
        # depth's unsuffixed), each None until its channel is measured.
        targets = status.targets if isinstance(status.targets, list) else [status.targets]
        depth, further = targets[0], dict(zip(self._channels, targets[1:]))
        further = {name: target for name, target in further.items() if target is not None}
        return MapperStatus(
            samples=status.num_samples, inducing_points=status.num_inducing,
            method=status.method, device=status.device, updates=status.updates,
            paused=self._paused, buffered_batches=len(self._incoming),
            buffered_samples=sum(len(b.z) for b in self._incoming),
            queries_answered=status.queries, failures=status.failures,
            last_failure=status.last_failure,
            **({} if report is None else dict(
                update_time=report.total_time, inducing_time=report.inducing_time,
                variational_time=report.variational_time,
                training_time=report.training_time, new_samples=report.num_new,
                loss=report.loss, training_failure=report.training_failure or "",
                figures=dict(report.extra))),
            map_predict_time=status.map_time, latency=status.latency,
            queue_wait=status.queue_wait, node_overhead=status.overhead,
            median_latency=(statistics.median(status.latencies) if status.latencies
                            else float("nan")),
            map_stamp=status.map_stamp, journal=self._persistence.state,
            autosaves=status.autosaves, autosave_time=status.autosave_time,
            channels=(tuple(channel_names(self._channels))
                      if isinstance(status.targets, list) else None),
            target_mean=None if depth is None else depth.mean,
            target_std=None if depth is None else depth.std,
            channel_target_means={name: t.mean for name, t in further.items()},
            channel_target_stds={name: t.std for name, t in further.items()},
            rejected=dict(status.model_rejections + status.rejections))

    def destroy_node(self) -> None:
        if self._worker is not None:
            with self._publish_lock:
                with self._lock:
                    self._stopping = True
                    self._lock.notify_all()
            # An update in progress publishes nothing more, but the process must not exit
            # while torch is inside it (that aborts the interpreter): wait for it, bounded
            # below the graph supervisor's 15 s before it kills a node.
            if self._worker.is_alive():
                self.get_logger().info("waiting for the update in progress to finish")
            self._worker.join(timeout=SHUTDOWN_WAIT)
            if self._worker.is_alive():
                self.get_logger().warning(f"the update in progress did not finish within "
                                          f"{SHUTDOWN_WAIT:g} s; exiting anyway")
            self._worker = None
        if self._persistence is not None:  # an orderly end: the next start begins a new map
            self._persistence.close()
        super().destroy_node()


def _target_baselines(targets: np.ndarray) -> TargetBaseline | list[TargetBaseline | None]:
    """The MSLL baseline of the samples' targets (N,); of each channel's measured values
    (N, D) with channels (None for a channel without any)."""
    if targets.ndim == 1:
        return TargetBaseline.of(targets)
    columns = [column[np.isfinite(column)] for column in targets.T]
    return [TargetBaseline.of(column) if len(column) else None for column in columns]


class _RosLog(logging.Handler):
    """Hands a core object's log records (info, warning, error) to the node's ROS log."""

    def __init__(self, node: StartingNode) -> None:
        super().__init__()
        self._logger = node.get_logger()

    def emit(self, record: logging.LogRecord) -> None:
        level = ("error" if record.levelno >= logging.ERROR
                 else "warning" if record.levelno >= logging.WARNING else "info")
        getattr(self._logger, level)(record.getMessage())


def _ros_logger(node: StartingNode) -> logging.Logger:
    """A logger of the node's own (outside logging's registry, which outlives nodes)."""
    logger = logging.Logger(node.get_name())
    logger.addHandler(_RosLog(node))
    return logger


def _evaluation_points(settings: MapperSettings,
                       workspace: WorkspaceConfig) -> np.ndarray | None:
    if not settings.evaluation_grid:
        return None
    return evaluation_points(Workspace.from_config(workspace), settings.evaluation_grid)


def _make_grid(grid: MapGridConfig, workspace: WorkspaceConfig) -> MapGrid:
    try:
        return MapGrid.from_config(grid, Workspace.from_config(workspace))
    except ValueError as error:
        raise ConfigError(f"map grid: {error}") from error


def main(args=None) -> None:
    # Threads for a query's prediction beside incoming samples and service calls.
    run_node(MapperNode, "mapper", args, lambda: MultiThreadedExecutor(num_threads=3),
             start_errors=(StateFileError,))


if __name__ == "__main__":
    main()
