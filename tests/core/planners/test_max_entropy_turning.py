"""The planner's distance term with a turning radius: the turn-then-straight path the vehicle
flies, so a goal just behind it is no longer "near"."""

import math

import numpy as np
import pytest

from poam_ros.planners import MaxEntropyConfig, MaxEntropyPlanner
from poam_ros.workspace import Workspace

WORKSPACE = Workspace.from_extent(-100.0, 100.0, -100.0, 100.0)
R = 30.0


def flat_std(xy):
    return np.full(len(xy), 2.0)


def plan(radius, seed=4, heading=0.0, std=flat_std):
    """The goal picked from the origin facing ``heading``, and the candidates it scored."""
    seen = []

    def recording_std(xy):
        seen.append(xy)
        return std(xy)

    planner = MaxEntropyPlanner(WORKSPACE, np.random.default_rng(seed),
                                MaxEntropyConfig(num_candidates=400, turning_radius=radius))
    return planner.plan(np.zeros(2), recording_std, heading)[0], seen[0]


def test_with_a_flat_map_it_picks_the_candidate_shortest_to_fly():
    goal, candidates = plan(R)
    # The path to each candidate, worked out in closed form: the vehicle at the origin
    # facing +x; left turns about (0, R), right turns about (0, -R).
    lengths = []
    for x, y in candidates:
        side = 1.0 if y >= 0 else -1.0
        if x * x + y * y < 2 * R * side * y:      # inside that side's circle: other side
            side = -side
        cx, cy = x, side * y - R                  # mirrored to a left turn
        dc = math.hypot(cx, cy)
        beta = math.atan2(cy, cx) - math.acos(R / dc)
        alpha = (beta + math.pi / 2) % math.tau
        lengths.append(R * alpha + math.sqrt(dc * dc - R * R))
    np.testing.assert_array_equal(goal, candidates[int(np.argmin(lengths))])


def test_a_goal_just_behind_is_far_for_a_torpedo_but_near_for_a_turn_in_place():
    euclidean, candidates = plan(0.0)
    turning, same = plan(R)
    np.testing.assert_array_equal(candidates, same)
    nearest = candidates[np.argmin(np.hypot(*candidates.T))]
    np.testing.assert_array_equal(euclidean, nearest)
    if nearest[0] < 0:  # the nearest candidate lies behind: the torpedo picks one ahead
        assert not np.array_equal(turning, nearest)
    assert turning[0] > 0.0  # facing +x, the cheapest goal to fly to lies ahead


def test_the_heading_decides():
    ahead_east, _ = plan(R, heading=0.0)
    ahead_west, _ = plan(R, heading=math.pi)
    assert ahead_east[0] > 0.0 > ahead_west[0]


def test_a_turning_radius_needs_the_heading():
    planner = MaxEntropyPlanner(WORKSPACE, np.random.default_rng(0),
                                MaxEntropyConfig(turning_radius=R))
    with pytest.raises(ValueError, match="needs the vehicle's finite heading"):
        planner.plan(np.zeros(2), flat_std)


def test_without_a_radius_the_heading_changes_nothing():
    a, _ = plan(0.0, heading=0.0)
    b, _ = plan(0.0, heading=2.0)
    np.testing.assert_array_equal(a, b)
