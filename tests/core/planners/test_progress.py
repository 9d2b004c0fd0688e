"""PlanProgress: the end of a plan counts only once the path to it has been driven."""

import numpy as np
import pytest

from poam_ros.planners import PlanProgress


def test_a_single_goal_is_reached_within_the_radius():
    progress = PlanProgress(np.array([[10.0, 0.0]]), goal_radius=0.5)
    assert not progress.update([0.0, 0.0])
    assert not progress.update([9.4, 0.0])
    assert progress.update([9.6, 0.0])
    assert progress.update([0.0, 0.0])  # stays reached


def test_passing_near_the_end_early_does_not_count():
    # An out-and-back survey whose end lies on its way out.
    waypoints = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0], [10.0, 0.0]])
    progress = PlanProgress(waypoints, goal_radius=0.5)
    path = np.column_stack([np.r_[np.arange(0.0, 20.5, 0.5), np.arange(19.5, 9.5, -0.5)],
                            np.zeros(61)])
    reached = [progress.update(p) for p in path]
    first = reached.index(True)
    # Within the radius on the way back (x = 10.5), not when passing x = 10 on the way out.
    assert first > 40 and path[first, 0] == 10.5
    assert progress.travelled == pytest.approx(30.0)


def test_sparse_positions_along_the_path_suffice():
    waypoints = np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]])
    progress = PlanProgress(waypoints, goal_radius=0.5)
    assert progress.required_travel == pytest.approx(0.5 * (30.0 - 3.0))
    for position in ([0.0, 0.0], [10.0, 0.0], [10.0, 10.0]):
        assert not progress.update(position)
    assert progress.update([0.2, 10.0])


@pytest.mark.parametrize("waypoints, radius", [(np.empty((0, 2)), 1.0), (np.zeros(2), 1.0),
                                               (np.zeros((1, 2)), 0.0)])
def test_bad_arguments(waypoints, radius):
    with pytest.raises(ValueError):
        PlanProgress(waypoints, radius)


def test_a_non_finite_position_is_refused_and_changes_nothing():
    progress = PlanProgress(np.array([[10.0, 0.0]]), goal_radius=0.5)
    assert not progress.update([5.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        progress.update([np.nan, 0.0])
    assert progress.travelled == 0.0
    assert progress.update([10.0, 0.0])


def test_standing_still_at_the_end_counts_when_positions_were_lost_on_the_way():
    """A held lockstep vehicle repeats its position: the positions seen on the way (here the
    start and one near the end, the rest lost) sum too short a path, yet the end counts."""
    waypoints = np.array([[0.0, 0.0], [20.0, 0.0], [20.0, 20.0], [0.0, 20.0], [0.0, 1.0]])
    progress = PlanProgress(waypoints, goal_radius=0.5)
    assert not progress.update([0.0, 0.0])
    assert not progress.update([0.0, 1.2])  # near the end early: not reached
    assert not progress.update([0.0, 1.0])  # at the end, after a travel too short to count
    assert progress.update([0.0, 1.0])  # the same position again: it stands there


def test_standing_still_before_moving_is_no_arrival():
    """A loop that ends where it starts: the vehicle's repeated start is not its end."""
    progress = PlanProgress(np.array([[10.0, 0.0], [0.0, 0.0]]), goal_radius=0.5)
    assert not progress.update([0.0, 0.0])
    assert not progress.update([0.0, 0.0])
