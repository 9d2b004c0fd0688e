"""Downward single-beam sonar (echo sounder): range to the seafloor below the vehicle.

The vehicle is at height ``z`` (the plane ``z = plane_z`` by default, or the height each
sounding gives: see :mod:`~poam_ros.sim.depth_keeping`); the beam points straight down
(-z), so the true range is ``z - elevation``. A sounding adds Gaussian noise to the range
and reports both the range (for ``sensor_msgs/Range``) and the elevation it implies,
``z - measured range``, which is the POAM paper's noisy elevation sample. Ranges, their
limits and the noise are in metres (REP-117): a true range below ``min_range`` reads -inf
("too close"), beyond ``max_range`` +inf ("nothing detected").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.terrain import Terrain, as_points


@dataclass
class SonarConfig(Params):
    """Single-beam sonar timing, noise and range limits (defaults: the POAM paper)."""

    rate: float = param(3.0, "soundings per second of simulated time", unit="Hz",
                        low=0.001, high=1000.0)
    noise_std: float = param(1.0, "standard deviation of the Gaussian range noise, in the "
                                  "terrain's vertical units", unit="m", low=0.0)
    min_range: float = param(1.0, "shortest range the sonar measures (Range.min_range)",
                             unit="m", low=0.0)
    max_range: float = param(2000.0, "longest range the sonar measures (Range.max_range)",
                             unit="m", low=0.0)

    def validate(self) -> None:
        if self.max_range <= self.min_range:
            raise ConfigError(f"SonarConfig.max_range ({self.max_range:g}) must exceed "
                              f"min_range ({self.min_range:g})")


@dataclass(frozen=True)
class Soundings:
    """N soundings: measured elevation and range, and the noise-free elevation, each (N,);
    a sounding without a return has range +inf and NaN elevations."""

    elevation: np.ndarray
    range: np.ndarray
    true_elevation: np.ndarray


class SingleBeamSonar:
    """Echo sounder on a vehicle in the plane ``z = plane_z`` above ``terrain``.

    Args:
        terrain: the seafloor.
        config: rate, noise and range limits.
        plane_z: height of the vehicle's plane; the whole terrain must lie between
            ``min_range`` and ``max_range`` below it. None: every :meth:`measure` gives the
            heights (a vehicle holding an altitude).
        rng: the noise source; seed it for reproducible runs.
    """

    def __init__(self, terrain: Terrain, config: SonarConfig, plane_z: float | None,
                 rng: np.random.Generator) -> None:
        self.terrain = terrain
        self.config = config
        self.plane_z = None if plane_z is None else float(plane_z)
        self.rng = rng
        if plane_z is None:
            return
        shallowest = plane_z - terrain.max_elevation
        deepest = plane_z - terrain.min_elevation
        if shallowest < config.min_range:
            raise ConfigError(f"VehicleConfig.plane_z={plane_z:g} is only {shallowest:g} above "
                              f"the highest terrain ({terrain.max_elevation:g}); it must be at "
                              f"least SonarConfig.min_range={config.min_range:g} above it")
        if deepest > config.max_range:
            raise ConfigError(f"the lowest terrain ({terrain.min_elevation:g}) is {deepest:g} "
                              f"below VehicleConfig.plane_z={plane_z:g}, beyond "
                              f"SonarConfig.max_range={config.max_range:g}")

    def measure(self, xy, z=None) -> Soundings:
        """Soundings at the (N, 2) vehicle positions ``xy`` (metres), one noise draw each,
        from the heights ``z`` (N,) m (default: the plane).

        The simulated world has no seafloor beyond the terrain's extent, so a position off
        it gets no return: range +inf (REP-117's "nothing detected"), elevations NaN. Its
        noise is drawn all the same, so the soundings over the terrain do not depend on it.
        A true range outside [min_range, max_range] reads -inf (too close) or +inf.
        """
        points = as_points(xy)
        if z is None:
            if self.plane_z is None:
                raise ValueError("this sonar has no plane: measure() needs the heights z")
            z = self.plane_z
        over = self.terrain.contains(points)
        true_elevation = np.full(len(points), np.nan)
        true_elevation[over] = self.terrain.elevation(points[over])
        noise = self.rng.normal(0.0, self.config.noise_std, size=true_elevation.shape)
        true_range = z - true_elevation
        limit = np.where(true_range < self.config.min_range, -np.inf, np.inf)
        returned = over & (true_range >= self.config.min_range) & (
            true_range <= self.config.max_range)
        measured_range = np.where(returned, true_range + noise, limit)
        elevation = np.where(returned, z - measured_range, np.nan)
        return Soundings(elevation, measured_range, true_elevation)
