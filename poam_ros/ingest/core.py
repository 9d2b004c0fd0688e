"""Sensor ingest without ROS: sonar readings + vehicle poses -> validated, georeferenced batches.

:class:`Ingest` takes odometry poses, echo-sounder ranges, multibeam swaths and the readings
of scalar channels (``channels``: a temperature, a pressure, any stamped scalar) as plain
numbers and arrays (times in seconds of the readings' own clock, sim time in simulation),
places each reading at the vehicle pose interpolated at its timestamp
(:class:`~poam_ros.ingest.pose_history.PoseHistory`), turns it into samples ``(x, y,
elevation)`` in the world frame (with C channels ``(x, y, elevation, value_1 … value_C)``, NaN
where a sample did not measure it) and hands out :class:`SampleBatch` es:

* at a **decision point**, when the vehicle reaches the end of the current plan (the same
  rule as :meth:`SurveySimulator.follow`: skip every waypoint within the goal radius, in
  order; the plan's last one reached is the arrival). The batch holds exactly the samples
  stamped up to the arrival pose's time;
* when the batch reaches ``max_batch_size`` samples or spans ``max_batch_age`` seconds
  (continuous surveys).

Geometry. A range is measured straight down, so its sample is ``(x, y, z - range)`` at the
interpolated pose; a channel reading's sample is the vehicle's ``(x, y)`` there (the
sensor's lever arm is neglected: a scalar field varies little over a vehicle's length). A
swath point ``p`` in the sonar frame becomes ``position + R_vehicle (t_mount + R_mount p)``:
the sonar sits at the lever arm ``t_mount`` (``sonar_mount_xyz``, vehicle frame: x forward,
y left, z up) rotated by ``R_mount`` (``sonar_mount_rpy``), and the vehicle's attitude
``R_vehicle`` = R(roll, pitch, yaw) (:mod:`poam_ros.attitude`) comes from the odometry's
quaternion (level when a pose comes without one). Sound-velocity (ray bending) correction is
out of scope: beams are straight.

Decision-point exactness. DDS keeps each topic in order but not the topics among
themselves: the odometry at the arrival time can come before a sounding stamped earlier.
The arrival batch is therefore held back until every active sensor stream is known to have
delivered everything stamped up to the arrival: a reading stamped after it has come (a
stream is in order), or the stream's next reading is due after it (its last stamp plus its
period: the configured rate, or the shortest interval seen, whichever is shorter). A stream
with a configured rate is always waited for; one without, once it has shown up. If that
does not happen within ``flush_grace`` seconds of wall time (a reading was lost), the batch
goes out anyway and the late reading is dropped as ``late`` rather than put in the next
batch. ``now`` arguments are wall-clock seconds (``time.monotonic()``); only the grace and
pending timeouts use them, so tests drive the clock.

Clocks. Each stream (odometry, ranges, swaths) keeps its own clock, the newest stamp it
accepted, and a stamp more than ``stamp_jump_threshold`` seconds from it is held as a suspect
(:class:`~poam_ros.ingest.clock_jumps.ClockJumps`): a glitch if a stamp near the clock comes
next (dropped: ``pose_stamp_outlier``, ``stamp_outlier``), a clock change if
``stamp_reset_count`` suspects in a row agree with each other. Such a reset is counted in
:attr:`Ingest.clock_resets`, described in :attr:`Ingest.reset_details` and logged, and the
run of suspects is then used as the new clock's first messages. The odometry's reset
restarts everything tied to the old clock: what was placed goes out as batches (a pending
arrival's, then the rest with reason ``reset``: it was placed correctly), the pose history is
cleared, and readings waiting for a pose are dropped (``clock_reset``) unless their stamps
agree with the new clock (within the threshold of the run). The plan's progress is kept: the
waypoints reached are places, which a clock change does not move (clearing it would wait for
the vehicle to return to a waypoint it passed); its end is then judged on the new clock. A
range or swath stream's reset restarts that stream's order and drops its readings still
waiting (all of the old clock). Ordinary reordering, within the threshold, is dropped as
before (``out_of_order``).

Bad input never reaches a batch. Each drop is counted under its reason in
:attr:`Ingest.dropped` (samples: one per range, one per swath point; ``pose_*`` reasons
and ``malformed_message`` count messages) and the latest case's detail is in
:attr:`Ingest.details`. A pose whose orientation quaternion is not a rotation (a zero
quaternion, a norm off 1 by more than ``orientation_tolerance``) is refused rather than
placed with the heading atan2 makes up for it.

Navigation (:mod:`~poam_ros.ingest.navigation`). Odometry may also come in ``odom_frame``,
placed in the world frame by the declared static transform ``map_from_odom`` before any pose
check. A position fix (:meth:`Ingest.add_fix`: latitude and longitude, converted with the
map's geodetic anchor) is a declared reset of the horizontal position, never fused: the
correction fix − odometry at the fix's stamp is added to the odometry from that stamp on,
including to readings placed since then and not yet handed out (those already handed out
stay where they were). The pose history keeps the odometry as it came, so the speed limit
judges the odometry against itself and a 100 m USBL correction drops no pose. A fix whose
stamp is ahead of every pose waits for one (``pending_timeout``). Fixes are dropped, counted
per message, without the anchor (``fix_no_anchor``), with status NO_FIX (``fix_no_fix``), a
non-finite stamp, latitude or longitude (``fix_nonfinite``), a latitude or longitude out of
range or where the anchor's projection has no place for it (``fix_out_of_range``), a
reported horizontal std above ``fix_max_std`` (``fix_imprecise``), a stamp not after the
previous fix's (``fix_out_of_order``) or no pose to reset at its stamp (``fix_no_pose``).
With ``imu_attitude`` and ``depth_from_pressure`` the attitude and the depth come from an
IMU and a pressure sensor instead (:mod:`~poam_ros.ingest.attitude_depth`: a reading waits
until they reach its stamp); their messages are dropped, counted per message, in another
frame (``wrong_frame``), with no orientation or one that is not a rotation
(``imu_invalid``) or a non-finite pressure (``pressure_invalid``), and out of order as
the readings are.

A node cuts batches in its callbacks (cheap) and checks them (:meth:`Ingest.finish`: swath
filters, workspace, duplicates; the heavy part) on a worker thread; :meth:`take_batches`
does both at once for callers without threads.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from poam_ros.attitude import roll_pitch_from_quaternion, rotation_matrix, yaw_from_quaternion
from poam_ros.ingest.attitude_depth import DEPTH, IMU, AttitudeDepth, depth_from_pressure
from poam_ros.ingest.channels import channel_sources
from poam_ros.ingest.clock_jumps import ClockJumps, Verdict
from poam_ros.ingest.cloud_filters import (
    resolve_backend,
    statistical_inliers,
    voxel_downsample,
)
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.navigation import HorizontalResets, StaticTransform
from poam_ros.ingest.pose_history import STAMP_TOLERANCE, Lookup, PoseHistory, not_a_rotation
from poam_ros.workspace import Workspace

if TYPE_CHECKING:  # the anchor is handed in: the ingest itself needs no pyproj or rasterio
    from poam_ros.geo.georeference import GeoReference

log = logging.getLogger(__name__)

# Drop reasons. Counted in samples, except pose_* and malformed_message (messages).
WRONG_FRAME = "wrong_frame"
NO_RETURN = "no_return"  # a range of +inf: the sonar detected nothing (REP-117)
NONFINITE_RANGE = "nonfinite_range"
NEGATIVE_RANGE = "negative_range"
RANGE_OUT_OF_LIMITS = "range_out_of_limits"
NONFINITE_POINT = "nonfinite_point"
MALFORMED = "malformed_message"
OUT_OF_ORDER = "out_of_order"
STALE_STAMP = "stale_stamp"
POSE_GAP = "pose_gap"
NO_POSE = "no_pose"
QUEUE_OVERFLOW = "queue_overflow"
LATE = "late"
OUTSIDE_WORKSPACE = "outside_workspace"
VOXEL_MERGED = "voxel_merged"
STATISTICAL_OUTLIER = "statistical_outlier"
POSE_WRONG_FRAME = "pose_wrong_frame"
POSE_NONFINITE = "pose_nonfinite"
POSE_DUPLICATE = "pose_duplicate"
POSE_OUT_OF_ORDER = "pose_out_of_order"
POSE_JUMP = "pose_jump"
POSE_INVALID_ORIENTATION = "pose_invalid_orientation"  # the quaternion is not a rotation
POSE_STAMP_OUTLIER = "pose_stamp_outlier"  # a glitched stamp, far from the odometry's clock
STAMP_OUTLIER = "stamp_outlier"            # the same for a range or swath
CLOCK_RESET = "clock_reset"  # a reading waiting for a pose of a clock that a reset abandoned
DUPLICATE = "duplicate"  # a second message of a stream with the same stamp
# Position fixes, counted in messages (see the module docstring).
FIX_NO_ANCHOR = "fix_no_anchor"
FIX_NO_FIX = "fix_no_fix"
FIX_NONFINITE = "fix_nonfinite"
FIX_OUT_OF_RANGE = "fix_out_of_range"
FIX_IMPRECISE = "fix_imprecise"
FIX_OUT_OF_ORDER = "fix_out_of_order"
FIX_NO_POSE = "fix_no_pose"
# Attitude and depth sensors (attitude_depth.py), counted in messages.
IMU_INVALID = "imu_invalid"            # no orientation, or one that is not a rotation
PRESSURE_INVALID = "pressure_invalid"  # a non-finite pressure
FIX_REASONS = (FIX_NO_ANCHOR, FIX_NO_FIX, FIX_NONFINITE, FIX_OUT_OF_RANGE, FIX_IMPRECISE,
               FIX_OUT_OF_ORDER, FIX_NO_POSE)
REASONS = (WRONG_FRAME, NO_RETURN, NONFINITE_RANGE, NEGATIVE_RANGE, RANGE_OUT_OF_LIMITS,
           NONFINITE_POINT, MALFORMED, DUPLICATE, OUT_OF_ORDER, STALE_STAMP, STAMP_OUTLIER,
           CLOCK_RESET, POSE_GAP, NO_POSE, QUEUE_OVERFLOW, LATE, OUTSIDE_WORKSPACE,
           VOXEL_MERGED, STATISTICAL_OUTLIER, POSE_WRONG_FRAME, POSE_NONFINITE,
           POSE_INVALID_ORIENTATION, POSE_DUPLICATE, POSE_OUT_OF_ORDER, POSE_STAMP_OUTLIER,
           POSE_JUMP, IMU_INVALID, PRESSURE_INVALID, *FIX_REASONS)

ODOM, RANGE, SWATH = "odom", "range", "swath"  # streams; RANGE and SWATH are reading kinds
CHANNEL = "channel:"  # + a channel's name: its stream and reading kind


@dataclass
class SampleBatch:
    """Samples ready for the mapper: ``points`` (N, 3 + C) = x m, y m, elevation and the
    values of the C configured channels (NaN where a sample did not measure one), world frame.

    ``stamp`` [s] is the time the batch runs up to (the arrival pose's time at a decision
    point), ``reason`` why it was cut (``arrival``, ``size`` or ``age``) and ``dropped``
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
    """A batch as cut, before :meth:`Ingest.finish`: (N, 3) samples of ranges and (M, 3)
    swath points still to filter, world frame; ``sequence`` numbers the batches cut;
    ``readings`` (K, 3 + C): the channels' samples (None without channels)."""

    stamp: float
    reason: str
    ranges: np.ndarray
    swaths: np.ndarray
    sequence: int = 0
    readings: np.ndarray | None = None


