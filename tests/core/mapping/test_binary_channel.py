"""A binary channel's map: the probability layer against Monte Carlo and quadrature, its
entropy, its grid scales, its scores and what the planner is given."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from poam_ros.mapping.binary import (
    BINARY_SCALES,
    ChannelSpread,
    binary_entropy,
    class_probability,
    evaluate_binary,
)
from poam_ros.mapping.channels import survey_model
from poam_ros.mapping.loop import MappingLoop, score_channels
from poam_ros.mapping.map_grid import GridScales, MapGrid, MapGridConfig, predict_map
from poam_ros.mapping.metrics import TargetBaseline
from poam_ros.mapping.survey_product import product_layers
from poam_ros.models import MappingConfig

CONFIG = MappingConfig(method="poam-mt", num_inducing=20, train_steps=1, device="cpu",
                       channel_min_samples=10, channel_likelihoods=["gaussian", "bernoulli"])


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 4.0, (160, 2))
    depth = np.sin(x[:, 0]) + x[:, 1]
    label = (depth > 2.0).astype(float)
    model = survey_model(CONFIG, ["seabed_class"])
    model.add_data(x, np.column_stack([depth, np.where(np.arange(160) % 2, label, np.nan)]))
    model.update()
    return model


@pytest.mark.parametrize("mean, std", [(0.0, 2.0), (1.3, 0.4), (-0.7, 1.5), (2.5, 3.0)])
def test_the_probability_integrates_the_latent_out(mean, std):
    rng = np.random.default_rng(1)
    draws = rng.normal(mean, std, 400_000)
    monte_carlo = ndtr(draws).mean()
    error = ndtr(draws).std() / math.sqrt(len(draws))
    assert class_probability(mean, std) == pytest.approx(monte_carlo, abs=5 * error)
    nodes, weights = np.polynomial.hermite.hermgauss(40)  # Gauss–Hermite of the same integral
    quadrature = weights @ ndtr(mean + math.sqrt(2.0) * std * nodes) / math.sqrt(math.pi)
    assert class_probability(mean, std) == pytest.approx(quadrature, abs=1e-5)
    if mean:  # not Φ(μ): the latent's spread pulls the probability towards ½
        assert abs(class_probability(mean, std) - 0.5) < abs(ndtr(mean) - 0.5)


def test_the_binary_entropy_in_nats():
    p = np.array([0.0, 0.5, 1.0, 0.1, 0.9, np.nan])
    expected = [0.0, math.log(2.0), 0.0, -(0.1 * math.log(0.1) + 0.9 * math.log(0.9))]
    np.testing.assert_allclose(binary_entropy(p)[:4], expected, rtol=1e-12, atol=1e-15)
    assert binary_entropy(p)[4] == pytest.approx(binary_entropy(p)[3], rel=1e-12)
    assert np.isnan(binary_entropy(p)[5])


def test_the_layers_of_a_binary_channel_are_its_probability_and_entropy(model):
    grid = MapGrid((0.0, 4.0, 0.0, 4.0), 1.0)
    layers = predict_map(model, grid)
    mean, std = model.predict(grid.points)
    np.testing.assert_allclose(layers.mean.ravel(), mean[:, 0], rtol=1e-12, atol=1e-12)
    probability = model.predict_response(grid.points)[:, 1]  # the model's own Φ(μ/√(1 + v))
    np.testing.assert_allclose(layers.channel_means[0].ravel(), probability, rtol=1e-9)
    np.testing.assert_allclose(layers.channel_stds[0].ravel(), binary_entropy(probability),
                               rtol=1e-9, atol=1e-12)
    assert ((layers.channel_means >= 0) & (layers.channel_means <= 1)).all()


def test_a_seabed_class_grid_shows_probability_and_entropy_on_fixed_scales():
    scales = GridScales.from_config(MapGridConfig(), ("temperature", "seabed_class"))
    assert scales.channels[1] == BINARY_SCALES == ((0.0, 1.0), (0.0, math.log(2.0)))


def test_the_planner_gets_the_class_probability(model):
    points = np.array([[1.0, 1.0], [3.0, 2.5], [30.0, 30.0]])
    spread = MappingLoop(model).uncertainty(points)
    assert isinstance(spread, ChannelSpread)
    mean, std, covariance = model.predict(points, include_noise=True, covariance=True)
    np.testing.assert_allclose(spread.covariance, covariance, rtol=1e-12)
    np.testing.assert_allclose(spread.probability[:, 1], class_probability(mean[:, 1],
                                                                          std[:, 1]))
    assert np.isnan(spread.probability[:, 0]).all()
    # far from the data the class is unknown: p → ½
    assert spread.probability[2, 1] == pytest.approx(0.5, abs=0.05)


def test_a_binary_channel_is_scored_by_its_probability():
    truth = np.array([0.05, 0.95, 0.95, 0.05])
    mean, std = np.array([-1.0, 1.0, 0.0, 0.0]), np.array([0.5, 0.5, 0.0, 2.0])
    p = ndtr(mean / np.sqrt(1.0 + std ** 2))
    metrics = evaluate_binary(truth, mean, std, np.array([0.0, 1.0, 1.0, 1.0]))
    cross = -(truth * np.log(p) + (1 - truth) * np.log(1 - p))
    base = -(truth * math.log(0.75) + (1 - truth) * math.log(0.25))
    assert metrics.nlpd == pytest.approx(cross.mean(), rel=1e-12)
    assert metrics.msll == pytest.approx((cross - base).mean(), rel=1e-12)
    assert metrics.rmse == pytest.approx(math.sqrt(np.mean((truth - p) ** 2)), rel=1e-12)
    assert metrics.smse == pytest.approx(np.mean((truth - p) ** 2) / truth.var(), rel=1e-12)
    first, per_channel = score_channels(
        ("depth", "seabed_class"), np.column_stack([truth * 10, truth]),
        np.column_stack([truth * 10, mean]), np.column_stack([np.ones(4), std]),
        [TargetBaseline(5.0, 2.0), TargetBaseline(0.75, 0.4)], (False, True))
    assert per_channel["nlpd_seabed_class"] == pytest.approx(metrics.nlpd, rel=1e-12)
    assert first["rmse"] == 0.0
    with pytest.raises(ValueError, match="one class"):
        evaluate_binary(truth, mean, std, np.ones(4))


def test_the_survey_product_carries_the_class_probability(model):
    grid = MapGrid((0.0, 4.0, 0.0, 4.0), 1.0)
    product = product_layers(model, grid, channels=["seabed_class"])
    layers = predict_map(model, grid)
    np.testing.assert_array_equal(product["mean_seabed_class"], layers.channel_means[0])
    np.testing.assert_array_equal(product["std_seabed_class"], layers.channel_stds[0])
    assert 0.0 <= product["mean_seabed_class"].min() <= product["mean_seabed_class"].max() <= 1
    assert set(product) == {"mean", "std", "lengthscale", "sample_density",
                            "mean_seabed_class", "std_seabed_class"}
