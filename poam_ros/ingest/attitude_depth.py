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

Each is a time series of its own (:class:`~poam_ros.ingest.pose_history.PoseHistory`: the
same horizon, gap limit and interpolation as the odometry's); a reading is placed once the
odometry and every enabled series reach its stamp (it waits for them as for the odometry).
:mod:`~poam_ros.ingest.feeders` hands their messages to the ingest, for the ingest node and
the remap alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from poam_ros.ingest.pose_history import Lookup, PlacedPose, PoseHistory

if TYPE_CHECKING:
    from poam_ros.ingest.config import IngestConfig

GRAVITY = 9.80665  # m/s², standard gravity
IMU, DEPTH = "imu", "depth"  # the streams' names (drop details, stamps' order)


def depth_from_pressure(pressure: float, water_density: float,
                        atmospheric_pressure: float) -> float:
    """Hydrostatic depth [m] below the surface of an absolute ``pressure`` [Pa]."""
    return (pressure - atmospheric_pressure) / (water_density * GRAVITY)


def enabled_streams(config: IngestConfig) -> tuple[str, ...]:
    """The series ``config`` enables (``imu_attitude``, ``depth_from_pressure``), by stream
    name."""
    return (IMU,) * config.imu_attitude + (DEPTH,) * config.depth_from_pressure


class AttitudeDepth:
    """The enabled series (IMU attitude, pressure depth) and the pose they give a reading."""

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
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

    def add_attitude(self, t: float, roll: float, pitch: float, yaw: float) -> None:
        """The IMU's attitude [rad] at ``t`` s, newer than the last (checked by the caller)."""
        self.attitude.append(t, 0.0, 0.0, 0.0, yaw, roll, pitch)

    def add_depth(self, t: float, depth: float) -> None:
        """The depth [m] below the surface at ``t`` s, newer than the last."""
        self.depth.append(t, 0.0, 0.0, -depth, 0.0)

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

