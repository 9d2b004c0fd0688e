"""The mapper's worker thread: its update queue, the live model, the copy it serves, the maps.

The node's callbacks only convert and hand over: :meth:`MapperWorker.put` journals a batch and
queues it. The thread takes every batch queued since its last update (merged into one update:
one step of its :class:`~poam_ros.mapping.loop.MappingLoop`), predicts the map on the grid and
publishes it (:class:`~poam_ros.ros.map_publishers.MapPublishers`), so that subscriptions,
services and uncertainty queries stay responsive during an update. The thread alone touches
the live model; after each successful update and its map it hands a deep copy (the *served*
model, :meth:`~poam_ros.mapping.loop.MappingLoop.snapshot`) to the callbacks
(:meth:`~MapperWorker.served_model`). A query during an update is therefore answered by the
last good model, never by one older than a map already published, and a failed update leaves
the last good map published.

Maps are stamped with the newest samples stamp they include (the clock's when there is none
yet), and no two maps of different samples share a stamp: a map whose samples are no newer than
the last map's (unstamped ones, a teammate's relayed; reordered ones) is stamped 1 ns after it,
so that each map pairs with its status by stamp (the status's ``data_stamp`` keeps the samples'
time). When the data clock goes back (a simulator restarted, a bag replayed again: the newest
samples of an update stamped more than :data:`~poam_ros.messages.MAP_CLOCK_RESET` before the
map), the maps follow the new clock from that update on, and the worker says so once at warning
level; a smaller step back is reordering. Unstamped batches (0) leave the data time. An update
that adds nothing publishes the current map again, so that a lockstep planner waiting for the
leg's map goes on. Between updates the thread trains on (``mapping.idle_steps``, the mapping
loop's idle steps) in rounds of ``mapping.train_steps`` steps while no batch waits, at most
``idle_share`` of the wall time: when the steps due are done (or every
:data:`REFINED_MAP_PERIOD`), the map they moved is published again with its stamp (the same
samples) and its model served; a batch that comes forgoes what is left, so an update never
waits for them. ``~/reset`` (:meth:`~MapperWorker.reset`) bumps a generation: what an update of
an older generation would publish is dropped. The worker publishes the mapper's /diagnostics
(:class:`~poam_ros.mapping.mapper_status.MapperTally`) after each update and when the node's
timer asks.

Locking stays here: one condition guards everything the thread shares with the callbacks; a
second lock orders publications against ``~/reset`` (taken first when both are needed).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.mapping import mapper_status
from poam_ros.mapping.channels import survey_model
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.mapping.mapper_status import MapperTally
from poam_ros.mapping.persistence import MapPersistence, OpenedMap
from poam_ros.models import MappingConfig, OnlineSparseGP, UpdateReport, resolve_device
from poam_ros.params.node_settings import MapperSettings
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.map_publishers import MapPublishers
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.workspace import Workspace

SNAPSHOT_WAIT = 10.0  # s a query waits at most for the model of a map just published
SHUTDOWN_WAIT = 10.0  # s stop() waits for an update in progress
# s of idle training after which its map is published even though steps are still due
REFINED_MAP_PERIOD = 10.0
LEVELS = {mapper_status.OK: DiagnosticStatus.OK, mapper_status.WARN: DiagnosticStatus.WARN,
          mapper_status.ERROR: DiagnosticStatus.ERROR}


@dataclass
class QueuedBatch:
    """A samples message as the callback queued it for the worker."""

    xy: np.ndarray  # (N, 2) m
    z: np.ndarray  # (N,); (N, 1 + C) with channels, depth first, NaN where not measured
    stamp: int  # ns, the message's header stamp (the data time of its samples)
    arrival: float  # time.monotonic() when the message reached the callback


@dataclass(frozen=True)
class MapperConfig:
    """What the worker maps and publishes with; the node's parameter callbacks replace it."""

    mapping: MappingConfig  # for the next new model (at ~/reset)
    settings: MapperSettings
    grid: MapGrid
    workspace: Workspace  # samples outside its bounding box are refused before the model
    evaluation: np.ndarray | None  # (P, 2) m, the mission's evaluation points, or None


