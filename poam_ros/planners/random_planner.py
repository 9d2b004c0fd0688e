"""A baseline planner: the next goal is a uniformly random point of the workspace."""

from __future__ import annotations

import numpy as np

from poam_ros.planners.base import Planner, PredictStd, checked_position


class RandomPlanner(Planner):
    """Returns one waypoint (1, 2) drawn uniformly from the free area; ignores the map."""

    def plan(self, position: np.ndarray, predict_std: PredictStd | None = None,
             heading: float | None = None) -> np.ndarray:
        checked_position(position)
        return self.workspace.sample_uniform(1, self.rng)
