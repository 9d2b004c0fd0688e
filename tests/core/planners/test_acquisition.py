"""The planner's entropy over channels against closed forms worked out by hand."""

import math

import numpy as np
import pytest

from poam_ros.mission import Mission
from poam_ros.planners import MaxEntropyConfig, MaxEntropyPlanner
from poam_ros.planners.acquisition import predictive_entropy
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.workspace import Workspace, WorkspaceConfig

LOG_2PIE = math.log(2 * math.pi * math.e)


def covariances(std, correlation=0.0):
    """(N, 2, 2) covariances of channels with stds (N, 2) and one correlation."""
    std = np.asarray(std, dtype=float)
    cov = np.einsum("nd,ne->nde", std, std)
    cov[:, 0, 1] *= correlation
    cov[:, 1, 0] *= correlation
    return cov


@pytest.fixture
def stds():
    return np.random.default_rng(3).uniform(0.1, 3.0, size=(50, 2))


def test_one_channel_is_the_paper_entropy(stds):
    std = stds[:, 0]
    np.testing.assert_array_equal(predictive_entropy(std, 50),
                                  0.5 * math.log(2 * math.pi * math.e) + np.log(std))


def test_weighted_with_depth_weight_alone_is_the_depth_score(stds):
    cov = covariances(stds, 0.4)
    depth = predictive_entropy(cov, 50, "depth")
    np.testing.assert_allclose(predictive_entropy(cov, 50, "weighted", [1.0, 0.0]), depth,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(depth, 0.5 * LOG_2PIE + np.log(stds[:, 0]), rtol=1e-13)


def test_weighted_sums_the_channel_entropies(stds):
    expected = 2.0 * (0.5 * LOG_2PIE + np.log(stds[:, 0])) + 0.5 * (
        0.5 * LOG_2PIE + np.log(stds[:, 1]))
    np.testing.assert_allclose(predictive_entropy(covariances(stds, 0.9), 50, "weighted",
                                                  [2.0, 0.5]), expected, rtol=1e-12)


def test_joint_of_independent_channels_is_the_sum_of_their_entropies(stds):
    per_channel = (0.5 * LOG_2PIE + np.log(stds)).sum(axis=1)
    np.testing.assert_allclose(predictive_entropy(covariances(stds), 50, "joint"), per_channel,
                               rtol=1e-12)


def test_joint_counts_a_correlation_once(stds):
    """½ log det(2πe Σ) = Σ_d ½ log(2πe σ_d²) + ½ log(1 − ρ²) for two channels."""
    independent = (0.5 * LOG_2PIE + np.log(stds)).sum(axis=1)
    np.testing.assert_allclose(predictive_entropy(covariances(stds, 0.8), 50, "joint"),
                               independent + 0.5 * math.log(1 - 0.8 ** 2), rtol=1e-12)


@pytest.mark.parametrize("acquisition", ["weighted", "joint"])
def test_a_channel_not_in_the_model_is_left_out(stds, acquisition):
    cov = covariances(stds, 0.5)
    cov[:, 1, :] = cov[:, :, 1] = np.nan
    np.testing.assert_allclose(predictive_entropy(cov, 50, acquisition),
                               0.5 * LOG_2PIE + np.log(stds[:, 0]), rtol=1e-12)


def test_bad_spreads_and_weights_are_refused(stds):
    cov = covariances(stds)
    with pytest.raises(ValueError, match="one weight per channel"):
        predictive_entropy(cov, 50, "weighted", [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"shape \(50,\) or \(50, D, D\)"):
        predictive_entropy(stds, 50, "joint")
    cov[3, 1, 1] = -1.0
    with pytest.raises(ValueError, match="non-positive values for channel 1"):
        predictive_entropy(cov, 50, "weighted")
    cov[3, 1, 1], cov[3, 0, 1], cov[3, 1, 0] = 1.0, 10.0, 10.0  # |ρ| > 1
    with pytest.raises(ValueError, match="not positive definite"):
        predictive_entropy(cov, 50, "joint")
    with pytest.raises(ValueError, match="channel_weights"):
        MaxEntropyConfig(channel_weights=[0.0, 0.0])


def test_the_planner_goes_where_the_configured_entropy_is_highest():
    """Channel 0 is uncertain in the west, channel 1 in the east: depth (or a weight on
    channel 0) plans west, a weight on channel 1 east."""
    workspace = Workspace.from_config(WorkspaceConfig())

    def spread(points):
        west = points[:, 0] < 0
        std = np.column_stack([np.where(west, 2.0, 1.0), np.where(west, 1.0, 3.0)])
        return covariances(std)

    def goal(**settings):
        planner = MaxEntropyPlanner(workspace, np.random.default_rng(0),
                                    MaxEntropyConfig(distance_weight=0.0, **settings))
        return planner.plan(np.zeros(2), spread)[0]

    assert goal()[0] < 0
    assert goal(acquisition="weighted", channel_weights=[1.0, 0.0])[0] < 0
    assert goal(acquisition="weighted", channel_weights=[0.0, 1.0])[0] > 0
    assert goal(acquisition="joint")[0] > 0  # 3 · 1 > 2 · 1


def test_a_mission_weighted_on_the_depth_alone_flies_the_depth_acquisition():
    """The ROS-free mission hands its planner the channels' covariance: weights (1, 0) make
    exactly the decisions of the depth channel's entropy, (0, 1) others."""
    def run(**acquisition):
        setup = MissionSetup()
        setup.mission = setup.mission.replace(eval_grid=8, seed=1)
        setup.mission_control = setup.mission_control.replace(max_samples=800)
        setup.mapping = setup.mapping.replace(method="poam-mt", num_inducing=20, train_steps=1,
                                              device="cpu")
        setup.temperature = setup.temperature.replace(enabled=True)
        setup.ingest = setup.ingest.replace(channels=["temperature"], channel_rates=[0.5])
        setup.max_entropy = setup.max_entropy.replace(**acquisition)
        result = Mission(setup).run()
        assert len(result.records) >= 3  # the pilot survey and planned legs
        return result.path  # (P, 3) x, y, yaw of every control step

    depth = run()
    np.testing.assert_array_equal(run(acquisition="weighted", channel_weights=[1.0, 0.0]),
                                  depth)
    assert not np.array_equal(run(acquisition="weighted", channel_weights=[0.0, 1.0]), depth)
