"""Placed samples cut into batches at decision points and on size and age limits (no ROS).

The :class:`Batcher` takes placed samples in chunks (one reading's samples, world frame)
and cuts them into :class:`RawBatch` es:

* at a **decision point**, when the vehicle reaches the end of the current plan (the same
  rule as :meth:`SurveySimulator.follow`: skip every waypoint within the goal radius, in
  order; the plan's last one reached is the arrival; once odometry of the plan was lost,
  :meth:`Batcher.odometry_lost`, a pose at its last one is). The batch holds exactly the
  samples stamped up to the arrival pose's time;
* when the batch reaches ``max_batch_size`` samples or spans ``max_batch_age`` seconds
  (continuous surveys);
* on time, whatever the plan and the fixes do (a waypoint never reached, a fix that moved
  the vehicle off its track): once the oldest sample not yet cut is ``batch_timeout`` old on
  the stamp clock (the newest odometry stamp minus its stamp) or on the wall clock (since the
  batch began; an infinite wall time, the end of the input, judges nothing: what is left
  then is the tail's), whichever first, the batch goes out (``timeout``). An arrival waiting for
  its streams is bounded by ``flush_grace`` instead, and a reading waiting for a pose by
  ``pending_timeout``, so no sample waits without bound;
* on request (:meth:`Batcher.flush_tail`: a survey that ends mid-leg) and at an odometry
  clock reset (:meth:`Batcher.restart`: what was placed went out correctly, ``reset``).

Decision-point exactness. DDS keeps each topic in order but not the topics among
themselves: the odometry at the arrival time can come before a sounding stamped earlier.
The arrival batch is therefore held back until every active sensor stream is known to have
delivered everything stamped up to the arrival
(:meth:`~poam_ros.ingest.streams.Streams.complete_until`). If that does not happen within
``flush_grace`` seconds of wall time (a reading was lost), the batch goes out anyway and
the late reading is dropped as ``late`` rather than put in the next batch. ``now``
arguments are wall-clock seconds (``time.monotonic()``), so tests drive the clock.

A raw batch is checked by :meth:`Batcher.finish` (swath filters, workspace: the heavy part,
free of the batcher's mutable state, so a node runs it on a worker thread) and counted by
:meth:`Batcher.record`, in the order the batches were cut.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from poam_ros.ingest.cloud_filters import resolve_backend, statistical_inliers, voxel_downsample
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.pose_history import STAMP_TOLERANCE
from poam_ros.ingest.reasons import OUTSIDE_WORKSPACE, STATISTICAL_OUTLIER, VOXEL_MERGED, Drops
from poam_ros.ingest.streams import RANGE, SWATH, Streams
from poam_ros.workspace import Workspace

log = logging.getLogger(__name__)


@dataclass
class SampleBatch:
    """Samples ready for the mapper: ``points`` (N, 3 + C) = x m, y m, elevation and the
    values of the C configured channels (NaN where a sample did not measure one), world frame.

    ``stamp`` [s] is the time the batch runs up to (the arrival pose's time at a decision
    point), ``reason`` why it was cut (``arrival``, ``size``, ``age``, ``timeout``, ``reset`` or
    ``end``) and ``dropped``
    what the batch-level checks removed from it.
    """

    stamp: float
    points: np.ndarray
    reason: str
    dropped: Counter = field(default_factory=Counter)
    sequence: int = 0  # the RawBatch's, which record() checks

    def __len__(self) -> int:
        return len(self.points)

    @property
    def targets(self) -> np.ndarray:
        """The values per sample, depth first: (N,) elevations without channels, (N, 1 + C)
        with them (a multi-channel model's y)."""
        return self.points[:, 2] if self.points.shape[1] == 3 else self.points[:, 2:]


class RawBatch(NamedTuple):
    """A batch as cut, before :meth:`Batcher.finish`: (N, 3) samples of ranges and (M, 3)
    swath points still to filter, world frame; ``sequence`` numbers the batches cut;
    ``readings`` (K, 3 + C): the channels' samples (None without channels)."""

    stamp: float
    reason: str
    ranges: np.ndarray
    swaths: np.ndarray
    sequence: int = 0
    readings: np.ndarray | None = None


class Batcher:
    """Chunks placed and not yet cut, the plan's progress, the arrival waiting on the
    ``streams``, and the batches cut, finished and recorded (their counts); see the module
    docstring. ``workspace``: samples outside it are dropped (None keeps all)."""

    def __init__(self, config: IngestConfig, streams: Streams, drops: Drops,
                 workspace: Workspace | None = None) -> None:
        self.check(config)
        self.config = config
        self.workspace = workspace
        self._streams = streams
        self._drops = drops
        self.accepted = 0        # samples placed in a batch-to-be
        self.published = 0       # samples in recorded batches
        self.batches = 0         # batches recorded
        self.flushes_on_grace = 0
        self._ready: list[RawBatch] = []
        self._chunks: list[tuple[float, str, np.ndarray]] = []  # (t, kind, (n, 3 + C) points)
        self._samples = 0
        self._plan: list[list[float]] | None = None
        self._plan_index = 0
        self._unseen = False  # odometry of this plan was lost: waypoints passed unseen
        self._arrival: tuple[float, float] | None = None   # (stamp, wall deadline)
        self._last_arrival = -math.inf
        self.published_until = -math.inf  # stamp of the last decision-point batch
        self._cut = 0  # raw batches cut so far
        self._clock = -math.inf  # newest odometry stamp [s]: the batch timeout's stamp clock
        self._began: float | None = None  # wall time [s] the batch began (first seen placed)

    @staticmethod
    def check(config: IngestConfig) -> None:
        """``ValueError`` where ``filter_backend`` open3d is missing (now, not at the first
        swath)."""
        if config.filter_backend == "open3d":
            resolve_backend("open3d")

    def configure(self, config: IngestConfig) -> None:
        """New limits and filters (:meth:`check` ed); what is placed, planned and cut stays."""
        self.config = config

    @property
    def size(self) -> int:
        """Samples placed and not yet cut."""
        return self._samples

    @property
    def chunks(self) -> list[tuple[float, str, np.ndarray]]:
        """The chunks placed and not yet cut, ``(t [s], kind, (n, 3 + C) points)``, in the
        order they were placed (read only)."""
        return list(self._chunks)

    @property
    def following(self) -> bool:
        """Whether a plan's end is still to be reached."""
        return self._plan is not None

    @property
    def plan_progress(self) -> tuple[int, int]:
        """(waypoints reached, waypoints) of the current plan; (0, 0) without one."""
        return (self._plan_index, len(self._plan)) if self._plan else (0, 0)

    # ---------------------------------------------------------------------- samples

    def add(self, t: float, kind: str, points: np.ndarray) -> None:
        """The samples (n, 3 + C) of one reading stamped ``t`` s; cut on size or age."""
        self._chunks.append((t, kind, points))
        self._samples += len(points)
        self.accepted += len(points)
        config = self.config
        if config.max_batch_size and self._samples >= config.max_batch_size:
            self._flush(math.inf, "size")
        elif config.max_batch_age and (t - self._chunks[0][0]
                                       >= config.max_batch_age - STAMP_TOLERANCE):
            self._flush(math.inf, "age")

    def shift(self, t: float, shift: np.ndarray) -> None:
        """Move the samples placed at or after stamp ``t`` by ``shift`` (dx, dy) [m]: a
        position fix's change of correction."""
        for stamp, _, points in self._chunks:
            if stamp >= t:
                points[:, :2] += shift

    # ------------------------------------------------------------------------ plans

    def set_plan(self, waypoints, stamp: float, frame_id: str | None = None) -> float | None:
        """A new plan (K, 2) m (K = 0 clears it) in ``frame_id`` (checked when given); the
        stamp [s] from which poses may count as progress on it: the later of ``stamp`` (the
        plan's header time, when > 0) and the previous arrival (where a lockstep vehicle
        waited for this plan). None, logged, for a plan in another frame than
        ``world_frame`` or with non-finite waypoints: it is ignored."""
        if frame_id is not None and frame_id != self.config.world_frame:
            log.warning("plan in frame %r ignored: expected %r", frame_id,
                        self.config.world_frame)
            return None
        waypoints = np.asarray(waypoints, dtype=float).reshape(-1, 2)
        if not np.isfinite(waypoints).all():
            log.warning("plan with non-finite waypoints ignored")
            return None
        self._plan = waypoints.tolist() if len(waypoints) else None
        self._plan_index, self._unseen = 0, False
        return max(stamp if stamp > 0 else -math.inf, self._last_arrival)

    def progress(self, t: float, x: float, y: float) -> None:
        """Advance the plan past waypoints within the goal radius of the vehicle's corrected
        position (x, y) [m] at ``t`` s; the last one reached is an arrival."""
        self._clock = max(self._clock, t)
        plan = self._plan
        if plan is None:
            return
        radius = self.config.goal_radius

        def near(goal: list[float]) -> bool:
            return math.hypot(goal[0] - x, goal[1] - y) <= radius

        while self._plan_index < len(plan) and near(plan[self._plan_index]):
            self._plan_index += 1
        if self._plan_index < len(plan) and not (self._unseen and near(plan[-1])):
            return
        self._plan = None
        if self._arrival is not None:  # an earlier arrival still waiting: it goes first
            self._flush(self._arrival[0], "arrival")
            self.flushes_on_grace += 1
        self._arrival = (t, math.inf)
        self._last_arrival = t

    def odometry_lost(self) -> None:
        """Odometry was lost (a subscriber's queue overflowed): the vehicle may have passed
        waypoints unseen, so until the next plan a pose within the goal radius of the plan's
        last waypoint ends it, whatever was seen of those before. A held lockstep vehicle
        sits there and repeats that pose: the arrival cannot be missed."""
        self._unseen = True

    def try_flush(self, now: float) -> None:
        """Cut the arrival's batch once every stream has delivered up to it, or its grace
        has run out at wall time ``now`` [s]; without an arrival, the batch on time."""
        if self._arrival is None:
            self._cut_on_time(now)
            return
        t_arrival, deadline = self._arrival
        if deadline == math.inf:
            deadline = now + self.config.flush_grace
            self._arrival = (t_arrival, deadline)
        complete = self._streams.complete_until(t_arrival, t_arrival - self.config.pose_history)
        if not complete and now < deadline:
            return
        if not complete:
            self.flushes_on_grace += 1
            log.warning("batch up to t=%.6f s published after the %.3g s grace without every "
                        "reading stamped before it", t_arrival, self.config.flush_grace)
        self._flush(t_arrival, "arrival")

    def _cut_on_time(self, now: float) -> None:
        """Cut the batch once its oldest sample is ``batch_timeout`` old (module docstring)."""
        if not self._chunks:
            return
        if self._began is None and math.isfinite(now):
            self._began = now
        timeout = self.config.batch_timeout
        waited = self._clock - self._chunks[0][0]
        waited_wall = now - self._began if math.isfinite(now) else math.nan
        if waited >= timeout - STAMP_TOLERANCE or waited_wall >= timeout:
            log.warning("batch of %d samples cut on time: its oldest sample (t=%.6f s) waited "
                        "%.6g s of stamp time, %.6g s of wall time, with no decision point "
                        "(batch_timeout %g s)", self._samples, self._chunks[0][0], waited,
                        waited_wall, timeout)
            self._flush(math.inf, "timeout")

    def restart(self) -> None:
        """The odometry's clock was reset: a waiting arrival's batch goes out, then the rest
        (``reset``); stamps of the old clock no longer order anything. The plan's progress is
        kept: the waypoints reached are places, which a clock change does not move."""
        if self._arrival is not None:
            self._flush(self._arrival[0], "arrival")
        if self._chunks:
            self._flush(math.inf, "reset")
        self.published_until = self._last_arrival = self._clock = -math.inf

    def flush_tail(self, reason: str = "end") -> None:
        """Cut what has been placed since the last batch (a survey that ends mid-leg: no
        decision point will come)."""
        if self._chunks:
            self._flush(math.inf, reason)

    def _flush(self, until: float, reason: str) -> None:
        """Cut a raw batch of the samples stamped up to ``until`` (all of them for inf)."""
        self._began = None  # what stays begins a batch, its wall time seen at the next check
        if reason == "arrival":
            self._arrival = None
            self.published_until = until
            taken = [c for c in self._chunks if c[0] <= until + STAMP_TOLERANCE]
            self._chunks = [c for c in self._chunks if c[0] > until + STAMP_TOLERANCE]
        else:
            taken, self._chunks = self._chunks, []
            until = max(c[0] for c in taken)
        self._samples = sum(len(c[2]) for c in self._chunks)
        taken.sort(key=lambda chunk: chunk[0])
        ranges = [c[2] for c in taken if c[1] == RANGE]
        swaths = [c[2] for c in taken if c[1] == SWATH]
        readings = None
        channels = len(self.config.channels)
        if channels:
            rows = [c[2] for c in taken if c[1] not in (RANGE, SWATH)]
            readings = np.concatenate(rows) if rows else np.empty((0, 3 + channels))
        self._cut += 1
        self._ready.append(RawBatch(until, reason,
                                    np.concatenate(ranges) if ranges else np.empty((0, 3)),
                                    np.concatenate(swaths) if swaths else np.empty((0, 3)),
                                    self._cut, readings))

    # ---------------------------------------------------------------------- batches

    def take_raw_batches(self) -> list[RawBatch]:
        """Batches cut since the last call, oldest first, not yet checked: hand each to
        :meth:`finish` and then :meth:`record`, in order (:meth:`record` refuses another)."""
        ready, self._ready = self._ready, []
        return ready

    def finish(self, raw: RawBatch) -> SampleBatch:
        """The checked batch: swath points filtered, then samples outside the workspace
        dropped (counted in its ``dropped``). Non-finite and duplicated samples are the
        model's to refuse (:func:`~poam_ros.models.samples.filter_samples`: it knows every
        sample it holds). The heavy step, and free of the batcher's mutable state, so a node
        may run it on a worker thread while the ingest takes more readings; :meth:`record`
        then adds its counts."""
        dropped: Counter = Counter()
        points = np.concatenate([raw.ranges, self._filtered_swaths(raw.swaths, dropped)])
        if raw.readings is not None:  # the soundings measured no channel: NaN there
            channels = np.full((len(points), raw.readings.shape[1] - 3), np.nan)
            points = np.concatenate([np.hstack([points, channels]), raw.readings])
        if self.workspace is not None and len(points):
            inside = self.workspace.contains(points[:, :2])
            dropped[OUTSIDE_WORKSPACE] += int((~inside).sum())
            points = points[inside]
        return SampleBatch(raw.stamp, points, raw.reason, +dropped, raw.sequence)

    def record(self, batch: SampleBatch) -> SampleBatch:
        """Count a finished batch as handed out (its drops, its samples). Batches are
        recorded in the order they were cut, each once: ``ValueError`` otherwise."""
        if batch.sequence != self.batches + 1:
            raise ValueError(f"batch {batch.sequence} recorded after batch {self.batches}: "
                             f"record each batch once, in the order take_raw_batches gave")
        for name, count in batch.dropped.items():
            self._drops.counts[name] += count
        if batch.dropped.get(OUTSIDE_WORKSPACE):
            self._drops.details[OUTSIDE_WORKSPACE] = (f"{batch.dropped[OUTSIDE_WORKSPACE]} "
                                                      f"samples outside the workspace")
        self.published += len(batch)
        self.batches += 1
        return batch

    def _filtered_swaths(self, points: np.ndarray, dropped: Counter) -> np.ndarray:
        """Statistical outliers out first, so that they do not pull voxel centroids."""
        config = self.config
        if config.outlier_neighbors > 0 and len(points) > config.outlier_neighbors:
            keep = statistical_inliers(points, config.outlier_neighbors,
                                       config.outlier_std_ratio, config.filter_backend)
            dropped[STATISTICAL_OUTLIER] += int((~keep).sum())
            points = points[keep]
        if config.voxel_size > 0 and len(points):
            merged = voxel_downsample(points, config.voxel_size, config.filter_backend)
            dropped[VOXEL_MERGED] += len(points) - len(merged)
            points = merged
        return points
