"""The mapper node with a channel besides the depth, over real DDS: per-channel map layers and
grids, per-channel diagnostics, the covariance answer to uncertainty queries, the evaluation,
the crash journal."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_mapper_node import (  # noqa: E402
    MAPPING,
    SMALL,
    STATUS,
    TIMEOUT,
    mapping_parameters,
)

from poam_ros import messages as msg  # noqa: E402
from poam_ros.mapping.channels import survey_model  # noqa: E402
from poam_ros.mapping.journal import Journal  # noqa: E402
from poam_ros.mapping.map_grid import GridScales, MapGrid, MapGridConfig  # noqa: E402
from poam_ros.mapping.metrics import evaluation_points  # noqa: E402
from poam_ros.params import ConfigError  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.workspace import Workspace, WorkspaceConfig  # noqa: E402

CHANNELS = ["temperature"]
TEMPERATURE_SCALES = GridScales.from_config(MapGridConfig(), ("temperature",)).channels[0]
MULTI = MAPPING.replace(method="poam-mt", num_latents=2, channel_min_samples=10)


def channel_batch(seed: int = 0, n: int = 80):
    """Depth at every sample, the temperature (correlated with it) at every fourth."""
    xy = np.random.default_rng(seed).uniform(0.0, 20.0, (n, 2))
    depth = np.sin(xy[:, 0] / 3.0) + xy[:, 1] / 10.0
    temperature = np.full(n, np.nan)
    temperature[::4] = 4.0 + 0.5 * depth[::4] + np.cos(xy[::4, 1] / 4.0)
    return xy, np.column_stack([depth, temperature])


def offline_model(xy, y):
    model = survey_model(MULTI, CHANNELS)
    model.add_data(xy, y)
    model.update()
    return model


@pytest.fixture
def mapper_and_probe(start_node, make_node, spin_until):
    parameters = {**SMALL, **mapping_parameters(MULTI),
                  "channels": CHANNELS, "evaluation_grid": 5}
    mapper = start_node(MapperNode, **parameters)
    probe = Probe(make_node("probe"))
    grids = {name: [] for name in ("temperature/mean", "temperature/std")}
    for name, received in grids.items():
        probe.node.create_subscription(OccupancyGrid, f"map/{name}", received.append,
                                       qos.LATCHED)
    evaluations = []
    probe.node.create_subscription(PointCloud2, "map/evaluation", evaluations.append,
                                   qos.LATCHED)
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0
                      and probe.query_pub.get_subscription_count() > 0, mapper, probe.node)
    return mapper, probe, grids, evaluations


def send(probe, xy, y, stamp_ns=0):
    header = Header(frame_id="map", stamp=cv.nanoseconds_to_time(stamp_ns))
    probe.samples_pub.publish(cv.points_to_cloud(header, np.column_stack(
        [xy, y[:, 0], y[:, 1:]]), float64=True, channels=CHANNELS))


def test_a_channel_batch_gives_per_channel_layers_grids_and_diagnostics(mapper_and_probe,
                                                                        spin_until):
    mapper, probe, grids, evaluations = mapper_and_probe
    xy, y = channel_batch()
    send(probe, xy, y, stamp_ns=3_000_000_000)
    assert spin_until(lambda: probe.maps and all(grids.values()) and evaluations
                      and STATUS in probe.diagnostics
                      and probe.last_status(STATUS)[2].updates == 1,
                      mapper, probe.node, timeout=TIMEOUT)

    cloud = probe.maps[-1]
    assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean", "std", "lengthscale",
                                              "mean_temperature", "std_temperature"]
    arrays = msg.cloud_to_arrays(cloud)
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    model = offline_model(xy, y)
    mean, std = model.predict(grid.points)
    for column, name in enumerate(("", "_temperature")):
        np.testing.assert_allclose(arrays[f"mean{name}"], mean[:, column], rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(arrays[f"std{name}"], std[:, column], rtol=1e-5)
    for received in grids.values():
        assert (received[-1].info.width, received[-1].info.height) == (10, 10)
    # each grid is its layer on the channel's fixed scale, up to the grid's 1 % steps
    for layer, span in zip(("mean", "std"), TEMPERATURE_SCALES):
        values = arrays[f"{layer}_temperature"]
        np.testing.assert_allclose(msg.grid_to_array(grids[f"temperature/{layer}"][-1],
                                                     span).ravel(), values,
                                   atol=0.006 * (span[1] - span[0]))

    values = probe.last_status(STATUS)[2]
    assert values.channels == ("depth", "temperature")
    assert (values.figures["num_latents"], values.figures["active_channels"]) == (2, 2)
    assert values.inducing_points == model.inducing.shape[0]
    for name in ("noise_std_0", "noise_std_1", "correlation_0_1"):
        assert np.isfinite(values.figures[name])
    measured = y[:, 1][np.isfinite(y[:, 1])]
    assert values.channel_target_means["temperature"] == measured.mean()
    assert values.target_mean == y[:, 0].mean()

    points, means, stds = msg.cloud_to_evaluation(evaluations[-1], CHANNELS)
    workspace = Workspace.from_config(WorkspaceConfig(vertices=SMALL["workspace.vertices"]))
    np.testing.assert_array_equal(points, evaluation_points(workspace, 5))
    expected = model.predict(points, include_noise=True)
    np.testing.assert_allclose(means, expected[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stds, expected[1], rtol=1e-9)


def test_queries_get_the_channels_predictive_covariance(mapper_and_probe, spin_until):
    mapper, probe, _, _ = mapper_and_probe
    xy, y = channel_batch(1)
    send(probe, xy, y)
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    points = np.array([[1.0, 2.0], [10.0 / 3.0, 19.5], [15.0, 7.0]])
    probe.send_query(points, stamp_ns=9)
    assert spin_until(lambda: probe.response_to(9) is not None, mapper, probe.node)
    answered, cov = probe.response_to(9)
    np.testing.assert_array_equal(answered, points)
    expected = offline_model(xy, y).predict(points, include_noise=True, covariance=True)[2]
    assert cov.shape == (3, 2, 2)
    np.testing.assert_allclose(cov, expected, rtol=1e-9, atol=1e-12)


def test_a_single_channel_method_with_channels_stops_the_start(start_node):
    with pytest.raises(ConfigError, match="maps one channel"):
        start_node(MapperNode, **SMALL, channels=CHANNELS)


def test_a_journal_with_channels_restores_every_channel(start_node, make_node, spin_until,
                                                        tmp_path):
    """What a mapper with channels that did not shut down in order left in its journal is
    replayed, temperatures included, before the first map."""
    xy, y = channel_batch(2)
    journal = Journal(tmp_path / "journal", targets=2)
    journal.start_new()
    journal.append(xy, y, stamp=4_000_000_000)
    journal.close()
    parameters = {**SMALL, **mapping_parameters(MULTI),
                  "channels": CHANNELS, "journal.enabled": True,
                  "journal.path": str(tmp_path / "journal"),
                  "save_path": str(tmp_path / "map_state.pt")}
    mapper = start_node(MapperNode, **parameters)
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.maps and STATUS in probe.diagnostics, mapper, probe.node,
                      timeout=TIMEOUT)
    arrays = msg.cloud_to_arrays(probe.maps[-1])
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    np.testing.assert_allclose(arrays["mean_temperature"],
                               offline_model(xy, y).predict(grid.points)[0][:, 1], rtol=1e-5,
                               atol=1e-5)
    assert probe.last_status(STATUS)[2].samples == len(xy)
