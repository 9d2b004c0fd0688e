import math

import numpy as np
import pytest

from poam_ros.mapping.metrics import (
    MapMetrics,
    TargetBaseline,
    evaluate_map,
    evaluation_grid,
    evaluation_points,
)
from poam_ros.workspace import Workspace, WorkspaceConfig

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def test_perfect_prediction_has_zero_errors():
    truth = np.array([1.0, 2.0, 4.0])
    metrics = evaluate_map(truth, truth, np.ones(3), np.array([0.0, 2.0]))
    assert metrics.smse == 0.0 and metrics.rmse == 0.0 and metrics.mae == 0.0
    assert metrics.nlpd == pytest.approx(HALF_LOG_2PI)


def test_hand_computed_values():
    truth = np.array([1.0, 3.0])         # variance 1
    mean = np.array([2.0, 2.0])          # errors -1, +1
    std = np.array([1.0, 2.0])
    train = np.array([0.0, 4.0])         # baseline mean 2, population std 2
    metrics = evaluate_map(truth, mean, std, train)
    nll = [HALF_LOG_2PI + 0.5, HALF_LOG_2PI + math.log(2.0) + 0.125]
    baseline = HALF_LOG_2PI + math.log(2.0) + 0.125  # both truths are 1 from the mean 2
    expected = MapMetrics(smse=1.0, msll=np.mean(nll) - baseline, nlpd=np.mean(nll),
                          rmse=1.0, mae=1.0)
    assert metrics.as_dict() == pytest.approx(expected.as_dict())


def test_prediction_equal_to_the_baseline_has_zero_msll():
    train = np.array([1.0, 2.0, 6.0])
    truth = np.array([0.0, 3.0, 5.0, 7.0])
    constant = np.full(4, train.mean())
    metrics = evaluate_map(truth, constant, np.full(4, train.std()), train)
    assert metrics.msll == pytest.approx(0.0, abs=1e-12)


def test_as_dict_has_the_five_names():
    metrics = evaluate_map(np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.ones(2),
                           np.array([0.0, 1.0]))
    assert list(metrics.as_dict()) == ["smse", "msll", "nlpd", "rmse", "mae"]


@pytest.mark.parametrize("truth, mean, std, train, message", [
    ([0.0, 1.0], [0.0], [1.0, 1.0], [0.0, 1.0], "one shape"),
    ([[0.0, 1.0]], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0], "1-D"),
    ([0.0, np.nan], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0], "truth has 1 non-finite"),
    ([0.0, 1.0], [0.0, np.inf], [1.0, 1.0], [0.0, 1.0], "mean has 1 non-finite"),
    ([0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], "std must be positive"),
    ([0.0, 1.0], [0.0, 1.0], [1.0, -1.0], [0.0, 1.0], "std must be positive"),
    ([0.0, 1.0], [0.0, 1.0], [1.0, 1.0], [], "train_targets must be a non-empty"),
    ([0.0, 1.0], [0.0, 1.0], [1.0, 1.0], [3.0, 3.0], "all equal"),
    ([2.0, 2.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0], "constant"),
])
def test_invalid_inputs_raise(truth, mean, std, train, message):
    with pytest.raises(ValueError, match=message):
        evaluate_map(*(np.array(v) for v in (truth, mean, std, train)))


def test_a_reported_baseline_is_held_to_the_same_rules_as_the_targets():
    """A mapper's reported baseline (what poam-ros sim's monitor scores with) scores as
    the targets it stands for, and constant targets are refused either way."""
    truth, mean, std = np.array([1.0, 3.0]), np.array([1.5, 2.0]), np.array([0.5, 2.0])
    train = np.array([0.0, 4.0, 1.0])
    assert evaluate_map(truth, mean, std, TargetBaseline.of(train)) == \
        evaluate_map(truth, mean, std, train)
    with pytest.raises(ValueError, match="all equal"):
        evaluate_map(truth, mean, std, TargetBaseline(3.0, 0.0))  # as a mapper reports


def test_evaluation_grid_is_inclusive_with_x_fastest():
    grid = evaluation_grid((0.0, 2.0, 10.0, 11.0), nx=3, ny=2)
    np.testing.assert_array_equal(grid, [[0, 10], [1, 10], [2, 10], [0, 11], [1, 11], [2, 11]])
    assert evaluation_grid((-1.0, 1.0, -1.0, 1.0)).shape == (2500, 2)
    image = grid[:, 0].reshape(2, 3)
    np.testing.assert_array_equal(image[0], [0, 1, 2])


@pytest.mark.parametrize("extent, nx, message", [
    ((1.0, 0.0, 0.0, 1.0), 5, "xmin < xmax"), ((0.0, 1.0, 0.0, 1.0), 1, "at least 2")])
def test_invalid_grid_raises(extent, nx, message):
    with pytest.raises(ValueError, match=message):
        evaluation_grid(extent, nx=nx)


def test_evaluation_points_leave_out_what_lies_outside_the_workspace():
    # An L-shaped workspace: the grid's upper-right quarter is outside.
    workspace = Workspace.from_config(WorkspaceConfig(
        vertices=[0.0, 0.0, 4.0, 0.0, 4.0, 2.0, 2.0, 2.0, 2.0, 4.0, 0.0, 4.0]))
    points = evaluation_points(workspace, 5)
    grid = evaluation_grid((0.0, 4.0, 0.0, 4.0), 5, 5)
    np.testing.assert_array_equal(points, grid[workspace.contains(grid)])
    assert len(points) < 25 and not ((points[:, 0] > 2.0) & (points[:, 1] > 2.0)).any()
