"""The paper's informative planner: maximum predictive entropy, penalised by distance."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.planners.acquisition import ACQUISITIONS, DEPTH, predictive_entropy
from poam_ros.planners.base import Planner, PredictStd, checked_position
from poam_ros.sim.vehicle import forward_path_length
from poam_ros.workspace import Workspace


@dataclass
class MaxEntropyConfig(Params):
    """Settings of :class:`MaxEntropyPlanner`; the defaults are those of the POAM paper."""

    num_candidates: int = param(2000, "candidate goals drawn uniformly per plan", low=1)
    distance_weight: float = param(0.5, "weight of the normalised distance penalty", low=0.0)
    turning_radius: float = param(0.0, "the vehicle's turn radius at cruise speed "
                                       "(vehicle.turning_radius, or max_speed / max_yaw_rate "
                                       "if wider): the distance is then the length of its "
                                       "turn-then-straight path; 0: Euclidean (the paper)",
                                  unit="m", low=0.0)
    acquisition: str = param(DEPTH, "a candidate's entropy on a multi-channel map: depth: "
                                     "the depth channel's (the paper); weighted: the "
                                     "channels' entropies weighted by channel_weights; "
                                     "joint: the entropy of their joint predictive "
                                     "distribution, 0.5 log det(2 pi e Sigma)",
                             choices=ACQUISITIONS)
    channel_weights: list = param([], "weighted: one weight >= 0 per channel, depth first "
                                      "(e.g. [1.0, 0.5]); empty: all 1")

    def validate(self) -> None:
        if not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                   and 0.0 <= w < math.inf for w in self.channel_weights) or (
                self.channel_weights and not any(self.channel_weights)):
            raise ConfigError(f"MaxEntropyConfig.channel_weights must be finite numbers >= 0, "
                              f"not all 0, got {self.channel_weights!r}")
        self.channel_weights = [float(w) for w in self.channel_weights]


class MaxEntropyPlanner(Planner):
    """Picks the candidate goal with the best trade-off of entropy against travel distance.

    Each call draws ``num_candidates`` points uniformly in the free area and scores them as

        score = minmax(H) - distance_weight * minmax(d),   H = 0.5 log(2 pi e std^2),

    where ``std`` is the predictive standard deviation at the candidate (on a multi-channel
    map ``predict_std`` gives the channels' covariance and H is the configured
    ``acquisition``: :mod:`~poam_ros.planners.acquisition`), ``d`` its Euclidean
    distance from the robot and ``minmax`` rescales over the candidates to [0, 1] (all zeros
    when the values are equal). The best candidate is returned as waypoints (1, 2).

    With a ``turning_radius`` R, ``d`` is the length of the path a forward-only vehicle with
    that radius flies from its pose and heading (a turn, then straight:
    :func:`~poam_ros.sim.vehicle.forward_path_length`), so a goal just behind the vehicle
    costs a turn of about πR rather than looking close.
    """

    def __init__(self, workspace: Workspace, rng: np.random.Generator,
                 config: MaxEntropyConfig | None = None) -> None:
        super().__init__(workspace, rng)
        self.config = config or MaxEntropyConfig()

    def plan(self, position: np.ndarray, predict_std: PredictStd | None = None,
             heading: float | None = None,
             allowed: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """``heading``: the vehicle's yaw (rad), needed with a turning radius. ``allowed``:
        which candidates (N, 2) may be the goal, (N,) bool (a fleet's separation,
        :mod:`~poam_ros.planners.coordination`); the scores' rescaling spans all of them.
        ``ValueError`` if none may."""
        if predict_std is None:
            raise ValueError("MaxEntropyPlanner needs predict_std")
        position = checked_position(position)
        radius = self.config.turning_radius
        if radius > 0.0 and (heading is None or not math.isfinite(heading)):
            raise ValueError(f"MaxEntropyPlanner with turning_radius {radius:g} m needs the "
                             f"vehicle's finite heading, got {heading!r}")
        candidates = self.workspace.sample_uniform(self.config.num_candidates, self.rng)
        entropy = predictive_entropy(predict_std(candidates), len(candidates),
                                     self.config.acquisition, self.config.channel_weights)
        if radius > 0.0:
            distance = forward_path_length((*position, heading), candidates, radius)
        else:
            distance = np.linalg.norm(candidates - position, axis=1)
        score = _minmax(entropy) - self.config.distance_weight * _minmax(distance)
        if allowed is not None:
            mask = allowed(candidates)
            if not mask.any():
                raise ValueError(f"none of the {len(candidates)} candidate goals is allowed "
                                 f"(every one is too near a teammate)")
            score = np.where(mask, score, -np.inf)
        return candidates[np.argmax(score)][None, :]


def _minmax(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min()
    if span <= 0.0:
        return np.zeros_like(values)
    return (values - values.min()) / span
