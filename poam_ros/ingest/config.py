"""The sensor ingest's configuration: frames, pairing tolerances, batching, swath filters,
channels, navigation sources and the plausibility limits of every scalar input (no ROS). The
``sensor_ingest`` node declares these fields as its parameters (:class:`LimitsConfig`'s as
``limits.<name>``); the modules of :mod:`poam_ros.ingest` document what each does."""

from __future__ import annotations

import math
from dataclasses import dataclass

from poam_ros.ingest.channels import check_channel_sources
from poam_ros.ingest.cloud_filters import BACKENDS
from poam_ros.ingest.navigation import StaticTransform
from poam_ros.params import ConfigError, Params, group, param


@dataclass
class LimitsConfig(Params):
    """Plausibility limits of the scalar inputs: a value outside is not a measurement of the
    sea but a fault (a sign error, a unit mix-up, a corrupted field), dropped and counted under
    the reason named. The defaults bound what the ocean and a vehicle in it can give, with a
    margin; narrow them to a sensor's range. Latitude ±90° and longitude ±180° are not
    parameters but the definition of the coordinates (``fix_out_of_range``)."""

    depth_min: float = param(-5.0, "the depth sensor's depth (from its pressure, "
                                   "depth_from_pressure) below this is dropped "
                                   "(depth_out_of_limits): a vehicle at the surface in waves "
                                   "and an atmosphere off its declared value read a few metres "
                                   "above 0, while a negative absolute pressure reads -10 m",
                             unit="m", low=-100.0, high=0.0)
    depth_max: float = param(11000.0, "the depth sensor's depth above this is dropped "
                                      "(depth_out_of_limits): the deepest sea, the Challenger "
                                      "Deep, is 10,935 m", unit="m", low=1.0)
    pressure_min: float = param(0.8e5, "a fluid_pressure channel's reading below this is "
                                       "dropped (value_out_of_limits); FluidPressure is an "
                                       "absolute pressure, and the sea surface's is the "
                                       "atmosphere's, never below about 0.87e5 Pa (the lowest "
                                       "ever recorded, in a typhoon)", unit="Pa", low=0.0)
    pressure_max: float = param(1.2e8, "a fluid_pressure channel's reading above this is "
                                       "dropped (value_out_of_limits): full ocean depth is "
                                       "about 1.1e8 Pa", unit="Pa", low=1.0)
    temperature_min: float = param(-3.0, "a temperature channel's reading below this is "
                                         "dropped (value_out_of_limits): sea water freezes at "
                                         "about -1.9 degC", unit="degC", low=-273.15)
    temperature_max: float = param(40.0, "a temperature channel's reading above this is "
                                         "dropped (value_out_of_limits): the warmest open sea "
                                         "is about 35 degC (raise it near hydrothermal vents)",
                                   unit="degC")
    cloud_min: float = param(-1e9, "a cloud channel's value below this is dropped "
                                   "(value_out_of_limits); its unit is the sensor's own, so "
                                   "the default only refuses garbage: set the sensor's range")
    cloud_max: float = param(1e9, "a cloud channel's value above this is dropped "
                                  "(value_out_of_limits), as cloud_min")
    fix_max_covariance: float = param(1e6, "a position fix whose east or north variance "
                                           "exceeds this, or is negative or not finite, is "
                                           "dropped (fix_implausible_covariance): a fix "
                                           "claiming a std over 1 km places nothing a survey "
                                           "can use, and its std widens the fix's outlier "
                                           "gate (fixes.py)", unit="m^2", low=0.0)
    attitude_rate_max: float = param(3.0, "an IMU orientation turned from the one before "
                                          "faster than this (plus the AHRS's noise, 0.01 rad) "
                                          "is dropped (imu_rate_out_of_limits): an AUV turns "
                                          "well under 1 rad/s and a surface vehicle rolls in "
                                          "waves at under 2 rad/s; a flipped or glitched "
                                          "quaternion turns at hundreds", unit="rad/s",
                                    low=1e-3)

    def validate(self) -> None:
        for name in ("depth", "pressure", "temperature", "cloud"):
            low, high = getattr(self, f"{name}_min"), getattr(self, f"{name}_max")
            if not low < high:
                raise ConfigError(f"LimitsConfig.{name}_max ({high:g}) must exceed "
                                  f"{name}_min ({low:g})")