@dataclass
class _Stream:
    """What a sensor topic has delivered so far (for ordering and completeness)."""

    rate: float
    last: float = -math.inf        # newest stamp seen with the right frame
    shortest: float = math.inf     # shortest interval between two stamps

    def saw(self, t: float) -> None:
        if math.isfinite(self.last):
            self.shortest = min(self.shortest, t - self.last)
        self.last = t

    def complete_until(self, t: float) -> bool:
        """Whether everything this stream stamps up to ``t`` has arrived (no loss)."""
        if self.last > t + STAMP_TOLERANCE:
            return True
        period = min(1.0 / self.rate if self.rate > 0 else math.inf, self.shortest)
        return math.isfinite(period) and self.last + period > t + STAMP_TOLERANCE


class Ingest:
    """The ingest core; see the module docstring. ``workspace``: samples outside it are
    dropped (None keeps all); ``georeference``: the map's geodetic anchor, which position
    fixes need (None: they are dropped)."""

    def __init__(self, config: IngestConfig, workspace: Workspace | None = None,
                 georeference: GeoReference | None = None) -> None:
        self.workspace = workspace
        self.georeference = georeference
        self.fixes = 0                    # position fixes applied
        self.last_fix_correction = 0.0    # m, how far the latest fix moved the position
        self._resets = HorizontalResets()
        self._pending_fixes: deque = deque()  # (t, x, y, received) ahead of every pose
        self.dropped: Counter = Counter()
        self.details: dict[str, str] = {}
        self.accepted = 0        # samples placed in a batch-to-be
        self.published = 0       # samples in recorded batches
        self.batches = 0         # batches recorded
        self.flushes_on_grace = 0
        self._ready: list[RawBatch] = []
        self._chunks: list[tuple[float, str, np.ndarray]] = []  # (t, kind, (n, 3) points)
        self._batch_samples = 0
        self._pending: deque = deque()   # (t, kind, payload, received)
        self._plan: list[list[float]] | None = None
        self._plan_index = 0
        self._arrival: tuple[float, float] | None = None   # (stamp, wall deadline)
        self._last_arrival = -math.inf
        self._last_pose_wall = -math.inf  # wall time of the newest pose kept
        self._flushed_until = -math.inf  # stamp of the last decision-point batch
        self._cut = 0  # raw batches cut so far
        self.clock_resets: Counter = Counter()  # per stream: odom, range, swath
        self.reset_details: dict[str, str] = {}  # per stream, its latest reset
        self._clocks = {ODOM: ClockJumps(), RANGE: ClockJumps(), SWATH: ClockJumps()}
        self.channel_received: Counter = Counter()  # per channel, readings handed in
        self.channel_placed: Counter = Counter()    # per channel, readings placed as samples
        self.configure(config)

    # ------------------------------------------------------------------ configuration

    def configure(self, config: IngestConfig) -> None:
        """Apply a new configuration; the pose history keeps what it holds. The channels fix
        the samples' columns: ``ValueError`` for other channels than the first configuration's."""
        if hasattr(self, "config") and config.channels != self.config.channels:
            raise ValueError(f"the ingest's channels {self.config.channels!r} cannot change to "
                             f"{config.channels!r}: they fix the samples' columns")
        self.config = config
        self._map_from_odom = StaticTransform.from_values(config.map_from_odom,
                                                          config.orientation_tolerance)
        if not hasattr(self, "poses"):
            self.poses = PoseHistory(config.pose_history, config.max_pose_gap)
            self._streams = {RANGE: _Stream(config.sonar_rate),
                             SWATH: _Stream(config.swath_rate)}
        self.poses.horizon, self.poses.max_gap = config.pose_history, config.max_pose_gap
        self._streams[RANGE].rate = config.sonar_rate
        self._streams[SWATH].rate = config.swath_rate
        rates = config.channel_rates or [0.0] * len(config.channels)
        for name, rate in zip(config.channels, rates):
            self._streams.setdefault(CHANNEL + name, _Stream(rate)).rate = rate
            self._clocks.setdefault(CHANNEL + name, ClockJumps())
        self._channel_index = {CHANNEL + name: index
                               for index, name in enumerate(config.channels)}
        self._channel_frames = {CHANNEL + source.name: source.frame
                                for source in channel_sources(config)}
        if not hasattr(self, "_attitude_depth"):
            self._attitude_depth = AttitudeDepth(config)
        self._attitude_depth.configure(config)
        for name in self._attitude_depth.streams:
            self._streams.setdefault(name, _Stream(0.0))
        if config.filter_backend == "open3d":
            resolve_backend("open3d")  # fail now, not at the first swath, where it is missing

    @property
    def pending(self) -> int:
        """Readings waiting for a pose."""
        return len(self._pending)

    def channel_waiting(self, channel: str) -> int:
        """Readings of ``channel`` waiting for a pose or held as suspect stamps: neither placed
        nor dropped yet (the rest of :attr:`channel_received` are one or the other)."""
        kind = CHANNEL + channel
        return (sum(entry[1] == kind for entry in self._pending)
                + (self._clocks[kind].held if kind in self._clocks else 0))

    @property
    def held(self) -> int:
        """Messages held as suspect stamps, every stream together."""
        return sum(clock.held for clock in self._clocks.values())

    @property
    def batch_size(self) -> int:
        """Samples placed and not yet handed out."""
        return self._batch_samples

    @property
    def plan_progress(self) -> tuple[int, int]:
        """(waypoints reached, waypoints) of the current plan; (0, 0) without one."""
        return (self._plan_index, len(self._plan)) if self._plan else (0, 0)

    def take_batches(self) -> list[SampleBatch]:
        """Batches ready since the last call, oldest first, checked and counted."""
        return [self.record(self.finish(raw)) for raw in self.take_raw_batches()]

    def take_raw_batches(self) -> list[RawBatch]:
        """Batches cut since the last call, oldest first, not yet checked: hand each to
        :meth:`finish` and then :meth:`record`, in order (:meth:`record` refuses another)."""
        ready, self._ready = self._ready, []
        return ready

    def flush_tail(self, reason: str = "end") -> None:
        """Cut what has been placed since the last batch (a survey that ends mid-leg: no
        decision point will come) into a batch for the next :meth:`take_batches`."""
        if self._chunks:
            self._flush(math.inf, reason)

    # ------------------------------------------------------------------------ inputs

    def add_pose(self, t: float, x: float, y: float, z: float, yaw: float, now: float,
                 frame_id: str | None = None, child_frame_id: str | None = None,
                 orientation: tuple[float, float, float, float] | None = None) -> bool:
        """Odometry at ``t`` s; frames are checked when given. True when it is kept (False
        also while its stamp is held as a suspect: see the module docstring).

        ``orientation``: the quaternion (x, y, z, w) ``yaw`` was read from, when the pose
        came as one (odometry): unless it is a rotation (finite, norm within
        ``orientation_tolerance`` of 1) the pose is refused (``pose_invalid_orientation``);
        the atan2 of a zero quaternion's yaw is a made-up heading of 0. Its roll and pitch
        place the swath points; without it the vehicle counts as level."""
        config = self.config
        frames = (config.world_frame, config.odom_frame) if config.odom_frame else \
            (config.world_frame,)
        if frame_id is not None and (frame_id not in frames
                                     or child_frame_id != config.base_frame):
            return self._drop(POSE_WRONG_FRAME, 1, f"odometry in {frame_id!r} -> "
                              f"{child_frame_id!r}, expected {' or '.join(map(repr, frames))}"
                              f" -> {config.base_frame!r}")
        if frame_id is not None and frame_id == config.odom_frame:
            x, y, z, yaw = self._map_from_odom.apply(x, y, z, yaw)
        if not all(math.isfinite(v) for v in (t, x, y, z, yaw)):
            return self._drop(POSE_NONFINITE, 1, f"odometry at t={t} has non-finite values")
        problem = (None if orientation is None
                   else not_a_rotation(orientation, config.orientation_tolerance))
        if problem is not None:
            return self._drop(POSE_INVALID_ORIENTATION, 1, f"odometry at t={t:.6f} s with "
                              f"{problem}")
        roll, pitch = (0.0, 0.0) if orientation is None else \
            roll_pitch_from_quaternion(orientation)
        return self._judge(ODOM, t, 1,
                           lambda: self._add_pose(t, x, y, z, yaw, now, roll, pitch))

    def _add_pose(self, t: float, x: float, y: float, z: float, yaw: float, now: float,
                  roll: float = 0.0, pitch: float = 0.0) -> bool:
        """Order, duplicates and jumps of a pose past the clock rule; then it is kept."""
        config = self.config
        latest = self.poses.latest
        if latest is not None:
            t_last, x_last, y_last = latest[:3]
            if abs(t - t_last) <= STAMP_TOLERANCE:
                return self._drop(POSE_DUPLICATE, 1, f"second odometry stamped {t:.9f} s")
            if t < t_last:
                return self._drop(POSE_OUT_OF_ORDER, 1, f"odometry stamped {t:.6f} s after "
                                  f"one stamped {t_last:.6f} s")
            distance = math.hypot(x - x_last, y - y_last)
            if distance > config.max_speed * (t - t_last) + config.jump_tolerance:
                return self._drop(POSE_JUMP, 1, f"odometry jumped {distance:.3g} m in "
                                  f"{t - t_last:.3g} s (max_speed {config.max_speed:g} m/s)")
        self.poses.append(t, x, y, z, yaw, roll, pitch)
        self._resets.forget_before(self.poses.oldest_time)
        self._last_pose_wall = now
        self._resolve_fixes(now)
        self._resolve_pending(now)
        self._progress(t, x, y)
        self._try_flush(now)
        return True

    def add_range(self, t: float, distance: float, min_range: float, max_range: float,
                  now: float, frame_id: str | None = None) -> bool:
        """A down-looking range [m] at ``t`` s with the message's limits. True when placed
        or waiting for a pose (False also while its stamp is held as a suspect)."""
        if not self._admit(RANGE, t, frame_id, 1):
            return False
        return self._judge(RANGE, t, 1,
                           lambda: self._add_range(t, distance, min_range, max_range, now))

    def _add_range(self, t: float, distance: float, min_range: float, max_range: float,
                   now: float) -> bool:
        if not self._in_order(RANGE, t, 1):
            return False
        if distance == math.inf:
            return self._drop(NO_RETURN, 1, f"no return at t={t:.6f} s")
        if not math.isfinite(distance):
            return self._drop(NONFINITE_RANGE, 1, f"range {distance} at t={t:.6f} s")
        if distance < 0:
            return self._drop(NEGATIVE_RANGE, 1, f"range {distance:g} m at t={t:.6f} s")
        if not min_range <= distance <= max_range:
            return self._drop(RANGE_OUT_OF_LIMITS, 1, f"range {distance:g} m outside the "
                              f"message's [{min_range:g}, {max_range:g}] m")
        return self._place(t, RANGE, float(distance), now)

    def add_swath(self, t: float, points, now: float, frame_id: str | None = None) -> bool:
        """One multibeam ping: ``points`` (N, 3) m in the sonar frame, stamped ``t`` s."""
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3:
            return self._drop(MALFORMED, 1, f"swath points of shape {points.shape}")
        if not self._admit(SWATH, t, frame_id, len(points)):
            return False
        return self._judge(SWATH, t, len(points), lambda: self._add_swath(t, points, now))

    def _add_swath(self, t: float, points: np.ndarray, now: float) -> bool:
        if not self._in_order(SWATH, t, len(points)):
            return False
        finite = np.isfinite(points).all(axis=1)
        if not finite.all():
            self._drop(NONFINITE_POINT, int((~finite).sum()),
                       f"swath at t={t:.6f} s has non-finite points")
            points = points[finite]
        reach = np.linalg.norm(points, axis=1)
        inside = (reach >= self.config.swath_min_range) & (reach <= self.config.swath_max_range)
        if not inside.all():
            self._drop(RANGE_OUT_OF_LIMITS, int((~inside).sum()),
                       f"swath points outside [{self.config.swath_min_range:g}, "
                       f"{self.config.swath_max_range:g}] m")
            points = points[inside]
        if not len(points):
            return False
        return self._place(t, SWATH, points, now)

    def add_reading(self, t: float, channel: str, value: float, now: float,
                    frame_id: str | None = None) -> bool:
        """A scalar ``channel``'s ``value`` (its units, e.g. °C or Pa) measured at ``t`` s at
        the vehicle's position, in ``frame_id`` (checked against the channel's frame when
        given). True when placed or waiting for a pose. A channel not configured or another
        frame is ``wrong_frame`` (not this ingest's), a non-finite value
        ``nonfinite_point``; stamps follow the rules of the ranges, per channel."""
        kind = CHANNEL + channel
        if kind not in self._channel_index:
            return self._drop(WRONG_FRAME, 1, f"reading of channel {channel!r}, not one of "
                              f"{self.config.channels!r}")
        self.channel_received[channel] += 1
        if not self._admit(kind, t, frame_id, 1, self._channel_frames[kind]):
            return False
        return self._judge(kind, t, 1, lambda: self._add_reading(t, kind, value, now))

    def _add_reading(self, t: float, kind: str, value: float, now: float) -> bool:
        if not self._in_order(kind, t, 1):
            return False
        if not math.isfinite(value):
            return self._drop(NONFINITE_POINT, 1, f"{kind} value {value} at t={t:.6f} s")
        return self._place(t, kind, float(value), now)

    def add_attitude(self, t: float, orientation: tuple[float, float, float, float],
                     now: float, frame_id: str | None = None, known: bool = True) -> bool:
        """The IMU's orientation quaternion (x, y, z, w) at ``t`` s (``imu_attitude``;
        :mod:`~poam_ros.ingest.attitude_depth`); its roll, pitch and yaw are taken from it.
        ``known``: False where the IMU gives no orientation. True when kept; ``wrong_frame``
        (not this ingest's) without ``imu_attitude``."""
        config = self.config
        if not config.imu_attitude:
            return self._drop(WRONG_FRAME, 1, "imu message, but imu_attitude is off")
        if not self._admit(IMU, t, frame_id, 1, config.imu_frame or config.base_frame):
            return False
        if not known:
            return self._drop(IMU_INVALID, 1, f"imu at t={t:.6f} s gives no orientation "
                              f"(orientation_covariance[0] = -1)")
        problem = not_a_rotation(orientation, config.orientation_tolerance)
        yaw = yaw_from_quaternion(orientation)
        if problem is not None or not math.isfinite(yaw):
            return self._drop(IMU_INVALID, 1, f"imu at t={t:.6f} s with {problem}")
        if not self._in_order(IMU, t, 1):
            return False
        self._attitude_depth.add_attitude(t, *roll_pitch_from_quaternion(orientation), yaw)
        self._resolve_pending(now)
        self._try_flush(now)
        return True

    def add_pressure(self, t: float, pressure: float, now: float,
                     frame_id: str | None = None) -> bool:
        """The depth sensor's absolute pressure [Pa] at ``t`` s (``depth_from_pressure``):
        the vehicle's z = -depth from then on. True when kept; ``wrong_frame`` (not this
        ingest's) without ``depth_from_pressure``."""
        config = self.config
        if not config.depth_from_pressure:
            return self._drop(WRONG_FRAME, 1, "pressure message, but depth_from_pressure is "
                              "off")
        if not self._admit(DEPTH, t, frame_id, 1, config.depth_frame or config.base_frame):
            return False
        if not math.isfinite(pressure):
            return self._drop(PRESSURE_INVALID, 1, f"pressure {pressure} Pa at t={t:.6f} s")
        if not self._in_order(DEPTH, t, 1):
            return False
        self._attitude_depth.add_depth(t, depth_from_pressure(
            pressure, config.water_density, config.atmospheric_pressure))
        self._resolve_pending(now)
        self._try_flush(now)
        return True

    def drop_malformed(self, detail: str) -> None:
        """Count a message the node could not read at all."""
        self._drop(MALFORMED, 1, detail)

    def add_fix(self, t: float, latitude: float, longitude: float, now: float,
                status: int = 0, horizontal_std: float | None = None) -> bool:
        """A horizontal position fix at ``t`` s: WGS 84 ``latitude``, ``longitude`` [deg];
        ``status`` as ``sensor_msgs/NavSatStatus`` (below 0: NO_FIX, or -2: never set, is no
        fix); ``horizontal_std`` [m]: its reported accuracy, None when unknown. True when
        applied or waiting for a pose; each drop reason is in the module docstring."""
        where = f"fix at t={t:.6f} s ({latitude!r}, {longitude!r})"
        if self.georeference is None:
            return self._drop(FIX_NO_ANCHOR, 1, f"{where}: no geodetic anchor for the map "
                              f"frame (set geo.anchor), so a latitude/longitude has no place")
        if status < 0:
            return self._drop(FIX_NO_FIX, 1, f"{where}: status {status} (NO_FIX is -1, "
                              f"-2 never set)")
        if not all(math.isfinite(v) for v in (t, latitude, longitude)):
            return self._drop(FIX_NONFINITE, 1, f"{where}: non-finite stamp or position")
        if abs(latitude) > 90.0 or abs(longitude) > 180.0:
            return self._drop(FIX_OUT_OF_RANGE, 1, f"{where}: latitude beyond ±90° or "
                              f"longitude beyond ±180°")
        limit = self.config.fix_max_std
        if limit and horizontal_std is not None and not horizontal_std <= limit:
            return self._drop(FIX_IMPRECISE, 1, f"{where}: horizontal std "
                              f"{horizontal_std:.3g} m above fix_max_std {limit:g} m")
        newest = max((f[0] for f in self._pending_fixes), default=self._resets.latest_stamp)
        if t <= newest + STAMP_TOLERANCE:
            return self._drop(FIX_OUT_OF_ORDER, 1, f"{where}: not after the previous fix "
                              f"stamped {newest:.6f} s")
        try:  # GeoError (a ValueError): a place the anchor's CRS cannot project
            x, y = (float(v) for v in self.georeference.to_map(longitude, latitude))
        except ValueError as error:
            return self._drop(FIX_OUT_OF_RANGE, 1, f"{where}: {error}")
        self._pending_fixes.append((t, x, y, now))
        self._resolve_fixes(now)
        return True

    def _resolve_fixes(self, now: float) -> None:
        """Apply the waiting fixes that the pose history now reaches, in stamp order."""
        while self._pending_fixes:
            t, x, y, _ = self._pending_fixes[0]
            status, pose = self.poses.lookup(t)
            if status in (Lookup.EMPTY, Lookup.FUTURE):
                return
            self._pending_fixes.popleft()
            if status is Lookup.PLACED:
                self._reset_position(t, x - pose.x, y - pose.y)
            else:
                self._drop(FIX_NO_POSE, 1, f"fix at t={t:.6f} s: no odometry to reset ("
                           f"{status.value}: poses more than {self.config.max_pose_gap:g} s "
                           f"apart around it, or older than the pose history)")

    def _reset_position(self, t: float, dx: float, dy: float) -> None:
        """From stamp ``t`` on, odometry positions get (dx, dy) [m]; samples placed since
        ``t`` and not handed out move by the change."""
        old_x, old_y = self._resets.latest
        shift = np.array([dx - old_x, dy - old_y])
        for stamp, _, points in self._chunks:
            if stamp >= t:
                points[:, :2] += shift
        self._resets.reset(t, dx, dy)
        self.fixes += 1
        self.last_fix_correction = float(np.hypot(*shift))
        log.info("fix at t=%.6f s: horizontal position reset by (%+.3f, %+.3f) m", t, *shift)

    def set_plan(self, waypoints, stamp: float, now: float, frame_id: str | None = None
                 ) -> None:
        """The vehicle's new plan (K, 2) m; K = 0 clears it.

        Odometry the vehicle sent after starting the plan may come in before the plan
        itself, so progress is replayed over the poses kept since the plan began: from the
        newest pose at or before the later of ``stamp`` (the plan's header time, when it
        is > 0) and the previous arrival (where a lockstep vehicle waited for this plan).
        Poses from before the plan could otherwise count as reaching its waypoints."""
        if frame_id is not None and frame_id != self.config.world_frame:
            log.warning("plan in frame %r ignored: expected %r", frame_id,
                        self.config.world_frame)
            return
        points = np.asarray(waypoints, dtype=float).reshape(-1, 2)
        if not np.isfinite(points).all():
            log.warning("plan with non-finite waypoints ignored")
            return
        self._plan = points.tolist() if len(points) else None
        self._plan_index = 0
        start = max(stamp if stamp > 0 else -math.inf, self._last_arrival)
        for t, x, y, *_ in self.poses.poses_since(start):
            if self._plan is None:
                break
            self._progress(t, x, y)
        self._try_flush(now)

    def poll(self, now: float) -> None:
        """Expire pending readings and arrival grace periods; call a few times a second."""
        timeout = self.config.pending_timeout
        if self._pending:
            keep = deque()
            for entry in self._pending:
                # Waiting is fine while poses keep coming (the odometry queue may lag the
                # sonar's); a reading is given up once they have stopped for the timeout.
                if now - max(entry[3], self._last_pose_wall) > timeout:
                    self._drop(NO_POSE, _samples(entry), f"no pose came after t="
                               f"{entry[0]:.6f} s for {timeout:g} s")
                else:
                    keep.append(entry)
            self._pending = keep
        while self._pending_fixes and now - max(self._pending_fixes[0][3],
                                                 self._last_pose_wall) > timeout:
            t = self._pending_fixes.popleft()[0]
            self._drop(FIX_NO_POSE, 1, f"fix at t={t:.6f} s: no pose came after it for "
                       f"{timeout:g} s")
        self._try_flush(now)

    # ---------------------------------------------------------------------- internals

    def _drop(self, reason: str, samples: int, detail: str) -> bool:
        self.dropped[reason] += samples
        self.details[reason] = detail
        return False

    def _admit(self, kind: str, t: float, frame_id: str | None, samples: int,
               expected: str | None = None) -> bool:
        """Frame (``expected``, default the sonar's) and a finite stamp of a reading, before
        the clock rule."""
        expected = expected or self.config.sonar_frame
        if frame_id is not None and frame_id != expected:
            return self._drop(WRONG_FRAME, samples, f"{kind} in frame {frame_id!r}, expected "
                              f"{expected!r}")
        if not math.isfinite(t):
            return self._drop(STALE_STAMP, samples, f"{kind} with stamp {t}")
        return True

    def _judge(self, stream: str, t: float, samples: int, accept) -> bool:
        """The clock rule on a message of ``samples`` that passed its own checks: ``accept()``
        (the rest of its checks and its use) runs now, at a reset (with the rest of its
        run, in order), or never (an outlier, dropped)."""
        config = self.config
        clock = self._clocks[stream]
        old = clock.clock
        verdict, outliers, confirmed = clock.judge(t, (samples, accept),
                                                   config.stamp_jump_threshold,
                                                   config.stamp_reset_count)
        for stamp, (count, _) in outliers:
            self._drop(POSE_STAMP_OUTLIER if stream == ODOM else STAMP_OUTLIER, count,
                       f"{stream} stamped {stamp:.6f} s, {stamp - old:+.6g} s from its clock: "
                       f"a glitch, fewer than {config.stamp_reset_count} in a row agreed")
        if verdict is Verdict.ACCEPT:
            return accept()
        if verdict is Verdict.HELD:
            return False
        self._reset(stream, old, [stamp for stamp, _ in confirmed])
        for _, (_, use) in confirmed:  # the run in order, this message last
            kept = use()
        return kept

    def _reset(self, stream: str, old: float, stamps: list[float]) -> None:
        """``stream``'s clock moved from ``old`` to ``stamps`` (the confirmed run, in order
        [s]): restart what belongs to the old clock (see the module docstring)."""
        if stream == ODOM:
            if self._arrival is not None:
                self._flush(self._arrival[0], "arrival")
            if self._chunks:
                self._flush(math.inf, "reset")
            self.poses.clear()
            self._attitude_depth.clear()
            for name in self._attitude_depth.streams:
                self._streams[name].last = -math.inf
            self._resets.restart()
            self._flushed_until = self._last_arrival = -math.inf
            low = stamps[0] - self.config.stamp_jump_threshold
            high = stamps[-1] + self.config.stamp_jump_threshold
            keep = [low <= entry[0] <= high for entry in self._pending]
            for fix in [f for f in self._pending_fixes if not low <= f[0] <= high]:
                self._pending_fixes.remove(fix)
                self._drop(FIX_NO_POSE, 1, f"fix at t={fix[0]:.6f} s: of the odometry clock "
                           f"before its reset")
        else:
            self._streams[stream].last = -math.inf
            keep = [entry[1] != stream for entry in self._pending]
        abandoned = sum(_samples(e) for e, kept in zip(self._pending, keep) if not kept)
        self._pending = deque(e for e, kept in zip(self._pending, keep) if kept)
        if abandoned:
            self._drop(CLOCK_RESET, abandoned, f"{abandoned} samples waiting for a pose of the "
                       f"{stream} clock before its reset at {stamps[0]:.6f} s")
        self.clock_resets[stream] += 1
        restarted = "pose history and batch" if stream == ODOM else "order"
        self.reset_details[stream] = detail = (
            f"{stream} clock reset: {len(stamps)} stamps in a row {stamps[0] - old:+.6g} s from "
            f"its clock at {old:.6f} s, from {stamps[0]:.6f} s on; {restarted} restarted, "
            f"{abandoned} waiting samples of the old clock dropped")
        log.warning(detail)

    def _in_order(self, kind: str, t: float, samples: int) -> bool:
        """Stamp order, duplicates and lateness of a reading past the clock rule."""
        stream = self._streams[kind]
        if abs(t - stream.last) <= STAMP_TOLERANCE:
            return self._drop(DUPLICATE, samples, f"second {kind} stamped {t:.9f} s")
        if t < stream.last:
            return self._drop(OUT_OF_ORDER, samples, f"{kind} stamped {t:.6f} s after one "
                              f"stamped {stream.last:.6f} s")
        stream.saw(t)
        if t <= self._flushed_until + STAMP_TOLERANCE:
            return self._drop(LATE, samples, f"{kind} stamped {t:.6f} s came after the batch "
                              f"up to {self._flushed_until:.6f} s was published")
        return True

    def _lookup(self, t: float):
        """The vehicle's pose at ``t``: the odometry's, its attitude and depth replaced by
        the enabled sensors' (:class:`~poam_ros.ingest.attitude_depth.AttitudeDepth`)."""
        status, pose = self.poses.lookup(t)
        if status is Lookup.PLACED and self._attitude_depth.streams:
            return self._attitude_depth.place(t, pose)
        return status, pose

    def _place(self, t: float, kind: str, payload, now: float) -> bool:
        status, pose = self._lookup(t)
        if status is Lookup.PLACED:
            self._add_chunk(t, kind, payload, pose)
            self._try_flush(now)
            return True
        if status in (Lookup.EMPTY, Lookup.FUTURE):
            if len(self._pending) >= self.config.max_pending:
                oldest = self._pending.popleft()
                self._drop(QUEUE_OVERFLOW, _samples(oldest), f"more than "
                           f"{self.config.max_pending} readings waiting for a pose")
            self._pending.append((t, kind, payload, now))
            return True
        return self._unplaceable(status, t, kind, _samples((t, kind, payload)))

    def _unplaceable(self, status: Lookup, t: float, kind: str, samples: int) -> bool:
        if status is Lookup.GAP:
            return self._drop(POSE_GAP, samples, f"{kind} at t={t:.6f} s lies between poses "
                              f"more than {self.config.max_pose_gap:g} s apart")
        return self._drop(STALE_STAMP, samples, f"{kind} at t={t:.6f} s is older than the "
                          f"pose history (from t={self.poses.oldest_time:.6f} s)")

    def _resolve_pending(self, now: float) -> None:
        if not self._pending:
            return
        waiting = deque()
        for entry in self._pending:
            t, kind, payload, _ = entry
            status, pose = self._lookup(t)
            if status is Lookup.PLACED:
                self._add_chunk(t, kind, payload, pose)
            elif status in (Lookup.EMPTY, Lookup.FUTURE):
                waiting.append(entry)
            else:
                self._unplaceable(status, t, kind, _samples(entry))
        self._pending = waiting

    def _add_chunk(self, t: float, kind: str, payload, pose) -> None:
        dx, dy = self._resets.at(t)
        pose = pose._replace(x=pose.x + dx, y=pose.y + dy)
        if kind == RANGE:
            points = np.array([[pose.x, pose.y, pose.z - payload]])
        elif kind != SWATH:  # a channel's reading: its value in its column
            self.channel_placed[kind[len(CHANNEL):]] += 1
            points = np.full((1, 3 + len(self._channel_index)), np.nan)
            points[0, :2] = pose.x, pose.y
            points[0, 3 + self._channel_index[kind]] = payload
        else:  # position + R_vehicle (t_mount + R_mount p), row vectors
            config = self.config
            mounted = config.sonar_mount_xyz + payload @ rotation_matrix(
                *config.sonar_mount_rpy).T
            points = (np.array([pose.x, pose.y, pose.z])
                      + mounted @ rotation_matrix(pose.roll, pose.pitch, pose.yaw).T)
        self._chunks.append((t, kind, points))
        self._batch_samples += len(points)
        self.accepted += len(points)
        config = self.config
        if config.max_batch_size and self._batch_samples >= config.max_batch_size:
            self._flush(math.inf, "size")
        elif config.max_batch_age and (t - self._chunks[0][0]
                                       >= config.max_batch_age - STAMP_TOLERANCE):
            self._flush(math.inf, "age")

    def _progress(self, t: float, x: float, y: float) -> None:
        """Advance the plan past waypoints within the goal radius of the odometry's (x, y)
        at ``t`` plus the fixes' correction."""
        plan = self._plan
        if plan is None:
            return
        dx, dy = self._resets.at(t)
        x, y = x + dx, y + dy
        radius = self.config.goal_radius
        while self._plan_index < len(plan):
            goal_x, goal_y = plan[self._plan_index]
            if math.hypot(goal_x - x, goal_y - y) > radius:
                return
            self._plan_index += 1
        self._plan = None
        if self._arrival is not None:  # an earlier arrival still waiting: it goes first
            self._flush(self._arrival[0], "arrival")
            self.flushes_on_grace += 1
        self._arrival = (t, math.inf)
        self._last_arrival = t

    def _try_flush(self, now: float) -> None:
        if self._arrival is None:
            return
        t_arrival, deadline = self._arrival
        if deadline == math.inf:
            deadline = now + self.config.flush_grace
            self._arrival = (t_arrival, deadline)
        # A stream with a configured rate is expected; one without, once it shows up.
        horizon = t_arrival - self.config.pose_history
        complete = all(stream.complete_until(t_arrival) for stream in self._streams.values()
                       if stream.rate > 0 or stream.last >= horizon)
        if not complete and now < deadline:
            return
        if not complete:
            self.flushes_on_grace += 1
            log.warning("batch up to t=%.6f s published after the %.3g s grace without every "
                        "reading stamped before it", t_arrival, self.config.flush_grace)
        self._flush(t_arrival, "arrival")

    def _flush(self, until: float, reason: str) -> None:
        """Cut a raw batch of the samples stamped up to ``until`` (all of them for inf)."""
        if reason == "arrival":
            self._arrival = None
            self._flushed_until = until
            taken = [c for c in self._chunks if c[0] <= until + STAMP_TOLERANCE]
            self._chunks = [c for c in self._chunks if c[0] > until + STAMP_TOLERANCE]
        else:
            taken, self._chunks = self._chunks, []
            until = max(c[0] for c in taken)
        self._batch_samples = sum(len(c[2]) for c in self._chunks)
        taken.sort(key=lambda chunk: chunk[0])
        ranges = [c[2] for c in taken if c[1] == RANGE]
        swaths = [c[2] for c in taken if c[1] == SWATH]
        readings = None
        if self._channel_index:
            rows = [c[2] for c in taken if c[1] not in (RANGE, SWATH)]
            readings = (np.concatenate(rows) if rows else
                        np.empty((0, 3 + len(self._channel_index))))
        self._cut += 1
        self._ready.append(RawBatch(until, reason,
                                    np.concatenate(ranges) if ranges else np.empty((0, 3)),
                                    np.concatenate(swaths) if swaths else np.empty((0, 3)),
                                    self._cut, readings))

    def finish(self, raw: RawBatch) -> SampleBatch:
        """The checked batch: swath points filtered, then samples outside the workspace
        dropped (counted in its ``dropped``). Non-finite and duplicated samples are the
        model's to refuse (:func:`~poam_ros.models.samples.filter_samples`: it knows every
        sample it holds). The heavy step, and free of the ingest's mutable state, so a node
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
            self.dropped[name] += count
        if batch.dropped.get(OUTSIDE_WORKSPACE):
            self.details[OUTSIDE_WORKSPACE] = (f"{batch.dropped[OUTSIDE_WORKSPACE]} samples "
                                               f"outside the workspace")
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


def _samples(entry) -> int:
    """Samples a pending entry (t, kind, payload, ...) stands for."""
    return len(entry[2]) if entry[1] == SWATH else 1
