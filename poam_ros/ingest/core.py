"""Sensor ingest without ROS: sonar readings + vehicle poses -> validated, georeferenced batches.

:class:`Ingest` takes odometry poses, echo-sounder ranges, multibeam swaths, the readings of
scalar channels (``channels``: a temperature, a pressure, any stamped scalar), position
fixes and IMU and pressure readings as plain numbers and arrays (times in seconds of the
readings' own clock, sim time in simulation; ``now`` arguments are wall-clock seconds,
``time.monotonic()``, which only grace periods and timeouts use, so tests drive the clock)
and hands out :class:`~poam_ros.ingest.batcher.SampleBatch` es of samples ``(x, y,
elevation)`` in the world frame (with C channels ``(x, y, elevation, value_1 … value_C)``,
NaN where a sample did not measure it). It checks each message and coordinates the parts
that own the state:

* :class:`~poam_ros.ingest.streams.Streams`: each stream's frame, clock rule (a glitched
  stamp told from a clock change), order and completeness;
* :class:`~poam_ros.ingest.placement.Placement`: the pose history and the readings placed
  at it or waiting for it;
* :class:`~poam_ros.ingest.fixes.PositionFixes`: position fixes and the corrections they set;
* :class:`~poam_ros.ingest.batcher.Batcher`: the plan's progress and the batches cut at
  decision points and on the size and age limits, checked and counted;
* :class:`~poam_ros.ingest.reasons.Drops`: the drops, per reason.

Odometry may come in ``odom_frame``, placed in the world frame by the declared static
transform ``map_from_odom`` (:mod:`~poam_ros.ingest.navigation`) before any pose check. A
pose whose orientation quaternion is not a rotation (a zero quaternion, a norm off 1 by more
than ``orientation_tolerance``) is refused rather than placed with the heading atan2 makes
up for it. With ``imu_attitude`` and ``depth_from_pressure`` the attitude and the depth come
from an IMU and a pressure sensor (:mod:`~poam_ros.ingest.attitude_depth`); their messages
are dropped, counted per message, in another frame (``wrong_frame``), with no orientation or
one that is not a rotation (``imu_invalid``), a non-finite pressure (``pressure_invalid``)
or one beyond the declared plausibility limits (``limits``: ``imu_rate_out_of_limits``,
``depth_out_of_limits``), and their stamps pass the clock and order rules of every stream
(:mod:`~poam_ros.ingest.streams`), as the odometry's, the readings' and the fixes' do. A
channel's reading beyond its type's limits is ``value_out_of_limits``
(:mod:`~poam_ros.ingest.channels`).

Clock resets, resolved across the streams (:class:`~poam_ros.ingest.streams.Streams`
holds the new clock's messages until then). The odometry's reset restarts everything tied
to the old clock: what was placed goes out as batches (a pending arrival's, then the rest
with reason ``reset``), the pose history and the attitude and depth series are cleared, and
readings and fixes still waiting for a pose of the old clock are dropped (``clock_reset``,
``fix_no_pose``) unless their stamps agree with the new clock (within the threshold of the
run). The plan's progress is kept; its end is then judged on the new clock. Any other
stream's reset restarts that stream's order (and the IMU's or the depth's its series); its
readings waiting for a pose stay, on the odometry's clock. Then the held messages are used.

Bad input never reaches a batch. Each drop is counted under its reason
(:mod:`~poam_ros.ingest.reasons`) in :attr:`Ingest.dropped`, the latest case's detail in
:attr:`Ingest.details`.

A node cuts batches in its callbacks (cheap) and checks them (:meth:`Ingest.finish`: swath
filters, workspace; the heavy part) on a worker thread; :meth:`Ingest.take_batches` does
both at once for callers without threads.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from poam_ros.attitude import roll_pitch_from_quaternion, yaw_from_quaternion
from poam_ros.ingest.attitude_depth import DEPTH, IMU
from poam_ros.ingest.batcher import Batcher, RawBatch, SampleBatch
from poam_ros.ingest.channels import channel_sources, value_limits
from poam_ros.ingest.cloud_filters import resolve_backend
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.fixes import PositionFixes
from poam_ros.ingest.navigation import StaticTransform
from poam_ros.ingest.placement import Placement
from poam_ros.ingest.pose_history import not_a_rotation
from poam_ros.ingest.reasons import (
    CLOCK_RESET,
    IMU_INVALID,
    MALFORMED,
    NEGATIVE_RANGE,
    NO_RETURN,
    NONFINITE_POINT,
    NONFINITE_RANGE,
    POSE_INVALID_ORIENTATION,
    POSE_NONFINITE,
    POSE_WRONG_FRAME,
    RANGE_OUT_OF_LIMITS,
    VALUE_OUT_OF_LIMITS,
    WRONG_FRAME,
    Drops,
)
from poam_ros.ingest.streams import CHANNEL, FIX, ODOM, RANGE, SWATH, Streams
from poam_ros.workspace import Workspace

if TYPE_CHECKING:  # the anchor is handed in: the ingest itself needs no pyproj or rasterio
    from poam_ros.geo.georeference import GeoReference

log = logging.getLogger(__name__)


class Ingest:
    """The ingest core; see the module docstring. ``workspace``: samples outside it are
    dropped (None keeps all); ``georeference``: the map's geodetic anchor, which position
    fixes need (None: they are dropped)."""

    def __init__(self, config: IngestConfig, workspace: Workspace | None = None,
                 georeference: GeoReference | None = None) -> None:
        self._map_from_odom = _checked(config)
        self.config = config
        self.drops = Drops()
        self.streams = Streams(config, self.drops, self._reset,
                               lambda: self.batcher.published_until)
        self.position_fixes = PositionFixes(config, self.drops, georeference)
        self.batcher = Batcher(config, self.streams, self.drops, workspace)
        self.placement = Placement(config, self.drops, self.position_fixes, self.batcher)
        # the channels' streams (kinds) and frames; the channels fix the samples' columns
        self._channels = {CHANNEL + source.name: source for source in channel_sources(config)}
        self.channel_received: Counter = Counter()  # per channel, readings handed in

    def configure(self, config: IngestConfig) -> None:
        """Apply a new configuration; every part keeps what it holds. The channels fix the
        samples' columns: ``ValueError`` for other channels than the first configuration's."""
        if config.channels != self.config.channels:
            raise ValueError(f"the ingest's channels {self.config.channels!r} cannot change to "
                             f"{config.channels!r}: they fix the samples' columns")
        self._map_from_odom = _checked(config)
        self.config = config
        for part in (self.streams, self.position_fixes, self.batcher, self.placement):
            part.configure(config)

    # ------------------------------------------------------------------------ state

    @property
    def workspace(self) -> Workspace | None:
        return self.batcher.workspace

    @property
    def georeference(self) -> GeoReference | None:
        return self.position_fixes.georeference

    @property
    def dropped(self):
        """Drops per reason (a Counter; see :mod:`~poam_ros.ingest.reasons` for units)."""
        return self.drops.counts

    @property
    def details(self) -> dict[str, str]:
        """The latest drop of each reason, in words."""
        return self.drops.details

    @property
    def poses(self):
        """The odometry's pose history (:class:`~poam_ros.ingest.pose_history.PoseHistory`)."""
        return self.placement.poses

    accepted = property(lambda self: self.batcher.accepted, doc="Samples placed.")
    published = property(lambda self: self.batcher.published, doc="Samples recorded.")
    batches = property(lambda self: self.batcher.batches, doc="Batches recorded.")
    batch_size = property(lambda self: self.batcher.size, doc="Samples placed, not yet cut.")
    plan_progress = property(lambda self: self.batcher.plan_progress,
                             doc="(waypoints reached, waypoints) of the current plan.")
    flushes_on_grace = property(lambda self: self.batcher.flushes_on_grace,
                                doc="Arrival batches cut without every stream complete.")
    pending = property(lambda self: self.placement.pending, doc="Readings waiting for a pose.")
    held = property(lambda self: self.streams.held,
                    doc="Messages held as suspect stamps or until a reset is resolved.")
    clock_resets = property(lambda self: self.streams.clock_resets, doc="Resets per stream.")
    reset_details = property(lambda self: self.streams.reset_details,
                             doc="Per stream, its latest reset in words.")
    fixes = property(lambda self: self.position_fixes.applied, doc="Position fixes applied.")
    last_fix_correction = property(lambda self: self.position_fixes.last_correction,
                                   doc="m, how far the latest fix moved the position.")
    channel_placed = property(lambda self: self.placement.channel_placed,
                              doc="Per channel, readings placed as samples.")

    def channel_waiting(self, channel: str) -> int:
        """Readings of ``channel`` waiting for a pose or held (:attr:`held`): neither placed
        nor dropped yet (the rest of :attr:`channel_received` are one or the other)."""
        kind = CHANNEL + channel
        return self.placement.waiting(kind) + self.streams.held_of(kind)

    # ---------------------------------------------------------------------- batches

    def take_batches(self) -> list[SampleBatch]:
        """Batches ready since the last call, oldest first, checked and counted."""
        return [self.record(self.finish(raw)) for raw in self.take_raw_batches()]

    def take_raw_batches(self) -> list[RawBatch]:
        """:meth:`Batcher.take_raw_batches <poam_ros.ingest.batcher.Batcher.take_raw_batches>`."""
        return self.batcher.take_raw_batches()

    def finish(self, raw: RawBatch) -> SampleBatch:
        """:meth:`Batcher.finish <poam_ros.ingest.batcher.Batcher.finish>` (thread-safe)."""
        return self.batcher.finish(raw)

    def record(self, batch: SampleBatch) -> SampleBatch:
        """:meth:`Batcher.record <poam_ros.ingest.batcher.Batcher.record>`."""
        return self.batcher.record(batch)

    def flush_tail(self, reason: str = "end") -> None:
        """Cut what has been placed since the last batch into a batch for the next
        :meth:`take_batches` (a survey that ends mid-leg)."""
        self.batcher.flush_tail(reason)

    # ------------------------------------------------------------------------ inputs

    def add_pose(self, t: float, x: float, y: float, z: float, yaw: float, now: float,
                 frame_id: str | None = None, child_frame_id: str | None = None,
                 orientation: tuple[float, float, float, float] | None = None) -> bool:
        """Odometry at ``t`` s; frames are checked when given. True when it is kept (False
        also while its stamp is held as a suspect).

        ``orientation``: the quaternion (x, y, z, w) ``yaw`` was read from, when the pose
        came as one (odometry): unless it is a rotation (finite, norm within
        ``orientation_tolerance`` of 1) the pose is refused (``pose_invalid_orientation``);
        the atan2 of a zero quaternion's yaw is a made-up heading of 0. Its roll and pitch
        place the swath points; without it the vehicle counts as level."""
        config, drop = self.config, self.drops.drop
        frames = (config.world_frame, config.odom_frame) if config.odom_frame else \
            (config.world_frame,)
        if frame_id is not None and (frame_id not in frames
                                     or child_frame_id != config.base_frame):
            return drop(POSE_WRONG_FRAME, 1, f"odometry in {frame_id!r} -> {child_frame_id!r}"
                        f", expected {' or '.join(map(repr, frames))} -> {config.base_frame!r}")
        if frame_id is not None and frame_id == config.odom_frame:
            x, y, z, yaw = self._map_from_odom.apply(x, y, z, yaw)
        if not all(math.isfinite(v) for v in (t, x, y, z, yaw)):
            return drop(POSE_NONFINITE, 1, f"odometry at t={t} has non-finite values")
        problem = (None if orientation is None
                   else not_a_rotation(orientation, config.orientation_tolerance))
        if problem is not None:
            return drop(POSE_INVALID_ORIENTATION, 1, f"odometry at t={t:.6f} s with {problem}")
        roll, pitch = (0.0, 0.0) if orientation is None else \
            roll_pitch_from_quaternion(orientation)
        return self.streams.judge(ODOM, t, 1, now,
                                  lambda: self._add_pose(t, x, y, z, yaw, now, roll, pitch))

    def _add_pose(self, t: float, x: float, y: float, z: float, yaw: float, now: float,
                  roll: float, pitch: float) -> bool:
        if not self.placement.add_pose(t, x, y, z, yaw, roll, pitch, now):
            return False
        self.position_fixes.forget_before(self.poses.oldest_time)
        self._resolve_fixes()
        self.placement.resolve_pending()
        self._progress(t, x, y)
        self.batcher.try_flush(now)
        return True

    def add_range(self, t: float, distance: float, min_range: float, max_range: float,
                  now: float, frame_id: str | None = None) -> bool:
        """A down-looking range [m] at ``t`` s with the message's limits. True when placed
        or waiting for a pose (False also while its stamp is held as a suspect)."""
        if not self.streams.admit(RANGE, t, frame_id, 1):
            return False
        return self.streams.judge(RANGE, t, 1, now, lambda: self._add_range(
            t, distance, min_range, max_range, now))

    def _add_range(self, t: float, distance: float, min_range: float, max_range: float,
                   now: float) -> bool:
        drop = self.drops.drop
        if distance == math.inf:
            return drop(NO_RETURN, 1, f"no return at t={t:.6f} s")
        if not math.isfinite(distance):
            return drop(NONFINITE_RANGE, 1, f"range {distance} at t={t:.6f} s")
        if distance < 0:
            return drop(NEGATIVE_RANGE, 1, f"range {distance:g} m at t={t:.6f} s")
        if not min_range <= distance <= max_range:
            return drop(RANGE_OUT_OF_LIMITS, 1, f"range {distance:g} m outside the message's "
                        f"[{min_range:g}, {max_range:g}] m")
        return self.placement.place(t, RANGE, float(distance), now)

    def add_swath(self, t: float, points, now: float, frame_id: str | None = None) -> bool:
        """One multibeam ping: ``points`` (N, 3) m in the sonar frame, stamped ``t`` s."""
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3:
            return self.drops.drop(MALFORMED, 1, f"swath points of shape {points.shape}")
        if not self.streams.admit(SWATH, t, frame_id, len(points)):
            return False
        return self.streams.judge(SWATH, t, len(points), now,
                                  lambda: self._add_swath(t, points, now))

    def _add_swath(self, t: float, points: np.ndarray, now: float) -> bool:
        finite = np.isfinite(points).all(axis=1)
        if not finite.all():
            self.drops.drop(NONFINITE_POINT, int((~finite).sum()),
                            f"swath at t={t:.6f} s has non-finite points")
            points = points[finite]
        low, high = self.config.swath_min_range, self.config.swath_max_range
        reach = np.linalg.norm(points, axis=1)
        inside = (reach >= low) & (reach <= high)
        if not inside.all():
            self.drops.drop(RANGE_OUT_OF_LIMITS, int((~inside).sum()),
                            f"swath points outside [{low:g}, {high:g}] m")
            points = points[inside]
        if not len(points):
            return False
        return self.placement.place(t, SWATH, points, now)

    def add_reading(self, t: float, channel: str, value: float, now: float,
                    frame_id: str | None = None) -> bool:
        """A scalar ``channel``'s ``value`` (its units, e.g. °C or Pa) measured at ``t`` s
        at the vehicle's position, in ``frame_id`` (checked against the channel's frame when
        given). True when placed or waiting for a pose. A channel not configured or another
        frame is ``wrong_frame`` (not this ingest's), a non-finite value
        ``nonfinite_point``, one beyond its type's limits ``value_out_of_limits``; stamps
        follow the rules of the ranges, per channel."""
        kind = CHANNEL + channel
        if kind not in self._channels:
            return self.drops.drop(WRONG_FRAME, 1, f"reading of channel {channel!r}, not one "
                                   f"of {self.config.channels!r}")
        self.channel_received[channel] += 1
        if not self.streams.admit(kind, t, frame_id, 1, self._channels[kind].frame):
            return False
        return self.streams.judge(kind, t, 1, now,
                                  lambda: self._add_reading(t, kind, value, now))

    def _add_reading(self, t: float, kind: str, value: float, now: float) -> bool:
        if not math.isfinite(value):
            return self.drops.drop(NONFINITE_POINT, 1, f"{kind} value {value} at t={t:.6f} s")
        channel_type = self._channels[kind].kind
        low, high = value_limits(channel_type, self.config)
        if not low <= value <= high:
            return self.drops.drop(VALUE_OUT_OF_LIMITS, 1, f"{kind} value {value:g} at t="
                                   f"{t:.6f} s outside its plausible [{low:g}, {high:g}] "
                                   f"(limits of a {channel_type} channel)")
        return self.placement.place(t, kind, float(value), now)

    def add_attitude(self, t: float, orientation: tuple[float, float, float, float],
                     now: float, frame_id: str | None = None, known: bool = True) -> bool:
        """The IMU's orientation quaternion (x, y, z, w) at ``t`` s (``imu_attitude``); its
        roll, pitch and yaw are taken from it. ``known``: False where the IMU gives no
        orientation. True when kept; ``wrong_frame`` without ``imu_attitude``."""
        config, drop = self.config, self.drops.drop
        if not config.imu_attitude:
            return drop(WRONG_FRAME, 1, "imu message, but imu_attitude is off")
        if not self.streams.admit(IMU, t, frame_id, 1, config.imu_frame or config.base_frame):
            return False
        if not known:
            return drop(IMU_INVALID, 1, f"imu at t={t:.6f} s gives no orientation "
                        f"(orientation_covariance[0] = -1)")
        problem = not_a_rotation(orientation, config.orientation_tolerance)
        yaw = yaw_from_quaternion(orientation)
        if problem is not None or not math.isfinite(yaw):
            return drop(IMU_INVALID, 1, f"imu at t={t:.6f} s with {problem}")
        roll, pitch = roll_pitch_from_quaternion(orientation)
        return self.streams.judge(IMU, t, 1, now,
                                  lambda: self._add_attitude(t, roll, pitch, yaw, now))

    def _add_attitude(self, t: float, roll: float, pitch: float, yaw: float,
                      now: float) -> bool:
        if not self.placement.attitude_depth.add_attitude(t, roll, pitch, yaw):
            return False  # a turn beyond limits.attitude_rate_max, counted there
        return self._resolved(now)

    def add_pressure(self, t: float, pressure: float, now: float,
                     frame_id: str | None = None) -> bool:
        """The depth sensor's absolute pressure [Pa] at ``t`` s (``depth_from_pressure``):
        the vehicle's z = -depth from then on. True when kept; ``wrong_frame`` without
        ``depth_from_pressure``."""
        config, drop = self.config, self.drops.drop
        if not config.depth_from_pressure:
            return drop(WRONG_FRAME, 1, "pressure message, but depth_from_pressure is off")
        if not self.streams.admit(DEPTH, t, frame_id, 1, config.depth_frame or config.base_frame):
            return False
        depth = self.placement.attitude_depth.depth_of(t, pressure)
        if depth is None:
            return False  # non-finite, or beyond the depth limits: counted there
        return self.streams.judge(DEPTH, t, 1, now, lambda: self._add_depth(t, depth, now))

    def _add_depth(self, t: float, depth: float, now: float) -> bool:
        self.placement.attitude_depth.add_depth(t, depth)
        return self._resolved(now)

    def add_fix(self, t: float, latitude: float, longitude: float, now: float,
                status: int = 0, horizontal_std: float | None = None) -> bool:
        """A horizontal position fix at ``t`` s (:meth:`PositionFixes.check
        <poam_ros.ingest.fixes.PositionFixes.check>`). True when applied or waiting for a
        pose."""
        place = self.position_fixes.check(t, latitude, longitude, status, horizontal_std)
        if place is None:
            return False
        return self.streams.judge(FIX, t, 1, now,
                                  lambda: self._add_fix(t, *place, now, horizontal_std))

    def _add_fix(self, t: float, x: float, y: float, now: float,
                 horizontal_std: float | None) -> bool:
        self.position_fixes.queue(t, x, y, now, horizontal_std)
        self._resolve_fixes()
        return True

    def drop_malformed(self, detail: str) -> None:
        """Count a message the node could not read at all."""
        self.drops.drop(MALFORMED, 1, detail)

    def set_plan(self, waypoints, stamp: float, now: float, frame_id: str | None = None
                 ) -> None:
        """The vehicle's new plan (K, 2) m; K = 0 clears it.

        Odometry the vehicle sent after starting the plan may come in before the plan
        itself, so progress is replayed over the poses kept since the plan began
        (:meth:`Batcher.set_plan <poam_ros.ingest.batcher.Batcher.set_plan>`). Poses from
        before the plan could otherwise count as reaching its waypoints."""
        if frame_id is not None and frame_id != self.config.world_frame:
            log.warning("plan in frame %r ignored: expected %r", frame_id,
                        self.config.world_frame)
            return
        points = np.asarray(waypoints, dtype=float).reshape(-1, 2)
        if not np.isfinite(points).all():
            log.warning("plan with non-finite waypoints ignored")
            return
        start = self.batcher.set_plan(points, stamp)
        for t, x, y, *_ in self.poses.poses_since(start):
            if not self.batcher.following:
                break
            self._progress(t, x, y)
        self.batcher.try_flush(now)

    def poll(self, now: float) -> None:
        """Expire pending readings and fixes and arrival grace periods at wall time ``now``
        [s], and resolve a clock reset that has waited its bound; call a few times a second."""
        self.streams.expire(now)
        self.placement.expire(now)
        self.position_fixes.expire(now, self.placement.last_pose_wall)
        self.batcher.try_flush(now)

    # ---------------------------------------------------------------------- internals

    def _resolved(self, now: float) -> bool:
        """An attitude or a depth was added: place what waited for it, check the arrival;
        True (kept)."""
        self.placement.resolve_pending()
        self.batcher.try_flush(now)
        return True

    def _resolve_fixes(self) -> None:
        """Apply the fixes the poses now reach; the samples placed since move with them."""
        for t, shift in self.position_fixes.resolve(self.poses):
            self.batcher.shift(t, shift)

    def _progress(self, t: float, x: float, y: float) -> None:
        """The plan's progress at the odometry's (x, y) at ``t`` plus the fixes' correction."""
        dx, dy = self.position_fixes.at(t)
        self.batcher.progress(t, x + dx, y + dy)

    def _reset(self, stream: str, old: float, stamps: list[float]) -> str:
        """``stream``'s clock moved from ``old`` to ``stamps`` (the confirmed run, in order
        [s]): restart what belongs to the old clock (see the module docstring); what, in
        words."""
        if stream != ODOM:
            self.streams.restart(stream)
            if stream in (IMU, DEPTH):
                self.placement.attitude_depth.clear(stream)
            return "its order restarted"
        self.batcher.restart()
        self.placement.clear()
        for name in self.placement.attitude_depth.streams:
            self.streams.restart(name)
        low = stamps[0] - self.config.stamp_jump_threshold
        high = stamps[-1] + self.config.stamp_jump_threshold
        self.position_fixes.restart(low, high)
        abandoned = self.placement.abandon(lambda t, _: low <= t <= high)
        if abandoned:
            self.drops.drop(CLOCK_RESET, abandoned, f"{abandoned} samples waiting for a pose "
                            f"of the odom clock before its reset at {stamps[0]:.6f} s")
        return (f"pose history and batch restarted, {abandoned} waiting samples of the old "
                f"clock dropped")


def _checked(config: IngestConfig) -> StaticTransform:
    """The ``map`` ← ``odom`` transform of ``config``; ``ValueError`` where it is not one or
    where ``filter_backend`` open3d is missing (now, not at the first swath)."""
    transform = StaticTransform.from_values(config.map_from_odom, config.orientation_tolerance)
    if config.filter_backend == "open3d":
        resolve_backend("open3d")
    return transform