@dataclass
class IngestConfig(Params):
    """Frames, pairing tolerances, batching and swath filtering of the sensor ingest."""

    world_frame: str = param("map", "frame of odometry poses, plans and the samples")
    base_frame: str = param("base_link", "odometry child_frame_id expected")
    odom_frame: str = param("", "a second frame odometry may come in (e.g. odom), placed in "
                                "world_frame by map_from_odom; empty: odometry in world_frame "
                                "only")
    map_from_odom: list = param([0.0, 0.0, 0.0, 0.0], "static world_frame <- odom_frame "
                                "transform: x, y, z [m], yaw [rad] (both frames z-up, REP-105)"
                                ", or x, y, z, qx, qy, qz, qw with a rotation about z")
    fix_max_std: float = param(0.0, "a position fix whose reported horizontal std (the larger "
                                    "of its east and north) exceeds this is dropped "
                                    "(fix_imprecise; one reporting none passes); 0: off",
                               unit="m", low=0.0)
    fix_max_correction: float = param(200.0, "the largest correction a position fix may make "
                                             "right after the last one: its base, the "
                                             "navigation's initial uncertainty; a fix moving "
                                             "the position further than this + fix_drift_rate "
                                             "* the time since the last fix + 3 times the "
                                             "fix's own std is a gross outlier, dropped "
                                             "(fix_outlier)", unit="m", low=0.0)
    fix_drift_rate: float = param(1.0, "how fast the dead-reckoned position may drift away "
                                       "from the truth between fixes (see "
                                       "fix_max_correction): a current of 1 m/s unseen by a "
                                       "navigation without DVL; a DVL-aided INS drifts ~100 "
                                       "times slower", unit="m/s", low=0.0)
    sonar_frame: str = param("sonar_link", "frame_id expected of sonar/range and "
                                           "sonar/swath (placed by sonar_mount_xyz/rpy)")
    sonar_mount_xyz: list = param([0.0, 0.0, 0.0], "lever arm: sonar_frame's origin in "
                                                   "base_frame (x forward, y left, z up)",
                                  unit="m")
    sonar_mount_rpy: list = param([0.0, 0.0, 0.0], "sonar_frame's roll, pitch, yaw relative "
                                                   "to base_frame (swath points)", unit="rad")
    pose_history: float = param(300.0, "pose history kept, in stamp time: a reading stamped "
                                       "earlier than this before the newest pose is stale; "
                                       "generous, as a fast simulation may deliver readings "
                                       "many simulated seconds after the poses", unit="s",
                                low=0.1, high=3600.0)
    max_pose_gap: float = param(1.0, "a reading between two poses further apart than this "
                                     "is dropped (pose_gap)", unit="s", low=1e-6)
    max_speed: float = param(5.0, "a pose implying a faster move from the last one is "
                                  "dropped (pose_jump)", unit="m/s", low=0.0)
    jump_tolerance: float = param(1.0, "position slack added to max_speed * dt in the jump "
                                       "test", unit="m", low=0.0)
    orientation_tolerance: float = param(1e-3, "odometry whose orientation quaternion's norm "
                                               "is off 1 by more than this is not a rotation "
                                               "and is refused (pose_invalid_orientation)",
                                         low=0.0, high=0.5)
    stamp_jump_threshold: float = param(10.0, "a stamp further than this before its "
                                              "stream's clock (newest stamp accepted), or after "
                                              "it by more than the clock runs in this many wall "
                                              "s more than passed since that stamp came (its "
                                              "measured rate, at least 1) plus its configured "
                                              "period, is held as "
                                              "suspect: a glitch (stamp_outlier) unless "
                                              "stamp_reset_count suspects agree; also the "
                                              "longest a stream that reset first is held for "
                                              "the others' resets (wall s); at least "
                                              "max_pose_gap", unit="s", low=1e-3)
    stamp_reset_count: int = param(5, "suspect stamps in a row, each within "
                                      "stamp_jump_threshold of the one before, that mean the "
                                      "stream's clock changed: a reset (fewer in a row are "
                                      "outliers)", low=2, high=1000)
    goal_radius: float = param(0.1, "a plan's waypoint counts as reached within this; keep "
                                    "it equal to the vehicle's (vehicle.goal_radius)",
                               unit="m", low=0.001)
    sonar_rate: float = param(3.0, "sonar/range rate, to know when every sounding up to an "
                                   "arrival is in; > 0: the stream is expected at every "
                                   "arrival; 0: unknown, waited for once seen, its period "
                                   "taken from the stamps", unit="Hz", low=0.0)
    swath_rate: float = param(0.0, "sonar/swath ping rate, as sonar_rate", unit="Hz",
                              low=0.0)
    flush_grace: float = param(1.0, "wall time an arrival batch waits for readings still in "
                                    "flight before it goes out anyway", unit="s", low=0.0)
    pending_timeout: float = param(2.0, "a reading newer than every pose waits while poses "
                                        "keep coming; once none has come for this wall time "
                                        "it is dropped (no_pose)", unit="s", low=0.0)
    max_pending: int = param(5000, "readings waiting for a pose; beyond this the oldest is "
                                   "dropped (queue_overflow)", low=1)
    max_batch_size: int = param(100000, "publish a batch once it holds this many samples; "
                                        "0: only at decision points", low=0)
    max_batch_age: float = param(0.0, "publish a batch once it spans this much stamp time; 0: "
                                      "only at decision points and max_batch_size",
                                 unit="s", low=0.0)
    batch_timeout: float = param(3600.0, "a batch goes out (reason timeout) once its oldest "
                                         "sample is this old, on the stamp clock (the newest "
                                         "odometry stamp) or the wall clock (since it was "
                                         "placed), whichever first: whatever the plan does "
                                         "(a waypoint never reached), no sample waits longer; "
                                         "always on, unlike max_batch_age; a lockstep "
                                         "simulation replays the ROS-free mission only "
                                         "while it exceeds every leg (the pilot survey's "
                                         "included)", unit="s", low=1.0)
    swath_min_range: float = param(0.0, "swath points closer than this are dropped",
                                   unit="m", low=0.0)
    swath_max_range: float = param(10000.0, "swath points further than this are dropped",
                                   unit="m", low=0.0)
    voxel_size: float = param(0.25, "voxel edge for down-sampling swath points; 0: off",
                              unit="m", low=0.0)
    outlier_neighbors: int = param(20, "neighbours in the statistical outlier test of swath "
                                       "points; 0: off", low=0)
    outlier_std_ratio: float = param(2.0, "swath points whose mean neighbour distance exceeds "
                                          "the mean by this many std are outliers", low=1e-6)
    filter_backend: str = param("auto", "swath filter implementation; auto prefers open3d",
                                choices=BACKENDS)
    channels: list[str] = param([], "scalar channels besides the depth (e.g. temperature): "
                                    "each reading is placed at the vehicle's position and "
                                    "becomes a sample with its value in the channel's column "
                                    "(NaN elsewhere); empty: depth only, samples x, y, z")
    channel_rates: list = param([], "each channel's reading rate, as sonar_rate (0: unknown); "
                                    "empty: every channel 0", unit="Hz")
    channel_topics: list[str] = param([], "each channel's topic; empty: the channel's name")
    channel_types: list[str] = param([], "each channel's message: temperature (sensor_msgs/"
                                         "Temperature), fluid_pressure (sensor_msgs/"
                                         "FluidPressure, Pa), cloud (PointCloud2, one point, "
                                         "a field named like the channel) or binary (such a "
                                         "cloud of class labels 0 or 1); empty: the "
                                         "channel's name where that is a type, binary for "
                                         "seabed_class, else cloud")
    channel_frames: list[str] = param([], "each channel's frame_id expected (a frame on the "
                                          "vehicle: the reading is placed at its position); "
                                          "empty: base_frame")
    float64_samples: bool = param(False, "publish samples as float64 fields instead of the "
                                         "contract's float32 (no rounding of x, y: a lockstep "
                                         "mission then differs from the ROS-free one only by "
                                         "sensor_msgs/Range's float32 range)")
    imu_attitude: bool = param(False, "take the vehicle's roll and pitch from sensor_msgs/Imu "
                                      "on imu (its orientation at each reading's stamp) "
                                      "instead of the odometry's")
    imu_yaw: bool = param(False, "with imu_attitude, take the yaw from the IMU too (an AHRS "
                                 "whose yaw is referenced to the map's east)")
    imu_frame: str = param("", "frame_id expected of imu, a frame aligned with base_frame; "
                               "empty: base_frame")
    depth_from_pressure: bool = param(False, "take the vehicle's z from sensor_msgs/"
                                             "FluidPressure on depth, z = -(p - "
                                             "atmospheric_pressure) / (water_density g), "
                                             "instead of the odometry's")
    depth_frame: str = param("", "frame_id expected of depth (the pressure sensor, at the "
                                 "vehicle's origin); empty: base_frame")
    water_density: float = param(1025.0, "density of the water column for depth_from_pressure "
                                         "(sea water about 1025, fresh 1000)", unit="kg/m^3",
                                 low=1.0, high=2000.0)
    atmospheric_pressure: float = param(101325.0, "pressure at the surface for "
                                                  "depth_from_pressure (a sensor reporting "
                                                  "gauge pressure: 0)", unit="Pa", low=0.0)
    limits: LimitsConfig = group(LimitsConfig)

    def validate(self) -> None:
        for name in ("sonar_mount_xyz", "sonar_mount_rpy"):
            values = getattr(self, name)
            if len(values) != 3 or not all(isinstance(v, (int, float)) and not isinstance(
                    v, bool) and math.isfinite(v) for v in values):
                raise ConfigError(f"IngestConfig.{name} must be three finite numbers, got "
                                  f"{values!r}")
            setattr(self, name, [float(v) for v in values])
        try:
            StaticTransform.from_values(self.map_from_odom, self.orientation_tolerance)
        except ValueError as error:
            raise ConfigError(f"IngestConfig.map_from_odom: {error}") from None
        if self.odom_frame == self.world_frame:
            raise ConfigError(f"IngestConfig.odom_frame must differ from world_frame "
                              f"({self.world_frame!r}); empty: no second frame")
        if self.swath_max_range <= self.swath_min_range:
            raise ConfigError(f"IngestConfig.swath_max_range ({self.swath_max_range:g}) must "
                              f"exceed swath_min_range ({self.swath_min_range:g})")
        if self.outlier_neighbors == 1:
            raise ConfigError("IngestConfig.outlier_neighbors must be 0 (off) or >= 2: with "
                              "one neighbour (the point itself) every point is an outlier")
        if len(set(self.channels)) != len(self.channels) or not all(
                isinstance(name, str) and name.isidentifier() and name not in ("x", "y", "z")
                for name in self.channels):
            raise ConfigError(f"IngestConfig.channels must be distinct identifiers other than "
                              f"x, y, z (each names a field of the samples cloud), got "
                              f"{self.channels!r}")
        if self.channel_rates and (len(self.channel_rates) != len(self.channels) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf
                for v in self.channel_rates)):
            raise ConfigError(f"IngestConfig.channel_rates must be empty or one rate >= 0 Hz "
                              f"per channel {self.channels!r}, got {self.channel_rates!r}")
        self.channel_rates = [float(v) for v in self.channel_rates]
        check_channel_sources(self)
        if self.stamp_jump_threshold < self.max_pose_gap:
            raise ConfigError(f"IngestConfig.stamp_jump_threshold ({self.stamp_jump_threshold:g}"
                              f") must be at least max_pose_gap ({self.max_pose_gap:g}): a pause "
                              f"the pose history may bridge is no clock jump")
