"""The height the simulated AUV holds: a fixed plane, a commanded depth or an altitude.

``VehicleConfig.vertical_mode`` chooses (z up, metres, map frame):

* ``plane``: ``z = plane_z`` everywhere (the POAM paper's maps, where the "vehicle" flies
  above a land surface of image intensities);
* ``depth``: ``z = -depth`` everywhere, below the sea surface ``z = 0``;
* ``altitude``: ``z = h(x, y) + altitude`` over the terrain elevation ``h``, and, where the
  terrain lies below the sea surface (``h < 0``), never above it: ``min(h + altitude, 0)``.
  Over a shallow seabed the vehicle then rides at the surface, closer to the bottom than
  commanded; the sonar reports ranges below its minimum as "too close" (REP-117: -inf).

The altitude controller is ideal: the commanded height is held exactly at every control
step (no vertical dynamics), and the simulator interpolates linearly between steps as the
ingest interpolates the odometry.
"""

from __future__ import annotations

import numpy as np

from poam_ros.params import ConfigError
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import VehicleConfig


class HeightKeeper:
    """The vehicle's height z over each horizontal position, by ``config.vertical_mode``."""

    def __init__(self, config: VehicleConfig, terrain: Terrain) -> None:
        self.mode = config.vertical_mode
        self.altitude = config.altitude
        self.terrain = terrain
        self.level = {"plane": config.plane_z, "depth": -config.depth}.get(self.mode)
        if self.mode == "depth" and terrain.max_elevation >= self.level:
            raise ConfigError(f"VehicleConfig.depth={config.depth:g} m puts the vehicle at or "
                              f"below the highest terrain ({terrain.max_elevation:g} m): "
                              f"choose a shallower depth or vertical_mode altitude")

    @property
    def constant(self) -> float | None:
        """The fixed height of the plane and depth modes; None in altitude mode."""
        return self.level

    def heights(self, xy: np.ndarray) -> np.ndarray:
        """(N,) z in metres over the (N, 2) points ``xy`` (inside the terrain)."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        if self.level is not None:
            return np.full(len(xy), self.level)
        ground = self.terrain.elevation(xy)
        z = ground + self.altitude
        return np.where(ground < 0.0, np.minimum(z, 0.0), z)

    def height(self, x: float, y: float) -> float:
        """z in metres over one point; off the terrain, the height over its nearest edge
        (a vehicle may swing a little beyond the map while it turns)."""
        if self.level is not None:
            return self.level
        xmin, xmax, ymin, ymax = self.terrain.extent
        point = [[min(max(x, xmin), xmax), min(max(y, ymin), ymax)]]
        return float(self.heights(point)[0])