class MapperWorker:
    """The update thread of ``node`` (its clock, log, lifecycle state and publishers) over the
    map ``opened`` at start by ``persistence``; ``channels`` are the samples'."""

    def __init__(self, node: ManagedNode, config: MapperConfig, persistence: MapPersistence,
                 opened: OpenedMap, channels: Sequence[str] = ()) -> None:
        self._node = node
        self._config = config
        self._channels = tuple(channels)
        self._persistence = persistence
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
        self._data_stamp = opened.stamp
        self._tally = MapperTally(self._channels, str(resolve_device(config.mapping.device)),
                                  config.mapping.method)
        # The thread's own loop and model, opened at start rather than at the first batch:
        # the first model of a process costs seconds of one-off initialisation.
        self._loop = MappingLoop(opened.model, workspace=config.workspace)
        self._model_stale = False  # a reset dropped the model and making the next failed
        self._idle_after = 0.0  # time.monotonic() before which no idle round starts (share)
        self._idle_since: float | None = None  # the first round not yet in a map (monotonic)
        self._publishers = MapPublishers(node, self._channels)
        self._diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics",
                                                  qos.DIAGNOSTICS)
        if opened.loaded:  # a model loaded at start: served, its map due at once
            self._served = self._loop.snapshot()
            self._republish = True
            self._tally.loaded(opened.model)
        if opened.replay is not None:  # the journal's batches, the first update
            xy, z, stamp = opened.replay
            self._incoming.append(QueuedBatch(xy, z, stamp, time.monotonic()))
        self._thread = threading.Thread(target=self._work, name=f"{node.get_name()}_worker",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    # ---------------------------------------------------------------- for the callbacks
    @property
    def config(self) -> MapperConfig:
        with self._lock:
            return self._config

    def configure(self, republish: bool = True, **changes) -> None:
        """Replace fields of the config; with ``republish``, the map again at once."""
        with self._lock:
            self._config = replace(self._config, **changes)
            if republish:
                self._republish = True
                self._lock.notify_all()

    def put(self, xy: np.ndarray, z: np.ndarray, stamp: int, arrival: float) -> None:
        """Journal and queue a batch; an empty one too: it ends a leg, and lockstep waits for
        its map."""
        with self._lock:
            self._persistence.append(xy, z, stamp)  # in the queue's order, before any update
            self._incoming.append(QueuedBatch(xy, z, stamp, arrival))
            self._lock.notify_all()

    def reject(self, reason: str) -> None:
        """Count a samples message the node refused for ``reason``."""
        with self._lock:
            self._tally.rejections[reason] += 1

    def served_model(self) -> MappingLoop | None:
        """The loop over the model of the newest published map, for queries, ~/save and
        ~/export: waits while the thread copies it (milliseconds), so no answer comes from a
        model older than a map the asker may have seen."""
        with self._lock:
            self._lock.wait_for(lambda: not self._snapshot_due or self._stopping,
                                timeout=SNAPSHOT_WAIT)
            return self._served

    def query(self) -> tuple[MappingLoop | None, MapperConfig]:
        """The served loop and the config for an uncertainty query, counted."""
        served = self.served_model()
        with self._lock:
            self._tally.queries += 1
            return served, self._config

    def reset(self) -> int:
        """Drop the model, the map and the queued batches (returns how many); later samples
        start a new model with ``mapping.*`` as they are then."""
        with self._publish_lock:
            with self._lock:
                self._generation += 1
                dropped = len(self._incoming)
                self._incoming.clear()
                self._served, self._snapshot_due = None, False
                self._reset_requested = True
                mapping, frame = self._config.mapping, self._config.settings.map_frame
                self._tally.reset(str(resolve_device(mapping.device)), mapping.method)
                self._persistence.new_map()
                self._lock.notify_all()
            self._publishers.publish_empty(
                Header(stamp=self._node.get_clock().now().to_msg(), frame_id=frame))
        return dropped

    def pause(self, paused: bool) -> int:
        """Pause or resume the updates; returns the batches queued."""
        with self._lock:
            self._paused = paused
            self._lock.notify_all()
            return len(self._incoming)

    def publish_diagnostics(self) -> None:
        with self._publish_lock:
            with self._lock:
                if self._stopping:
                    return
                level, text = self._tally.health(self._served is not None, self._paused)
                record = replace(self._tally.record(self._paused,
                                                    [len(b.z) for b in self._incoming],
                                                    self._persistence.state),
                                 lifecycle_state=self._node.lifecycle_state)
                device = self._tally.device
            self._diagnostics.publish(status_array(self._node, [node_status(
                self._node, LEVELS[level], text, record, device)]))

    def stop(self) -> None:
        """Publish nothing more and wait for an update in progress: the process must not exit
        while torch is inside it (that aborts the interpreter); bounded below the graph
        supervisor's 15 s before it kills a node."""
        with self._publish_lock:
            with self._lock:
                self._stopping = True
                self._lock.notify_all()
        logger = self._node.get_logger()
        if self._thread.is_alive():
            logger.info("waiting for the update in progress to finish")
        self._thread.join(timeout=SHUTDOWN_WAIT)
        if self._thread.is_alive():
            logger.warning(f"the update in progress did not finish within {SHUTDOWN_WAIT:g} s; "
                           f"exiting anyway")

    # ---------------------------------------------------------------- the thread
    def _work(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._stopping or self._reset_requested
                                    or self._republish or (self._incoming and not self._paused),
                                    timeout=self._idle_wait())
                if self._stopping:
                    return
                reset, self._reset_requested = self._reset_requested, False
                batches = [] if self._paused else self._incoming
                if not self._paused:
                    self._incoming = []
                republish, self._republish = self._republish, False
                generation, mapping = self._generation, self._config.mapping
                share = self._config.settings.idle_share
                idle = not (reset or batches or republish) and self._idle_wait() == 0.0
                # The journal's segment boundary at exactly the batches taken: the model
                # holds all before it once they are in, and is then autosaved with its number.
                checkpoint = self._persistence.checkpoint() if batches else None
            taken = time.monotonic()
            try:
                if idle:
                    self._idle_round(generation, mapping, share)
                    continue
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
                self._loop.idle_due = 0  # no idle training until the next update
                with self._lock:
                    self._snapshot_due = False  # no copy is coming: serve the last one
                    self._lock.notify_all()
                self._fail(f"{type(error).__name__}: {error}")
                self._node.get_logger().error(f"mapping failed: {error!r}")

    def _new_model(self, mapping: MappingConfig) -> None:
        """The loop takes a new model (``mapping.*`` as they are now) after a reset."""
        self._loop.model, self._loop.idle_due = survey_model(mapping, self._channels), 0
        self._model_stale = False

    def _idle_wait(self) -> float | None:
        """Seconds until the next idle round may start (0: now), None when none is due (no
        steps due, paused, no model); call with the lock (the thread's own state)."""
        if not self._loop.idle_due or self._paused or self._model_stale:
            return None
        return max(0.0, self._idle_after - time.monotonic())

    def _idle_round(self, generation: int, mapping: MappingConfig, share: float) -> None:
        """``train_steps`` of the idle steps due; the next round waits so that the rounds
        take at most ``share`` of the wall time. When none is due any more, or
        :data:`REFINED_MAP_PERIOD` after the last such map, the moved map goes out."""
        loop, tic = self._loop, time.monotonic()
        steps = min(max(1, mapping.train_steps), loop.idle_due)
        report = loop.idle(steps)
        now = time.monotonic()
        self._idle_after = now + (now - tic) * (1.0 / share - 1.0)
        if report.training_failure:
            self._node.get_logger().warning(f"idle training failed, kept the previous "
                                            f"values: {report.training_failure}")
        if not report.training_time:
            return
        with self._lock:
            self._tally.idled(steps, now - tic)
        self._idle_since = now if self._idle_since is None else self._idle_since
        if loop.idle_due and now - self._idle_since < REFINED_MAP_PERIOD:
            return
        if self._publish_model(loop, generation, serve=True, again=True) is not None:
            self._serve(loop.snapshot(), generation)
        self._idle_since = None

    def _serve(self, served: MappingLoop, generation: int) -> None:
        """``served`` answers queries, ~/save and ~/export from now on (unless a reset came
        since ``generation``)."""
        with self._lock:
            if generation == self._generation:
                self._served, self._snapshot_due = served, False
                self._lock.notify_all()

    def _update(self, batches: list[QueuedBatch], generation: int, mapping: MappingConfig,
                taken: float) -> bool:
        """One step of the mapping loop on ``batches`` and its map; whether it succeeded."""
        if self._model_stale:  # making it at the reset failed: try again
            self._new_model(mapping)
        loop, logger = self._loop, self._node.get_logger()
        with self._lock:
            loop.workspace = self._config.workspace
        # The idle steps still due are forgone: the batch's map does not wait for them.
        step = loop.step(((batch.xy, batch.z) for batch in batches), idle=False)
        self._idle_since = None
        for error in step.refused:  # counted by the model as malformed_batch
            logger.warning(f"batch refused: {error}")
        if step.recovery is not None:
            logger.warning(step.recovery)
        if step.set_aside:
            self._rebase_journal(generation)
        if step.failure is not None:
            self._fail(f"update failed, kept the last good map: {step.failure}", loop.model)
            logger.error(f"model update failed (the last good map stays): {step.failure}")
            return False
        report = step.report
        self._follow_data_clock(max(batch.stamp for batch in batches))
        if report.skipped:  # nothing new: empty batches, or every sample refused
            with self._lock:
                self._tally.updated(loop.model, report)
            # The map stands for these batches too: republished with their stamp, as the
            # ROS-free mission scores an epoch without samples, so a lockstep planner goes on.
            if loop.model.ready and self._publish_model(loop, generation) is not None:
                self._publish_evaluation(loop, generation)
                self.publish_diagnostics()  # its count, which the planner's budget reads
            return True
        if report.training_failure:
            logger.warning(f"hyper-parameter training failed, kept the previous values: "
                           f"{report.training_failure}")
        published = self._publish_model(loop, generation, report)
        if published is None:
            return False
        # The copy that serves queries and ~/save is made after the map is out, so that it
        # costs the map no latency; a query in the meantime waits for it (served_model).
        self._serve(loop.snapshot(), generation)
        newest = max(batch.arrival for batch in batches)
        with self._lock:
            self._tally.timed(newest, taken, published, report.total_time)
        self._persistence.updated()
        self._publish_evaluation(loop, generation)
        self.publish_diagnostics()
        return True

    def _follow_data_clock(self, newest: int) -> None:
        """The maps' stamp after an update whose newest samples are stamped ``newest`` ns."""
        if newest and newest < self._data_stamp - msg.MAP_CLOCK_RESET:
            self._node.get_logger().warning(
                f"the samples' clock went back by {(self._data_stamp - newest) * 1e-9:.1f} s "
                f"(a simulator restarted, a bag replayed again?): the maps follow the new "
                f"clock from now on")
            self._data_stamp = newest
        else:
            self._data_stamp = max(self._data_stamp, newest)

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
                self._tally.autosaved(seconds)

    def _republish_served(self, generation: int) -> None:
        """The map again (the grid or the publishing options changed, or a model was loaded
        at start), from the served model: the published map's, not the live one, which may
        hold samples pending or set aside since; with the published map's stamp."""
        with self._lock:
            served = self._served
        if served is not None:
            self._publish_model(served, generation, again=True)

    def _map_stamp(self, again: bool) -> int:
        """The stamp (ns) of the map about to be published: the newest samples' (the clock's
        before any), 1 ns past the last map's where that would not be newer, unless the data
        clock went back; ``again``: the last map's own."""
        last = self._tally.map_stamp
        if again and last:
            return last
        stamp = self._data_stamp or self._node.get_clock().now().nanoseconds
        return last + 1 if not again and msg.not_newer(stamp, last) else stamp

    def _publish_model(self, loop: MappingLoop, generation: int,
                       report: UpdateReport | None = None, again: bool = False,
                       serve: bool = False) -> float | None:
        """Predict the map with ``loop``'s model and publish it; returns the time.monotonic()
        after publishing, None when a reset made the result stale. With a ``report`` (an
        update's model) or ``serve`` (idle training's) queries wait from now until its copy
        is served; ``again``: with the published map's stamp (the same samples)."""
        with self._lock:
            grid, settings = self._config.grid, self._config.settings
            stamp = cv.nanoseconds_to_time(self._map_stamp(again))
        layers = loop.layers(grid, settings.std_includes_noise, settings.publish_lengthscale)
        memory = getattr(loop.model, "memory_samples", None)  # dual-gp: (xy, z) of its memory
        messages = self._publishers.messages(Header(stamp=stamp, frame_id=settings.map_frame),
                                             grid, layers, None if memory is None else memory())
        with self._publish_lock:
            with self._lock:
                if generation != self._generation or self._stopping:
                    return None
                self._tally.map_stamp = msg.time_to_nanoseconds(stamp)
                self._tally.data_stamp = self._data_stamp
                if report is not None or serve:
                    self._snapshot_due = True
                if report is not None:
                    self._tally.updated(loop.model, report, layers.predict_time)
            self._publishers.publish(messages)
            return time.monotonic()

    def _publish_evaluation(self, loop: MappingLoop, generation: int) -> None:
        """``map/evaluation`` of the map just published (after its served copy, so that
        it delays no query), stamped as that map."""
        with self._lock:
            points, frame = self._config.evaluation, self._config.settings.map_frame
            stamp = self._tally.map_stamp
        if points is None:
            return
        mean, std = loop.evaluation(points)
        cloud = self._publishers.evaluation(
            Header(stamp=cv.nanoseconds_to_time(stamp), frame_id=frame), points, mean, std)
        with self._publish_lock:
            with self._lock:
                if generation != self._generation or self._stopping:
                    return
            self._publishers.publish_evaluation(cloud)

    def _fail(self, text: str, model: OnlineSparseGP | None = None) -> None:
        with self._lock:
            self._tally.fail(text, model)
        self.publish_diagnostics()
