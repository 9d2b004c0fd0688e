from pathlib import Path

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.planners import (
    PilotSurveyConfig,
    bernstein_basis,
    bezier_curve,
    pilot_control_points,
    pilot_survey,
)
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.workspace import Extent, Workspace

EXTENT = Extent(-10.0, 10.0, -20.0, 20.0)
CONFIG = Path(__file__).resolve().parents[3] / "config"


def test_bernstein_weights_sum_to_one_and_match_closed_form():
    t = np.linspace(0.0, 1.0, 11)
    basis = bernstein_basis(14, t)
    assert basis.shape == (11, 15)
    np.testing.assert_allclose(basis.sum(axis=1), 1.0)
    # Degree 2 by hand: (1 - t)^2, 2 t (1 - t), t^2.
    np.testing.assert_allclose(bernstein_basis(2, np.array([0.25])),
                               [[0.5625, 0.375, 0.0625]])


def test_degree_one_curve_is_the_straight_line():
    curve = bezier_curve(np.array([[0.0, 1.0], [4.0, 3.0]]), 5)
    np.testing.assert_allclose(curve, [[0, 1], [1, 1.5], [2, 2], [3, 2.5], [4, 3]])


def test_control_points_follow_the_paper():
    points = pilot_control_points(Extent(0.0, 4.0, 0.0, 8.0))
    assert points.shape == (15, 2)
    np.testing.assert_allclose(points[[0, 1, 3, 5, 7, 9, 11, 13, 14]],
                               [[4, 0], [0, 0], [0, 4], [0, 8], [2, 8], [4, 8], [4, 4],
                                [2, 2], [2, 4]])


def test_bezier_survey_starts_lower_right_and_ends_at_the_centre():
    workspace = Workspace.from_extent(*EXTENT)
    waypoints = pilot_survey(workspace, np.random.default_rng(0))
    assert waypoints.shape == (50, 2)
    np.testing.assert_allclose(waypoints[0], [EXTENT.xmax, EXTENT.ymin])
    np.testing.assert_allclose(waypoints[-1], [0.0, 0.0])  # (xhalf, yhalf)
    assert workspace.contains(waypoints).all()
    # The curve moves forward: no two consecutive waypoints coincide.
    assert (np.linalg.norm(np.diff(waypoints, axis=0), axis=1) > 0.0).all()


def test_bezier_survey_projects_outside_waypoints_into_an_l_shape():
    # An L: the 10 m square minus its upper-right 5 m quarter, which the curve crosses.
    l_shape = Workspace(np.array([[0, 0], [10, 0], [10, 5], [5, 5], [5, 10], [0, 10]]))
    curve = bezier_curve(pilot_control_points(l_shape.bounds), 30)
    waypoints = pilot_survey(l_shape, np.random.default_rng(0),
                             PilotSurveyConfig(num_waypoints=30))
    assert waypoints.shape == (30, 2)
    assert l_shape.contains(waypoints).all()
    moved = ~l_shape.contains(curve)
    assert moved.any()
    np.testing.assert_array_equal(waypoints[~moved], curve[~moved])
    # A point inside the missing quarter goes to the nearest edge of the L.
    in_notch = curve[moved]
    expected_distance = np.minimum(in_notch[:, 0] - 5.0, in_notch[:, 1] - 5.0)
    np.testing.assert_allclose(np.linalg.norm(waypoints[moved] - in_notch, axis=1),
                               expected_distance)


def test_random_survey_is_inside_and_seeded():
    workspace = Workspace.from_vertices([0, 0, 10, 0, 10, 10, 0, 10], [[4, 4, 6, 4, 6, 6, 4, 6]])
    config = PilotSurveyConfig(num_waypoints=20, kind="random")
    waypoints = pilot_survey(workspace, np.random.default_rng(3), config)
    assert waypoints.shape == (20, 2)
    assert workspace.contains(waypoints).all()
    np.testing.assert_array_equal(waypoints,
                                  pilot_survey(workspace, np.random.default_rng(3), config))


@pytest.mark.parametrize("fields", [{"num_waypoints": 1}, {"kind": "spiral"}])
def test_invalid_pilot_config_raises(fields):
    with pytest.raises(ConfigError):
        PilotSurveyConfig(**fields)


@pytest.mark.parametrize("name", ["poam_ros.yaml", "topobathy.yaml", "authors_robot.yaml",
                                  "two_channels.yaml"])
def test_the_shipped_pilot_surveys_span_over_half_the_workspace(name):
    """So that ``mapping.input_scaling: auto`` keeps their samples' range, as the paper's
    scaling does: the figures measured with these setups stand."""
    setup = MissionSetup.from_file(CONFIG / name)
    workspace = Workspace.from_config(setup.workspace)
    waypoints = pilot_survey(workspace, np.random.default_rng(0), setup.pilot)
    xmin, xmax, ymin, ymax = workspace.bounds
    span = np.ptp(waypoints, axis=0) / np.array([xmax - xmin, ymax - ymin])
    assert (span > 0.5).all(), span
