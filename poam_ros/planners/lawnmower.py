"""A coverage baseline: boustrophedon (lawnmower) sweeps over the workspace."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from poam_ros.params import Params, param
from poam_ros.planners.base import Planner, PredictStd, checked_position
from poam_ros.workspace import Workspace


@dataclass
class LawnmowerConfig(Params):
    """Settings of :class:`LawnmowerPlanner`."""

    spacing: float = param(2.0, "largest distance between neighbouring sweep lines",
                           unit="m", low=1e-3)
    direction: str = param("x", "axis the sweep lines run along", choices=("x", "y"))


class LawnmowerPlanner(Planner):
    """Sweeps the free area in parallel lines, one line (leg) per call to :meth:`plan`.

    The lines run along ``direction`` and are spread evenly across the bounding box,
    ``ceil(width / spacing)`` of them at most ``spacing`` apart and half a gap in from the
    edges, so every point of the box lies within ``spacing / 2`` of a line. Each line is
    clipped to the free area: a leg holds the ends of its free segments in travel order,
    (2 * segments, 2) waypoints on the boundary. Travel between those ends, and between
    legs, is a straight line that may cross a no-go zone; this planner does not route
    around obstacles.

    The first leg after construction or :meth:`reset` starts at the corner of the pattern
    nearest the robot. When the pattern is done it is flown again in reverse.
    """

    def __init__(self, workspace: Workspace, rng: np.random.Generator,
                 config: LawnmowerConfig | None = None) -> None:
        super().__init__(workspace, rng)
        self.config = config or LawnmowerConfig()
        self._lines = _clipped_sweep_lines(workspace, self.config)
        if not self._lines:
            raise ValueError(f"no sweep line {self.config.spacing} m apart meets the free "
                             "area; use a smaller spacing")
        self.reset()

    def reset(self) -> None:
        self._legs: list[np.ndarray] = []
        self._next = 0

    def plan(self, position: np.ndarray, predict_std: PredictStd | None = None,
             heading: float | None = None) -> np.ndarray:
        position = checked_position(position)
        if not self._legs:
            self._legs = _nearest_start(self._lines, position)
        elif self._next == len(self._legs):
            self._legs = [leg[::-1] for leg in reversed(self._legs)]
            self._next = 0
        leg = self._legs[self._next]
        self._next += 1
        return leg.copy()

    @property
    def num_legs(self) -> int:
        """Legs (sweep lines that meet the free area) in one pass."""
        return len(self._lines)

    def pattern(self) -> np.ndarray:
        """All waypoints (M, 2) of one pass, in the order of the pass under way (or the first)."""
        return np.concatenate(self._legs or _boustrophedon(self._lines, False, False))


def _clipped_sweep_lines(workspace: Workspace, config: LawnmowerConfig) -> list[np.ndarray]:
    """Free segments of each sweep line as waypoints (2 * segments, 2), increasing along it."""
    xmin, xmax, ymin, ymax = workspace.bounds
    along, across = (0, 1) if config.direction == "x" else (1, 0)
    low, high = ((ymin, ymax) if config.direction == "x" else (xmin, xmax))
    start, stop = ((xmin, xmax) if config.direction == "x" else (ymin, ymax))
    count = max(1, math.ceil((high - low) / config.spacing))
    offsets = low + (np.arange(count) + 0.5) * (high - low) / count
    ends = np.empty((count, 2, 2))
    ends[:, :, along] = (start, stop)
    ends[:, :, across] = offsets[:, None]
    clipped = shapely.intersection(shapely.linestrings(ends), workspace.free_area)
    lines = []
    for geometry in clipped:
        segments = [part for part in shapely.get_parts(geometry)
                    if isinstance(part, shapely.LineString) and part.length > 0.0]
        if not segments:
            continue
        # A line running along an edge of a no-go zone comes back in touching pieces.
        segments = shapely.get_parts(shapely.line_merge(shapely.multilinestrings(segments)))
        # Sort each segment's two ends, then the segments, by the coordinate along the line.
        pairs = [np.asarray(s.coords)[[0, -1]] for s in segments]
        pairs = [p[np.argsort(p[:, along])] for p in pairs]
        pairs.sort(key=lambda p: p[0, along])
        lines.append(np.concatenate(pairs))
    return lines


def _boustrophedon(lines: list[np.ndarray], reverse_lines: bool,
                   start_backward: bool) -> list[np.ndarray]:
    ordered = lines[::-1] if reverse_lines else lines
    return [line[::-1] if (i % 2 == 0) == start_backward else line
            for i, line in enumerate(ordered)]


def _nearest_start(lines: list[np.ndarray], position: np.ndarray) -> list[np.ndarray]:
    """The one of the four boustrophedon orders whose first waypoint is nearest the robot."""
    orders = [_boustrophedon(lines, r, b) for r in (False, True) for b in (False, True)]
    return min(orders, key=lambda legs: np.linalg.norm(legs[0][0] - position))
