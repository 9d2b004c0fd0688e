"""Conversions of a binary channel's streams, on messages built directly (no rclpy.init): the
simulated class reading as the ingest reads it, and an uncertainty answer with the class's
probability."""

import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs", reason="ROS 2 message packages are not installed",
                    exc_type=ModuleNotFoundError)

from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ingest import Ingest, IngestConfig  # noqa: E402
from poam_ros.ingest import reasons as ig  # noqa: E402
from poam_ros.ingest.channels import channel_sources  # noqa: E402
from poam_ros.ingest.feeders import feed_channel  # noqa: E402
from poam_ros.mapping.binary import ChannelSpread  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402

XY = np.array([[512345.123456789, 1.0 / 3.0], [-2.5, 7.25], [0.1, -0.2]])


def header(seconds=0.0, frame="map"):
    return Header(frame_id=frame, stamp=cv.seconds_to_time(seconds))


def test_the_simulators_class_reading_is_the_ingests_binary_channel():
    config = IngestConfig(channels=["seabed_class"])
    [source] = channel_sources(config)
    ingest = Ingest(config)
    ingest.set_plan([[4.0, 0.0]], 0.0, 0.0)
    for t in range(5):
        ingest.add_pose(float(t), float(t), 0.0, -10.0, 0.0, 0.0)
    for t, value in ((0.5, 1.0), (1.5, 0.0), (2.5, 0.25)):
        feed_channel(source, ingest, cv.channel_reading_cloud(
            header(t, "base_link"), "seabed_class", value), 0.0)
    ingest.poll(math.inf)
    [batch] = ingest.take_batches()
    np.testing.assert_array_equal(batch.points[:, 3], [1.0, 0.0])
    assert ingest.drops.counts == {ig.VALUE_OUT_OF_LIMITS: 1}


def test_an_answer_with_a_class_probability_round_trips():
    rng = np.random.default_rng(0)
    factors = rng.normal(size=(len(XY), 3, 3))
    cov = factors @ np.transpose(factors, (0, 2, 1)) + np.eye(3) / 3.0
    probability = np.full((len(XY), 3), np.nan)
    probability[:, 2] = [0.5, 1e-9, 0.999]
    cloud = cv.response_to_cloud(header(), XY, ChannelSpread(cov, probability))
    assert "p_2" in {f.name for f in cloud.fields} and "p_0" not in {f.name
                                                                      for f in cloud.fields}
    points, spread = msg.cloud_to_response(cloud)
    np.testing.assert_array_equal(points, XY)
    np.testing.assert_array_equal(spread, cov)
    np.testing.assert_array_equal(msg.cloud_to_probability(cloud, 3), probability)
    assert msg.cloud_to_probability(cv.response_to_cloud(header(), XY, cov), 3) is None
    with pytest.raises(ValueError, match="probability field"):
        msg.cloud_to_probability(cloud, 2)
