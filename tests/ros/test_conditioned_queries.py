"""Uncertainty queries that carry a fleet's planned samples: the message, and the mapper's
answer conditioned on them over real DDS."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.mapping.loop import MappingLoop  # noqa: E402
from poam_ros.models import MappingConfig, make_model  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402

MAPPING = MappingConfig(num_inducing=30, train_steps=2, batch_size=64, device="cpu")
CANDIDATES = np.array([[1.0, 2.0], [10.0 / 3.0, 19.5], [12.0, 12.0]])
PLANNED = np.array([[11.0, 12.0], [12.0, 13.0], [13.0, 12.5]])
TIMEOUT = 30.0  # s; generous, the machine is shared


def test_planned_points_travel_marked_beside_the_candidates():
    header = Header(frame_id="map")
    query = cv.query_to_cloud(header, CANDIDATES, PLANNED)
    assert [f.name for f in query.fields] == ["x", "y", msg.PLANNED]
    candidates, planned = msg.cloud_to_query_sets(query)
    np.testing.assert_array_equal(candidates, CANDIDATES)
    np.testing.assert_array_equal(planned, PLANNED)
    np.testing.assert_array_equal(msg.cloud_to_query(query), CANDIDATES)
    plain = cv.query_to_cloud(header, CANDIDATES, np.empty((0, 2)))  # as before: no field
    assert [f.name for f in plain.fields] == ["x", "y"]
    assert msg.cloud_to_query_sets(plain)[1].shape == (0, 2)


def test_the_mapper_answers_with_the_std_given_the_planned_samples(start_node, make_node,
                                                                    spin_until):
    mapper = start_node(MapperNode, **{
        **{f"mapping.{k}": v for k, v in MAPPING.to_parameters().items() if v != []},
        "workspace.vertices": [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0],
        "grid.resolution": 2.0, "journal.enabled": False})
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count()
                      and probe.query_pub.get_subscription_count(), mapper, probe.node)
    xy = np.random.default_rng(1).uniform(0.0, 20.0, (80, 2))
    z = np.sin(xy[:, 0] / 3.0) + xy[:, 1] / 10.0
    probe.send_samples(xy, z)
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)

    header = Header(frame_id="map", stamp=cv.nanoseconds_to_time(7))
    probe.query_pub.publish(cv.query_to_cloud(header, CANDIDATES, PLANNED))
    assert spin_until(lambda: probe.response_to(7) is not None, mapper, probe.node)
    answered, std = probe.response_to(7)
    np.testing.assert_array_equal(answered, CANDIDATES)  # the candidates only
    model = make_model(MAPPING)
    model.add_data(xy, z)
    model.update()
    loop = MappingLoop(model)
    np.testing.assert_allclose(std, loop.uncertainty(CANDIDATES, PLANNED), rtol=1e-9)
    alone = loop.uncertainty(CANDIDATES)
    assert std[2] < 0.9 * alone[2]  # beside the planned samples, much less uncertain
    np.testing.assert_allclose(std[:2], alone[:2], rtol=1e-3)  # far from them, as alone
