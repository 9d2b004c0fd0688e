"""A survey channel's sensor on the simulated vehicle (no ROS): a field with a known truth,
read at the vehicle's (x, y) at the channel's own rate and with its own generator."""

from __future__ import annotations

import numpy as np

from poam_ros.sim.terrain import as_points


class FieldSensor:
    """Readings of ``field`` (with a ``terrain`` and a ``config.rate`` in Hz) at the vehicle's
    position. Off the terrain there is no seafloor and no reading: NaN, its draw made all
    the same, so readings over the terrain do not depend on it. A channel's sensor says what
    the field is at a point (:meth:`truth`) and how a reading departs from it
    (:meth:`measure`)."""

    name = ""  # the channel's name

    def __init__(self, field, rng: np.random.Generator) -> None:
        self.field = field
        self.rng = rng

    @property
    def rate(self) -> float:
        return self.field.config.rate

    def read(self, xy) -> tuple[np.ndarray, np.ndarray]:
        """Read and true values, (N,) each, at the (N, 2) vehicle positions."""
        points = as_points(xy)
        over = self.field.terrain.contains(points)
        truth = np.full(len(points), np.nan)
        truth[over] = self.truth(points[over])
        return self.measure(truth), truth

    def truth(self, points: np.ndarray) -> np.ndarray:
        """The field at (M, 2) points over the terrain, (M,)."""
        raise NotImplementedError

    def measure(self, truth: np.ndarray) -> np.ndarray:
        """Readings (N,) of the true values ``truth`` (N,; NaN off the terrain)."""
        raise NotImplementedError
