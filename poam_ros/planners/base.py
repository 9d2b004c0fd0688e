"""The interface every planner shares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from poam_ros.workspace import Workspace

PredictStd = Callable[[np.ndarray], np.ndarray]
"""Predictive standard deviation of a new measurement at points (N, 2) in metres: shape
(N,); of a multi-channel map, the channels' predictive covariance (N, D, D), depth first."""


class Planner(ABC):
    """Chooses where the robot goes next, inside a :class:`Workspace`.

    Randomness comes only from the ``numpy.random.Generator`` given at construction, so a
    run is reproducible from its seed.
    """

    def __init__(self, workspace: Workspace, rng: np.random.Generator) -> None:
        self.workspace = workspace
        self.rng = rng

    @abstractmethod
    def plan(self, position: np.ndarray, predict_std: PredictStd | None = None,
             heading: float | None = None) -> np.ndarray:
        """The next waypoints (K, 2) in metres, given the robot position (2,) and its
        heading (rad; None where unknown).

        Non-informative planners ignore ``predict_std``; planners that measure no path
        ignore ``heading``.
        """

    def reset(self) -> None:
        """Forget progress made so far (the generator is left as it is).

        Planners that keep no state between calls have nothing to forget.
        """


def checked_position(position: np.ndarray) -> np.ndarray:
    """The robot position as a finite float array (2,), or ``ValueError``."""
    position = np.asarray(position, dtype=float)
    if position.shape != (2,) or not np.isfinite(position).all():
        raise ValueError(f"position must be a finite (x, y) of shape (2,), got {position!r}")
    return position
