"""The planner's score of a binary channel: the Bernoulli entropy of its predictive
probability, beside the Gaussian channels' entropies, against closed forms."""

import math

import numpy as np
import pytest

from poam_ros.mapping.binary import ChannelSpread
from poam_ros.planners.acquisition import predictive_entropy

HALF_LOG_2PIE = 0.5 * math.log(2 * math.pi * math.e)


def spread(depth_std, class_probability, latent_std=2.0, correlation=0.3):
    """A ChannelSpread of depth and a binary channel at N candidates."""
    n = len(depth_std)
    cov = np.empty((n, 2, 2))
    cov[:, 0, 0], cov[:, 1, 1] = depth_std ** 2, latent_std ** 2
    cov[:, 0, 1] = cov[:, 1, 0] = correlation * depth_std * latent_std
    probability = np.column_stack([np.full(n, np.nan), class_probability])
    return ChannelSpread(cov, probability)


def bernoulli(p):
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


@pytest.fixture
def candidates():
    rng = np.random.default_rng(5)
    return rng.uniform(0.1, 3.0, 40), rng.uniform(0.01, 0.99, 40)


def test_weighted_adds_the_weighted_bernoulli_entropy(candidates):
    std, p = candidates
    entropy = predictive_entropy(spread(std, p), 40, "weighted", [1.0, 3.0])
    np.testing.assert_allclose(entropy, HALF_LOG_2PIE + np.log(std) + 3.0 * bernoulli(p),
                               rtol=1e-12)


def test_joint_adds_the_bernoulli_entropy_to_the_gaussian_channels(candidates):
    std, p = candidates
    # the latent's variance and its correlation with the depth do not count
    for latent, correlation in ((2.0, 0.3), (0.1, 0.9)):
        entropy = predictive_entropy(spread(std, p, latent, correlation), 40, "joint")
        np.testing.assert_allclose(entropy, HALF_LOG_2PIE + np.log(std) + bernoulli(p),
                                   rtol=1e-12)


def test_the_class_entropy_peaks_where_the_class_is_unknown():
    std = np.ones(3)
    entropy = predictive_entropy(spread(std, np.array([0.5, 0.9, 0.999])), 3, "weighted")
    assert entropy[0] == pytest.approx(HALF_LOG_2PIE + math.log(2.0))
    assert entropy[0] > entropy[1] > entropy[2]
    # the depth alone ignores the class
    np.testing.assert_allclose(predictive_entropy(spread(std, np.array([0.5, 0.9, 0.999])),
                                                  3, "depth"), HALF_LOG_2PIE)


def test_a_binary_channel_not_in_the_model_is_left_out(candidates):
    std, _ = candidates
    unknown = spread(std, np.full(40, np.nan))
    unknown.covariance[:, 1, :] = unknown.covariance[:, :, 1] = np.nan
    for acquisition in ("weighted", "joint"):
        np.testing.assert_allclose(predictive_entropy(unknown, 40, acquisition),
                                   HALF_LOG_2PIE + np.log(std), rtol=1e-12)
