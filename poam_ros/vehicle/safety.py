"""The safety gate every commanded point passes: workspace, no-go zones, depth, seabed.

A point is (x, y, z) in the map frame; what z means follows ``vertical``
(:data:`~poam_ros.vehicle.config.VERTICAL_SETPOINTS`):

* ``depth``: z is the height in the map (up, 0 at the surface): refused above the surface
  (z > 0), below ``max_depth`` (−z > max_depth), and, where the seabed is known, closer to
  it than ``min_altitude`` (z − seabed < min_altitude);
* ``altitude``: z is the height above the seabed: refused below ``min_altitude`` and, where
  the seabed is known, above the surface (seabed + z > 0) or below ``max_depth``;
* ``surface``: z is ignored; only the workspace applies.

A point outside the workspace polygon or inside a no-go zone
(:meth:`poam_ros.workspace.Workspace.contains`) is refused in every mode. ``seabed`` maps
(N, 2) points to their elevations (m, up; NaN where unknown), e.g. a terrain or the map's
mean.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

import numpy as np

from poam_ros.vehicle.config import VehicleBridgeConfig
from poam_ros.workspace import Workspace

Seabed = Callable[[np.ndarray], np.ndarray]


class SafetyGate:
    """Refuses unsafe points and counts the refusals by reason (:attr:`refused`)."""

    def __init__(self, config: VehicleBridgeConfig, workspace: Workspace,
                 seabed: Seabed | None = None) -> None:
        self.vertical = config.vertical
        self.max_depth = config.max_depth
        self.min_altitude = config.min_altitude
        self.workspace = workspace
        self.seabed = seabed
        self.refused: Counter[str] = Counter()

    def reason(self, x: float, y: float, z: float) -> str | None:
        """Why (x, y, z) may not be commanded, or None when it may."""
        if not all(math.isfinite(v) for v in (x, y)) or (
                self.vertical != "surface" and not math.isfinite(z)):
            return "not_finite"
        if not self.workspace.contains(np.array([[x, y]]))[0]:
            return "outside_workspace"
        if self.vertical == "surface":
            return None
        ground = self._seabed(x, y)
        height = z if self.vertical == "depth" else ground + z  # NaN when unknown
        if height > 0.0:
            return "above_surface"
        if -height > self.max_depth:
            return "below_max_depth"
        altitude = z if self.vertical == "altitude" else z - ground
        if altitude < self.min_altitude:
            return "too_close_to_seabed"
        return None

    def check(self, points: np.ndarray) -> str | None:
        """The first refusal among (K, 3) ``points``, counted; None when all pass."""
        for x, y, z in np.asarray(points, dtype=float).reshape(-1, 3).tolist():
            reason = self.reason(x, y, z)
            if reason is not None:
                self.refused[reason] += 1
                return reason
        return None

    def _seabed(self, x: float, y: float) -> float:
        if self.seabed is None:
            return math.nan
        return float(np.asarray(self.seabed(np.array([[x, y]])), dtype=float).reshape(-1)[0])
