"""Multibeam sonar: a fan of beams across the track, each cast to its first terrain hit.

Beams lie in the sonar's y-z plane (sensor frame, REP-103: x forward, y left, z up) at
angles ``phi`` from nadir, positive to port, so beam ``phi`` points along
``b = (0, sin phi, -cos phi)``. The sonar is mounted on the vehicle at the lever arm
``t_mount`` (m, vehicle frame) with the rotation ``R_mount`` (``mount_rpy``); the vehicle is at
``position`` (its height: the plane ``z = plane_z`` or the one a ping gives) with the
attitude ``R_vehicle`` = R(roll, pitch, yaw) (:mod:`poam_ros.attitude`). A beam of range r
then ends at

    position + R_vehicle (t_mount + R_mount r b),

which is exactly how the ingest places the sonar-frame point ``r b`` it receives. All beams
of a ping are cast together: the ray height above the terrain is sampled every half cell
along each beam to bracket the first crossing, which bisection then refines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poam_ros.attitude import rotation_matrix
from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import Pose

BISECTION_STEPS = 40


@dataclass
class MultibeamConfig(Params):
    """Fan geometry and noise of the multibeam sonar."""

    num_beams: int = param(64, "beams across the swath, evenly spaced in angle", low=1)
    swath_angle: float = param(2.0944, "full across-track opening angle centred on nadir",
                               unit="rad", low=0.0, high=3.0)
    noise_std: float = param(1.0, "standard deviation of the Gaussian range noise per beam",
                             unit="m", low=0.0)
    max_range: float = param(2000.0, "beams without a hit within this range return nothing",
                             unit="m", low=0.0)
    mount_xyz: list = param([0.0, 0.0, 0.0], "lever arm: the sonar's origin in the vehicle "
                                             "frame (x forward, y left, z up); keep equal to "
                                             "the ingest's sonar_mount_xyz", unit="m")
    mount_rpy: list = param([0.0, 0.0, 0.0], "the sonar frame's roll, pitch, yaw relative to "
                                             "the vehicle frame; keep equal to the ingest's "
                                             "sonar_mount_rpy", unit="rad")

    def validate(self) -> None:
        for name in ("mount_xyz", "mount_rpy"):
            values = getattr(self, name)
            if len(values) != 3 or not all(isinstance(v, (int, float))
                                           and not isinstance(v, bool) and math.isfinite(v)
                                           for v in values):
                raise ConfigError(f"MultibeamConfig.{name} must be three finite numbers, "
                                  f"got {values!r}")
            setattr(self, name, [float(v) for v in values])


@dataclass
class MultibeamStreamConfig(MultibeamConfig):
    """A multibeam sonar as the simulated AUV runs it: the fan, and whether and how often
    it pings (the ``multibeam.*`` parameters of the ``simulated_auv`` node)."""

    enabled: bool = param(False, "ping the multibeam sonar and publish sonar/swath")
    rate: float = param(1.0, "pings per second of simulated time", unit="Hz", low=0.001,
                        high=1000.0)

    def sonar_config(self) -> MultibeamConfig:
        """The fan alone, as :class:`MultibeamSonar` takes it."""
        return MultibeamConfig(**{spec.name: getattr(self, spec.name)
                                  for spec in MultibeamConfig.specs()})


@dataclass(frozen=True)
class Swath:
    """One ping of B beams; beams without a hit hold NaN.

    ``beam_angles`` (B,) rad from nadir, positive to port; ``ranges`` (B,) m, measured;
    ``points_sensor`` (B, 3) m in the sensor frame; ``points_world`` (B, 3) m in the map
    frame; ``valid`` (B,) bool, True where the beam hit the terrain.
    """

    beam_angles: np.ndarray
    ranges: np.ndarray
    points_sensor: np.ndarray
    points_world: np.ndarray
    valid: np.ndarray


class MultibeamSonar:
    """Across-track fan of beams from a vehicle over ``terrain``.

    Args:
        terrain: the seafloor.
        config: the fan, its noise and its mounting.
        plane_z: the vehicle's height when a ping gives none; it must lie above the highest
            terrain. None: every :meth:`ping` gives the height.
        rng: the noise source.

    A beam returns nothing when it leaves the terrain's extent or ``max_range`` before it
    reaches the seafloor, and no beam does from a sensor off the terrain.
    """

    def __init__(self, terrain: Terrain, config: MultibeamConfig, plane_z: float | None,
                 rng: np.random.Generator) -> None:
        if plane_z is not None and plane_z <= terrain.max_elevation:
            raise ValueError(f"plane_z={plane_z:g} must lie above the highest terrain "
                             f"({terrain.max_elevation:g})")
        self.terrain = terrain
        self.config = config
        self.plane_z = None if plane_z is None else float(plane_z)
        self.rng = rng
        half = config.swath_angle / 2.0 if config.num_beams > 1 else 0.0
        self.beam_angles = np.linspace(-half, half, config.num_beams)
        self.mount_xyz = np.asarray(config.mount_xyz, dtype=float)
        self.mount_rotation = rotation_matrix(*config.mount_rpy)

    def ping(self, pose: Pose, z: float | None = None, roll: float = 0.0,
             pitch: float = 0.0) -> Swath:
        """Cast every beam from ``pose`` = (x m, y m, yaw rad) at height ``z`` m (default: the
        plane) with the vehicle rolled and pitched by ``roll``, ``pitch`` rad; noise is drawn
        for each beam. A sensor off the terrain hears nothing (no seafloor there)."""
        x, y, yaw = pose
        if z is None:
            if self.plane_z is None:
                raise ValueError("this multibeam has no plane: ping() needs the height z")
            z = self.plane_z
        sin_phi, cos_phi = np.sin(self.beam_angles), np.cos(self.beam_angles)
        beams = np.column_stack((np.zeros_like(sin_phi), sin_phi, -cos_phi))  # sensor frame
        vehicle = rotation_matrix(roll, pitch, yaw)
        origin = np.array([x, y, z]) + vehicle @ self.mount_xyz
        # Per metre of range along a beam: x and y move by step_x, step_y; z drops `drop`.
        directions = beams @ (vehicle @ self.mount_rotation).T
        step_x, step_y, drop = directions[:, 0], directions[:, 1], -directions[:, 2]
        if self.terrain.contains([[x, y]])[0] and self.terrain.contains([origin[:2]])[0]:
            ranges = self._first_hits(origin, step_x, step_y, drop)
        else:
            ranges = np.full(len(self.beam_angles), np.nan)
        valid = np.isfinite(ranges)
        ranges = ranges + self.rng.normal(0.0, self.config.noise_std, size=ranges.shape)
        points_sensor = np.column_stack((np.where(valid, 0.0, np.nan), ranges * sin_phi,
                                         -ranges * cos_phi))
        points_world = origin + ranges[:, None] * directions
        return Swath(self.beam_angles.copy(), ranges, points_sensor, points_world, valid)

    def _first_hits(self, origin: np.ndarray, step_x: np.ndarray, step_y: np.ndarray,
                    drop: np.ndarray) -> np.ndarray:
        """(B,) noise-free range to each beam's first terrain hit, NaN where there is none."""
        xmin, xmax, ymin, ymax = self.terrain.extent
        x, y, z = (float(v) for v in origin)
        # The ray cannot hit beyond the depth of the lowest terrain, the extent or max range.
        # The depth bound is stretched by a hair so that a flat seafloor at exactly the
        # lowest level registers as crossed despite rounding. A beam tilted above the
        # horizontal (drop <= 0) can only meet rising terrain: max range bounds it.
        with np.errstate(divide="ignore"):
            depth_bound = np.where(drop > 0.0, (z - self.terrain.min_elevation) / drop
                                   * (1.0 + 1e-9), np.inf)
            ends = np.minimum(self.config.max_range, depth_bound)
            for start, step, wall_low, wall_high in ((x, step_x, xmin, xmax),
                                                      (y, step_y, ymin, ymax)):
                to_wall = np.where(step > 0, (wall_high - start) / step,
                                   np.where(step < 0, (wall_low - start) / step, np.inf))
                ends = np.minimum(ends, to_wall)
        half_cell = 0.5 * min(self.terrain.cell_size)
        horizontal = ends * np.hypot(step_x, step_y)
        samples = max(2, math.ceil(horizontal.max() / half_cell) + 1)
        ranges = ends[:, None] * np.linspace(0.0, 1.0, samples)
        below = self._clearance(x, y, z, step_x[:, None], step_y[:, None], drop[:, None],
                                ranges) <= 0.0
        hit = below.any(axis=1)
        first = np.argmax(below, axis=1)
        beams = np.flatnonzero(hit)
        low, high = ranges[beams, first[beams] - 1], ranges[beams, first[beams]]
        for _ in range(BISECTION_STEPS):
            middle = 0.5 * (low + high)
            above = self._clearance(x, y, z, step_x[beams], step_y[beams], drop[beams],
                                    middle) > 0.0
            low, high = np.where(above, middle, low), np.where(above, high, middle)
        result = np.full(len(drop), np.nan)
        result[beams] = 0.5 * (low + high)
        return result

    def _clearance(self, x, y, z, step_x, step_y, drop, ranges) -> np.ndarray:
        """Height of the ray above the terrain at ``ranges`` (any shape broadcasting to it)."""
        xmin, xmax, ymin, ymax = self.terrain.extent
        # Points were bounded to the extent; clipping only removes rounding at its walls.
        px = np.clip(x + ranges * step_x, xmin, xmax)
        py = np.clip(y + ranges * step_y, ymin, ymax)
        ground = self.terrain.elevation(np.column_stack((px.ravel(), py.ravel())))
        return z - ranges * drop - ground.reshape(px.shape)
