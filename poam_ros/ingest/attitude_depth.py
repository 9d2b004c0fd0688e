"""Attitude from an IMU and depth from a pressure sensor, in place of the odometry's (no ROS).

The odometry carries the whole pose by default. A vehicle whose navigation filter outputs a
horizontal position only (or whose odometry's attitude and depth are poorer than its own
sensors') gives the ingest:

* ``sensor_msgs/Imu`` (``imu_attitude``): its orientation quaternion, interpolated at each
  reading's stamp (the angles along the shorter arc), replaces the odometry's roll and
  pitch, and with ``imu_yaw`` its yaw (an AHRS referenced to the map's east, REP-103/145),
  in the swath's placement ``position + R(roll, pitch, yaw) (t_mount + R_mount p)``;
* ``sensor_msgs/FluidPressure`` (``depth_from_pressure``): the hydrostatic depth

      d = (p - p_atm) / (ρ g)                                       [m]

  with the declared ``water_density`` ρ [kg/m³] and ``atmospheric_pressure`` p_atm [Pa]
  and standard gravity g, interpolated at each reading's stamp, replaces the odometry's
  height: z = -d (the sea surface at z = 0, REP-103 z up). Density is taken constant over
  the water column (its change with depth, temperature and salinity, ≈ 0.5 % over the
  first kilometre, is neglected, as is the local variation of g, ≈ 0.3 %).

Checks, per message, in this order: a message of a series not enabled is ``wrong_frame``
(not this ingest's), as is one in another frame than ``imu_frame`` / ``depth_frame`` (the
``base_frame`` when empty; :meth:`Streams.admit <poam_ros.ingest.streams.Streams.admit>`);
an IMU message with no orientation (``orientation_covariance[0]`` = -1) or one that is not a
rotation (its norm off 1 by more than ``orientation_tolerance``, or not finite) is
``imu_invalid``; then the plausibility limits below, and the clock and order rules of every
stream (:mod:`~poam_ros.ingest.streams`).

Plausibility (:class:`~poam_ros.ingest.config.LimitsConfig`), per message. A pressure is
judged by the depth it gives, so that a gauge sensor (``atmospheric_pressure`` 0) and an
absolute one share the limits: a non-finite pressure is ``pressure_invalid``, a depth outside
[``limits.depth_min``, ``limits.depth_max``] ``depth_out_of_limits`` (a negative absolute
pressure reads about -10 m, an absurd one tens of thousands of kilometres). An orientation
is judged against the one kept before it: the angle θ of the rotation between them,
cos θ = (tr(R₀ᵀ R₁) - 1) / 2, beyond ``limits.attitude_rate_max`` · Δt + 0.01 rad (an
AHRS's noise, so that two stamps a microsecond apart are no infinite rate) is a glitch,
``imu_rate_out_of_limits``; after a gap the bound grows, so a true attitude is taken again.

Each is a time series of its own (:class:`~poam_ros.ingest.pose_history.PoseHistory`: the
same horizon, gap limit and interpolation as the odometry's); a reading is placed once the
odometry and every enabled series reach its stamp (it waits for them as for the odometry).
:mod:`~poam_ros.ingest.feeders` hands their messages to the ingest, for the ingest node and
the remap alike.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from poam_ros.attitude import (
    depth_from_pressure,
    roll_pitch_from_quaternion,
    rotation_matrix,
    yaw_from_quaternion,
)
from poam_ros.ingest.pose_history import Lookup, PlacedPose, PoseHistory, not_a_rotation
from poam_ros.ingest.reasons import (
    DEPTH_OUT_OF_LIMITS,
    IMU_INVALID,
    IMU_RATE_OUT_OF_LIMITS,
    PRESSURE_INVALID,
    WRONG_FRAME,
    Drops,
)

if TYPE_CHECKING:
    from poam_ros.ingest.config import IngestConfig

IMU, DEPTH = "imu", "depth"  # the streams' names (drop details, stamps' order)
ATTITUDE_NOISE = 0.01  # rad: an AHRS's orientation noise, allowed on top of the rate limit


def enabled_streams(config: IngestConfig) -> tuple[str, ...]:
    """The series ``config`` enables (``imu_attitude``, ``depth_from_pressure``), by stream
    name."""
    return (IMU,) * config.imu_attitude + (DEPTH,) * config.depth_from_pressure


class AttitudeDepth:
    """The enabled series (IMU attitude, pressure depth) and the pose they give a reading;
    implausible values are counted in ``drops``."""

    def __init__(self, config: IngestConfig, drops: Drops) -> None:
        self.config = config
        self._drops = drops
        self.attitude = PoseHistory(config.pose_history, config.max_pose_gap)
        self.depth = PoseHistory(config.pose_history, config.max_pose_gap)

    def configure(self, config: IngestConfig) -> None:
        """A new configuration; the series keep what they hold."""
        self.config = config
        for series in (self.attitude, self.depth):
            series.horizon, series.max_gap = config.pose_history, config.max_pose_gap

    @property
    def streams(self) -> tuple[str, ...]:
        """The enabled series, by stream name."""
        return enabled_streams(self.config)

    def expects(self, stream: str) -> bool:
        """Whether ``stream`` (``imu``, ``depth``) is enabled; a message of one that is not
        is counted (``wrong_frame``)."""
        if stream in self.streams:
            return True
        switch = "imu_attitude" if stream == IMU else "depth_from_pressure"
        message = "imu" if stream == IMU else "pressure"
        return self._drops.drop(WRONG_FRAME, 1, f"{message} message, but {switch} is off")

    def frame(self, stream: str) -> str:
        """The frame ``stream``'s messages come in."""
        config = self.config
        return (config.imu_frame if stream == IMU else config.depth_frame) or config.base_frame

    def attitude_of(self, t: float, orientation: tuple[float, float, float, float],
                    known: bool) -> tuple[float, float, float] | None:
        """(roll, pitch, yaw) [rad] of the IMU's orientation quaternion (x, y, z, w) at ``t``
        s, or None when it gives none (``known`` False) or one that is no rotation."""
        if not known:
            self._drops.drop(IMU_INVALID, 1, f"imu at t={t:.6f} s gives no orientation "
                             f"(orientation_covariance[0] = -1)")
            return None
        problem = not_a_rotation(orientation, self.config.orientation_tolerance)
        yaw = yaw_from_quaternion(orientation)
        if problem is not None or not math.isfinite(yaw):
            self._drops.drop(IMU_INVALID, 1, f"imu at t={t:.6f} s with {problem}")
            return None
        return (*roll_pitch_from_quaternion(orientation), yaw)

    def add_attitude(self, t: float, roll: float, pitch: float, yaw: float) -> bool:
        """The IMU's attitude [rad] at ``t`` s, newer than the last (checked by the caller),
        unless it turned too fast from the last kept (see the module docstring)."""
        latest = self.attitude.latest
        if latest is not None:
            t_last, yaw_last, roll_last, pitch_last = latest[0], *latest[4:]
            relative = (rotation_matrix(roll_last, pitch_last, yaw_last).T
                        @ rotation_matrix(roll, pitch, yaw))
            angle = math.acos(float(np.clip((np.trace(relative) - 1.0) / 2.0, -1.0, 1.0)))
            limit = self.config.limits.attitude_rate_max
            if angle > limit * (t - t_last) + ATTITUDE_NOISE:
                return self._drops.drop(IMU_RATE_OUT_OF_LIMITS, 1, f"imu at t={t:.6f} s turned "
                                        f"{angle:.3g} rad in {t - t_last:.3g} s from the last "
                                        f"kept, faster than limits.attitude_rate_max "
                                        f"{limit:g} rad/s")
        self.attitude.append(t, 0.0, 0.0, 0.0, yaw, roll, pitch)
        return True

    def depth_of(self, t: float, pressure: float) -> float | None:
        """The depth [m] of the depth sensor's ``pressure`` [Pa] at ``t`` s, or None when it
        is dropped (see the module docstring)."""
        if not math.isfinite(pressure):
            self._drops.drop(PRESSURE_INVALID, 1, f"pressure {pressure} Pa at t={t:.6f} s")
            return None
        config = self.config
        depth = depth_from_pressure(pressure, config.water_density, config.atmospheric_pressure)
        low, high = config.limits.depth_min, config.limits.depth_max
        if not low <= depth <= high:
            self._drops.drop(DEPTH_OUT_OF_LIMITS, 1, f"pressure {pressure:g} Pa at t={t:.6f} s "
                             f"gives a depth of {depth:.6g} m, outside the plausible "
                             f"[{low:g}, {high:g}] m")
            return None
        return depth

    def add_depth(self, t: float, depth: float) -> bool:
        """The depth [m] below the surface at ``t`` s, newer than the last; True (kept)."""
        self.depth.append(t, 0.0, 0.0, -depth, 0.0)
        return True

    def clear(self, *names: str) -> None:
        """Forget the series ``names`` (``imu``, ``depth``; both when none is named): their
        clock was reset, or the odometry's."""
        for name in names or (IMU, DEPTH):
            (self.attitude if name == IMU else self.depth).clear()

    def place(self, t: float, pose: PlacedPose) -> tuple[Lookup, PlacedPose | None]:
        """``pose`` (the odometry's at ``t``) with the enabled series' values at ``t``, or why
        a series cannot give them yet (``EMPTY``, ``FUTURE``: wait) or ever."""
        config = self.config
        if config.imu_attitude:
            status, attitude = self.attitude.lookup(t)
            if status is not Lookup.PLACED:
                return status, None
            pose = pose._replace(roll=attitude.roll, pitch=attitude.pitch,
                                 yaw=attitude.yaw if config.imu_yaw else pose.yaw)
        if config.depth_from_pressure:
            status, depth = self.depth.lookup(t)
            if status is not Lookup.PLACED:
                return status, None
            pose = pose._replace(z=depth.z)
        return Lookup.PLACED, pose

