import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.planners import MaxEntropyConfig, MaxEntropyPlanner
from poam_ros.workspace import Workspace

PEAK = np.array([3.0, -4.0])


def peaked_std(xy):
    """A std bump of width 1 m at PEAK over a floor of 0.1."""
    return 0.1 + np.exp(-0.5 * np.sum((xy - PEAK) ** 2, axis=1))


def flat_std(xy):
    return np.full(len(xy), 2.0)


@pytest.fixture
def workspace():
    return Workspace.from_extent(-10.0, 10.0, -10.0, 10.0)


def test_picks_near_the_uncertainty_peak_when_far_away(workspace):
    # Without the distance penalty the informative score alone decides.
    planner = MaxEntropyPlanner(workspace, np.random.default_rng(0),
                                MaxEntropyConfig(distance_weight=0.0))
    goal = planner.plan(np.array([-10.0, 10.0]), peaked_std)
    assert goal.shape == (1, 2)
    assert np.linalg.norm(goal[0] - PEAK) < 0.5


def test_paper_weight_still_heads_for_the_peak(workspace):
    # On the bump the score is about 1 - 0.5 * 19.1 / 28.3 = 0.66 (its normalised entropy
    # minus the penalty for its distance); off the bump the entropy term is near 0.
    planner = MaxEntropyPlanner(workspace, np.random.default_rng(0))
    goal = planner.plan(np.array([-10.0, 10.0]), peaked_std)
    assert np.linalg.norm(goal[0] - PEAK) < 2.0


def plan_seeing_candidates(workspace, seed, num_candidates, position, std):
    """The goal a planner picks from ``position`` with ``std``, and the candidates it scored."""
    seen = []

    def recording_std(xy):
        seen.append(xy)
        return std(xy)

    planner = MaxEntropyPlanner(workspace, np.random.default_rng(seed),
                                MaxEntropyConfig(num_candidates=num_candidates))
    goal = planner.plan(position, recording_std)
    return goal, seen[0]


def test_flat_std_picks_the_nearest_candidate(workspace):
    position = np.array([2.0, 1.0])
    goal, candidates = plan_seeing_candidates(workspace, 5, 300, position, flat_std)
    nearest = candidates[np.argmin(np.linalg.norm(candidates - position, axis=1))]
    np.testing.assert_array_equal(goal[0], nearest)


def test_score_matches_the_formula_on_seen_candidates(workspace):
    position = np.array([0.0, 0.0])
    goal, candidates = plan_seeing_candidates(workspace, 2, 50, position, peaked_std)
    entropy = 0.5 * np.log(2 * math.pi * math.e * peaked_std(candidates) ** 2)
    distance = np.linalg.norm(candidates - position, axis=1)

    def minmax(v):
        return (v - v.min()) / (v.max() - v.min())

    score = minmax(entropy) - 0.5 * minmax(distance)
    np.testing.assert_array_equal(goal[0], candidates[np.argmax(score)])


def test_candidates_respect_no_go_zones():
    # The std peaks inside the no-go zone; the goal must still be a free point.
    workspace = Workspace.from_vertices([-10, -10, 10, -10, 10, 10, -10, 10],
                                        [[1, -6, 5, -6, 5, -2, 1, -2]])
    seen = []

    def recording_std(xy):
        seen.append(xy)
        return peaked_std(xy)

    planner = MaxEntropyPlanner(workspace, np.random.default_rng(0),
                                MaxEntropyConfig(distance_weight=0.0))
    goal = planner.plan(np.array([-10.0, 10.0]), recording_std)
    assert workspace.contains(seen[0]).all()
    assert workspace.contains(goal).all()


def test_same_seed_same_goal(workspace):
    goals = [MaxEntropyPlanner(workspace, np.random.default_rng(9)).plan([1.0, 1.0], peaked_std)
             for _ in range(2)]
    np.testing.assert_array_equal(*goals)


@pytest.mark.parametrize("bad_std", [
    lambda xy: np.full(len(xy), np.nan),
    lambda xy: np.zeros(len(xy)),
    lambda xy: -np.ones(len(xy)),
    lambda xy: np.r_[np.ones(len(xy) - 1), np.inf],
])
def test_invalid_std_raises(workspace, bad_std):
    planner = MaxEntropyPlanner(workspace, np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-finite or non-positive"):
        planner.plan(np.zeros(2), bad_std)


def test_wrong_std_shape_and_missing_callable_raise(workspace):
    planner = MaxEntropyPlanner(workspace, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"shape \(2000,\)"):
        planner.plan(np.zeros(2), lambda xy: np.ones((len(xy), 1)))
    with pytest.raises(ValueError, match="needs predict_std"):
        planner.plan(np.zeros(2))
    with pytest.raises(ValueError, match="position"):
        planner.plan(np.array([np.nan, 0.0]), flat_std)


@pytest.mark.parametrize("fields", [{"num_candidates": 0}, {"distance_weight": -0.1}])
def test_invalid_config_raises(fields):
    with pytest.raises(ConfigError):
        MaxEntropyConfig(**fields)
