"""The mapper node with a binary channel (a seabed class, ``channel_likelihoods`` bernoulli)
over real DDS: its layers and grids are the class probability and its entropy on fixed
scales, a query's answer carries the probability (the class beside the depth in one model,
``poam-mt``, or mapped by the dual GP's probit model beside the depth's dual GP,
``dual-gp-independent``), and a journal restores the channel."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_mapper_node import MAPPING, SMALL, STATUS, TIMEOUT, mapping_parameters  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.mapping.binary import binary_entropy, class_probability  # noqa: E402
from poam_ros.mapping.channels import survey_model  # noqa: E402
from poam_ros.mapping.journal import Journal  # noqa: E402
from poam_ros.mapping.map_grid import MapGrid  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402

CHANNELS = ["seabed_class"]
BINARY = MAPPING.replace(method="poam-mt", channel_min_samples=10,
                         channel_likelihoods=["gaussian", "bernoulli"])


def class_batch(seed: int = 0, n: int = 80):
    """Depth at every sample, the class (hard where the depth is high) at every other."""
    xy = np.random.default_rng(seed).uniform(0.0, 20.0, (n, 2))
    depth = np.sin(xy[:, 0] / 3.0) + xy[:, 1] / 10.0
    label = np.full(n, np.nan)
    label[::2] = (depth[::2] > 1.0).astype(float)
    return xy, np.column_stack([depth, label])


def offline_model(xy, y, method: str = "poam-mt"):
    model = survey_model(BINARY.replace(method=method), CHANNELS)
    model.add_data(xy, y)
    model.update()
    return model


def parameters(method: str = "poam-mt", **more):
    return {**SMALL, **mapping_parameters(BINARY.replace(method=method)), "channels": CHANNELS,
            **more}


@pytest.mark.parametrize("method", ["poam-mt", "dual-gp-independent"])
def test_the_class_layers_are_probability_and_entropy(start_node, make_node, spin_until,
                                                       method):
    mapper = start_node(MapperNode, **parameters(method))
    probe = Probe(make_node("probe"))
    grids = {layer: [] for layer in ("mean", "std")}
    for layer, received in grids.items():
        probe.node.create_subscription(OccupancyGrid, f"map/seabed_class/{layer}",
                                       received.append, qos.LATCHED)
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0
                      and probe.query_pub.get_subscription_count() > 0, mapper, probe.node)
    xy, y = class_batch()
    header = Header(frame_id="map", stamp=cv.nanoseconds_to_time(3_000_000_000))
    probe.samples_pub.publish(cv.points_to_cloud(header, np.column_stack(
        [xy, y[:, 0], y[:, 1:]]), float64=True, channels=CHANNELS))
    assert spin_until(lambda: probe.maps and all(grids.values()), mapper, probe.node,
                      timeout=TIMEOUT)

    arrays = msg.cloud_to_arrays(probe.maps[-1])
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    model = offline_model(xy, y, method)
    mean, std = model.predict(grid.points)
    probability = class_probability(mean[:, 1], std[:, 1])
    np.testing.assert_allclose(arrays["mean_seabed_class"], probability, atol=1e-5)
    np.testing.assert_allclose(arrays["std_seabed_class"], binary_entropy(probability),
                               atol=1e-5)
    # the grids: probability on 0 .. 1, entropy on 0 .. ln 2, up to their 1 % steps
    for layer, span in (("mean", (0.0, 1.0)), ("std", (0.0, math.log(2.0)))):
        np.testing.assert_allclose(msg.grid_to_array(grids[layer][-1], span).ravel(),
                                   arrays[f"{layer}_seabed_class"], atol=0.006 * span[1])

    points = np.array([[1.0, 2.0], [15.0, 7.0], [10.0, 18.0]])
    probe.send_query(points, stamp_ns=9)
    assert spin_until(lambda: probe.response_to(9) is not None, mapper, probe.node)
    [response] = [m for m in probe.responses if msg.time_to_nanoseconds(m.header.stamp) == 9]
    answered = msg.cloud_to_probability(response, 2)
    mean, std = model.predict(points, include_noise=True)
    np.testing.assert_allclose(answered[:, 1], class_probability(mean[:, 1], std[:, 1]),
                               rtol=1e-9)
    assert np.isnan(answered[:, 0]).all()


def test_a_journal_restores_the_class_channel(start_node, make_node, spin_until, tmp_path):
    """What a mapper with a binary channel that did not shut down in order left in its
    journal is replayed, labels included, before the first map."""
    xy, y = class_batch(2)
    journal = Journal(tmp_path / "journal", targets=2)
    journal.start_new()
    journal.append(xy, y, stamp=4_000_000_000)
    journal.close()
    mapper = start_node(MapperNode, **parameters(**{
        "journal.enabled": True, "journal.path": str(tmp_path / "journal"),
        "save_path": str(tmp_path / "map_state.pt")}))
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.maps and STATUS in probe.diagnostics, mapper, probe.node,
                      timeout=TIMEOUT)
    arrays = msg.cloud_to_arrays(probe.maps[-1])
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    mean, std = offline_model(xy, y).predict(grid.points)
    np.testing.assert_allclose(arrays["mean_seabed_class"],
                               class_probability(mean[:, 1], std[:, 1]), atol=1e-5)
    assert probe.last_status(STATUS)[2].samples == len(xy)
