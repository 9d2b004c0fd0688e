"""A survey with a channel besides the depth: its model, its map layers, what the planner is
given and the per-channel scores."""

import math

import numpy as np
import pytest

from poam_ros.mapping.channels import channel_names, survey_model
from poam_ros.mapping.loop import MappingLoop, score_channels
from poam_ros.mapping.map_grid import MapGrid, predict_map
from poam_ros.mapping.metrics import TargetBaseline, evaluate_map
from poam_ros.models import MappingConfig
from poam_ros.params import ConfigError
from poam_ros.setup.mission_setup import MissionSetup

CONFIG = MappingConfig(method="poam-mt", num_inducing=20, train_steps=1, device="cpu",
                       channel_min_samples=10)


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 4.0, (120, 2))
    depth = np.sin(x[:, 0]) + x[:, 1]
    temperature = np.where(np.arange(120) % 3 == 0, 2.0 + 0.5 * depth, np.nan)
    model = survey_model(CONFIG, ["temperature"])
    model.add_data(x, np.column_stack([depth, temperature]))
    model.update()
    return model


def test_channels_need_a_multi_channel_method():
    assert channel_names(["temperature"]) == ("depth", "temperature")
    assert survey_model(CONFIG.replace(method="poam")).method == "poam"
    with pytest.raises(ConfigError, match="maps one channel"):
        survey_model(CONFIG.replace(method="poam"), ["temperature"])


def test_the_map_has_a_layer_pair_per_channel(model):
    grid = MapGrid((0.0, 4.0, 0.0, 4.0), 1.0)
    layers = predict_map(model, grid)
    mean, std = model.predict(grid.points)
    np.testing.assert_allclose(layers.mean.ravel(), mean[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(layers.std.ravel(), std[:, 0], rtol=1e-12)
    assert layers.channel_means.shape == layers.channel_stds.shape == (1, 4, 4)
    np.testing.assert_allclose(layers.channel_means[0].ravel(), mean[:, 1], rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(layers.channel_stds[0].ravel(), std[:, 1], rtol=1e-12)
    np.testing.assert_allclose(layers.inducing_mean, model.predict(model.inducing_inputs)[0][
        :, 0], rtol=1e-12, atol=1e-12)


def test_the_planner_is_given_the_channels_covariance_of_a_measurement(model):
    points = np.array([[0.5, 0.5], [3.0, 1.0]])
    cov = MappingLoop(model).uncertainty(points)
    assert cov.shape == (2, 2, 2)
    std = model.predict(points, include_noise=True)[1]
    np.testing.assert_allclose(np.sqrt(np.diagonal(cov, axis1=1, axis2=2)), std, rtol=1e-12)
    np.testing.assert_allclose(cov, np.transpose(cov, (0, 2, 1)))


def test_channels_are_scored_one_by_one_against_their_truths():
    rng = np.random.default_rng(1)
    truth, mean = rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    std = rng.uniform(0.5, 1.5, (30, 2))
    targets = [rng.normal(size=20), None]  # the second channel not measured yet
    first, per_channel = score_channels(("depth", "temperature"), truth, mean, std, targets)
    expected = evaluate_map(truth[:, 0], mean[:, 0], std[:, 0], targets[0]).as_dict()
    assert first == expected
    assert {k: per_channel[f"{k}_depth"] for k in expected} == expected
    assert all(math.isnan(per_channel[f"{k}_temperature"]) for k in expected)
    baseline = TargetBaseline.of(targets[0])  # what a mapper reports: the same scores
    assert score_channels(("depth",), truth, mean, std, [baseline])[0] == expected


def test_the_mapper_is_given_the_ingest_s_channels():
    setup = MissionSetup()
    assert "channels" not in setup.node_parameters("mapper")  # depth only: left out
    setup.ingest = setup.ingest.replace(channels=["temperature"])
    assert setup.node_parameters("mapper")["channels"] == ["temperature"]
