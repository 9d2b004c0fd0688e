"""Sensor ingest without ROS: sonar readings + vehicle poses -> validated, georeferenced batches.

:class:`Ingest` takes odometry poses, echo-sounder ranges, multibeam swaths, the readings of
scalar channels (``channels``: a temperature, a pressure, any stamped scalar), position
fixes and IMU and pressure readings as plain numbers and arrays (times in seconds of the
readings' own clock, sim time in simulation; ``now`` arguments are wall-clock seconds,
``time.monotonic()``, which only grace periods and timeouts use, so tests drive the clock)
and hands out :class:`~poam_ros.ingest.batcher.SampleBatch` es of samples ``(x, y,
elevation)`` in the world frame (with C channels ``(x, y, elevation, value_1 … value_C)``,
NaN where a sample did not measure it). Each message passes its own checks, then the clock
and order rules of every stream, then it is used; the coordinator routes it through the
parts that own the state, each of which specifies its input's rules:

* :class:`~poam_ros.ingest.poses.Odometry`: the odometry's frames, checks and pose history;
* :class:`~poam_ros.ingest.attitude_depth.AttitudeDepth`: the IMU's attitude and the
  pressure sensor's depth, their checks and series;
* :class:`~poam_ros.ingest.sonar.Sonar`: the checks of the ranges and the swaths;
* :class:`~poam_ros.ingest.channels.Channels`: the scalar channels' sources and checks;
* :class:`~poam_ros.ingest.fixes.PositionFixes`: position fixes and the corrections they set;
* :class:`~poam_ros.ingest.streams.Streams`: each stream's frame, clock rule (a glitched
  stamp told from a clock change), order and completeness;
* :class:`~poam_ros.ingest.placement.Placement`: the readings placed at the poses or
  waiting for them;
* :class:`~poam_ros.ingest.batcher.Batcher`: the plan's progress and the batches cut at
  decision points and on the size and age limits, checked and counted;
* :class:`~poam_ros.ingest.reasons.Drops`: the drops, per reason.

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
(:mod:`~poam_ros.ingest.reasons`) in ``Ingest.drops.counts``, the latest case's detail in
``Ingest.drops.details``.

A node cuts batches in its callbacks (cheap) and checks them (:meth:`Batcher.finish
<poam_ros.ingest.batcher.Batcher.finish>`: swath filters, workspace; the heavy part) on a
worker thread; :meth:`Ingest.take_batches` does both at once for callers without threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from poam_ros.ingest.attitude_depth import DEPTH, IMU, AttitudeDepth
from poam_ros.ingest.batcher import Batcher, SampleBatch
from poam_ros.ingest.channels import CHANNEL, Channels
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.fixes import PositionFixes
from poam_ros.ingest.placement import Placement
from poam_ros.ingest.poses import Odometry, Pose
from poam_ros.ingest.reasons import CLOCK_RESET, MALFORMED, Drops
from poam_ros.ingest.sonar import Sonar
from poam_ros.ingest.streams import FIX, ODOM, RANGE, SWATH, Streams
from poam_ros.workspace import Workspace

if TYPE_CHECKING:  # the anchor is handed in: the ingest itself needs no pyproj or rasterio
    from poam_ros.geo.georeference import GeoReference


class Ingest:
    """The ingest's coordinator; see the module docstring. ``workspace``: samples outside it
    are dropped (None keeps all); ``georeference``: the map's geodetic anchor, which position
    fixes need (None: they are dropped). ``ValueError`` where ``map_from_odom`` is no
    transform or ``filter_backend`` open3d is missing (now, not at the first swath)."""

    def __init__(self, config: IngestConfig, workspace: Workspace | None = None,
                 georeference: GeoReference | None = None) -> None:
        self.config = config
        self.drops = Drops()
        self.odometry = Odometry(config, self.drops)
        self.streams = Streams(config, self.drops, self._reset,
                               lambda: self.batcher.published_until)
        self.position_fixes = PositionFixes(config, self.drops, georeference)
        self.batcher = Batcher(config, self.streams, self.drops, workspace)
        self.attitude_depth = AttitudeDepth(config, self.drops)
        self.channels = Channels(config, self.drops)
        self.sonar = Sonar(config, self.drops)
        self.placement = Placement(config, self.drops, self.odometry, self.attitude_depth,
                                   self.position_fixes, self.batcher)

    def configure(self, config: IngestConfig) -> None:
        """Apply a new configuration; every part keeps what it holds. ``ValueError``, with
        nothing changed, for other channels than the first configuration's (they fix the
        samples' columns) and as the constructor's."""
        self.channels.check(config)
        Batcher.check(config)
        self.odometry.configure(config)  # its transform is checked before it changes
        self.config = config
        for part in (self.streams, self.position_fixes, self.batcher, self.attitude_depth,
                     self.channels, self.sonar, self.placement):
            part.configure(config)

    def channel_waiting(self, channel: str) -> int:
        """Readings of ``channel`` waiting for a pose or held (``streams.held``): neither
        placed nor dropped yet (the rest of ``channels.received`` are one or the other)."""
        kind = CHANNEL + channel
        return self.placement.waiting(kind) + self.streams.held_of(kind)

    # ---------------------------------------------------------------------- batches

    def take_batches(self) -> list[SampleBatch]:
        """Batches ready since the last call, oldest first, checked and counted."""
        batcher = self.batcher
        return [batcher.record(batcher.finish(raw)) for raw in batcher.take_raw_batches()]

    def flush_tail(self, reason: str = "end") -> None:
        """Cut what has been placed since the last batch into a batch for the next
        :meth:`take_batches` (a survey that ends mid-leg)."""
        self.batcher.flush_tail(reason)

    # ------------------------------------------------------------------------ inputs

    def add_pose(self, t: float, x: float, y: float, z: float, yaw: float, now: float,
                 frame_id: str | None = None, child_frame_id: str | None = None,
                 orientation: tuple[float, float, float, float] | None = None) -> bool:
        """Odometry at ``t`` s (:mod:`~poam_ros.ingest.poses`: frames are checked when
        given; ``orientation``, the quaternion (x, y, z, w) ``yaw`` was read from, when the
        pose came as one). True when it is kept (False also while its stamp is held as a
        suspect)."""
        pose = self.odometry.check(t, x, y, z, yaw, frame_id, child_frame_id, orientation)
        if pose is None:
            return False
        return self.streams.judge(ODOM, t, 1, now, lambda: self._add_pose(t, pose, now))

    def _add_pose(self, t: float, pose: Pose, now: float) -> bool:
        if not self.odometry.add(t, pose, now):
            return False
        self.position_fixes.forget_before(self.odometry.poses.oldest_time)
        self._resolve_fixes()
        self.placement.resolve_pending()
        self._progress(t, pose.x, pose.y)
        self.batcher.try_flush(now)
        return True

    def add_range(self, t: float, distance: float, min_range: float, max_range: float,
                  now: float, frame_id: str | None = None) -> bool:
        """A down-looking range [m] at ``t`` s with the message's limits
        (:mod:`~poam_ros.ingest.sonar`). True when placed or waiting for a pose (False also
        while its stamp is held as a suspect)."""
        if not self.streams.admit(RANGE, t, frame_id, 1):
            return False
        return self.streams.judge(RANGE, t, 1, now, lambda: self.sonar.range_ok(
            t, distance, min_range, max_range) and self.placement.place(
            t, RANGE, float(distance), now))

    def add_swath(self, t: float, points, now: float, frame_id: str | None = None) -> bool:
        """One multibeam ping: ``points`` (N, 3) m in the sonar frame, stamped ``t`` s
        (:mod:`~poam_ros.ingest.sonar`). True when placed or waiting for a pose."""
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3:
            return self.drops.drop(MALFORMED, 1, f"swath points of shape {points.shape}")
        if not self.streams.admit(SWATH, t, frame_id, len(points)):
            return False
        return self.streams.judge(SWATH, t, len(points), now,
                                  lambda: self._add_swath(t, points, now))

    def _add_swath(self, t: float, points: np.ndarray, now: float) -> bool:
        points = self.sonar.swath_points(t, points)
        return bool(len(points)) and self.placement.place(t, SWATH, points, now)

    def add_reading(self, t: float, channel: str, value: float, now: float,
                    frame_id: str | None = None) -> bool:
        """A scalar ``channel``'s ``value`` (its units, e.g. °C or Pa) measured at ``t`` s
        at the vehicle's position, in ``frame_id`` (checked against the channel's frame when
        given; :mod:`~poam_ros.ingest.channels`). True when placed or waiting for a pose."""
        kind = self.channels.stream_of(channel)
        if kind is None or not self.streams.admit(kind, t, frame_id, 1,
                                                  self.channels.sources[kind].frame):
            return False
        return self.streams.judge(kind, t, 1, now, lambda: self.channels.plausible(
            t, kind, value) and self.placement.place(t, kind, float(value), now))

    def add_attitude(self, t: float, orientation: tuple[float, float, float, float],
                     now: float, frame_id: str | None = None, known: bool = True) -> bool:
        """The IMU's orientation quaternion (x, y, z, w) at ``t`` s (``imu_attitude``,
        :mod:`~poam_ros.ingest.attitude_depth`); its roll, pitch and yaw are taken from it.
        ``known``: False where the IMU gives no orientation. True when kept."""
        series = self.attitude_depth
        if not series.expects(IMU) or not self.streams.admit(IMU, t, frame_id, 1,
                                                             series.frame(IMU)):
            return False
        attitude = series.attitude_of(t, orientation, known)
        return attitude is not None and self.streams.judge(IMU, t, 1, now, lambda: (
            series.add_attitude(t, *attitude) and self._resolved(now)))

    def add_pressure(self, t: float, pressure: float, now: float,
                     frame_id: str | None = None) -> bool:
        """The depth sensor's absolute pressure [Pa] at ``t`` s (``depth_from_pressure``,
        :mod:`~poam_ros.ingest.attitude_depth`): the vehicle's z = -depth from then on. True
        when kept."""
        series = self.attitude_depth
        if not series.expects(DEPTH) or not self.streams.admit(DEPTH, t, frame_id, 1,
                                                               series.frame(DEPTH)):
            return False
        depth = series.depth_of(t, pressure)
        return depth is not None and self.streams.judge(DEPTH, t, 1, now, lambda: (
            series.add_depth(t, depth) and self._resolved(now)))

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
        """The vehicle's new plan (K, 2) m; K = 0 clears it (:meth:`Batcher.set_plan
        <poam_ros.ingest.batcher.Batcher.set_plan>`: one in another frame, or with
        non-finite waypoints, is ignored).

        Odometry the vehicle sent after starting the plan may come in before the plan
        itself, so progress is replayed over the poses kept since the plan began. Poses from
        before the plan could otherwise count as reaching its waypoints."""
        start = self.batcher.set_plan(waypoints, stamp, frame_id)
        if start is None:
            return
        for t, x, y, *_ in self.odometry.poses.poses_since(start):
            if not self.batcher.following:
                break
            self._progress(t, x, y)
        self.batcher.try_flush(now)

    def poll(self, now: float) -> None:
        """Expire pending readings and fixes and arrival grace periods at wall time ``now``
        [s], and resolve a clock reset that has waited its bound; call a few times a second."""
        self.streams.expire(now)
        self.placement.expire(now)
        self.position_fixes.expire(now, self.odometry.last_pose_wall)
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
        for t, shift in self.position_fixes.resolve(self.odometry.poses):
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
                self.attitude_depth.clear(stream)
            return "its order restarted"
        self.batcher.restart()
        self.odometry.poses.clear()
        self.attitude_depth.clear()
        for name in self.attitude_depth.streams:
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
