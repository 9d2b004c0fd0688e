"""A binary channel in the ingest: class labels off a one-point cloud, 0 and 1 kept, any other
value a counted ``value_out_of_limits``, ``seabed_class`` binary by default."""

from __future__ import annotations

import math

import numpy as np
from test_channel_sources import cloud

from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.channels import ChannelSource, channel_sources, value_limits
from poam_ros.ingest.feeders import feed_channel


def test_seabed_class_is_a_binary_cloud_channel_by_default():
    [source] = channel_sources(IngestConfig(channels=["seabed_class"]))
    assert source == ChannelSource("seabed_class", "seabed_class", "binary", "base_link")
    assert source.msgtype == "sensor_msgs/msg/PointCloud2"
    assert value_limits("binary", IngestConfig()) == (0.0, 1.0)


def test_labels_other_than_0_and_1_are_dropped_as_out_of_limits():
    config = IngestConfig(channels=["hardness"], channel_types=["binary"])
    ingest = Ingest(config)
    [source] = channel_sources(config)
    ingest.set_plan([[4.0, 0.0]], 0.0, 0.0)
    for t in range(5):
        ingest.add_pose(float(t), float(t), 0.0, -10.0, 0.0, 0.0)
    for t, value in [(0.5, 1.0), (1.0, 0.5), (1.5, 0.0), (2.0, 2.0), (2.5, -1.0),
                     (3.0, math.nan), (3.5, 1.0)]:
        feed_channel(source, ingest, cloud(t, {"hardness": value}), 0.0)
    ingest.poll(math.inf)
    [batch] = ingest.take_batches()
    np.testing.assert_array_equal(batch.points[:, [0, 3]], [[0.5, 1.0], [1.5, 0.0],
                                                            [3.5, 1.0]])
    assert ingest.drops.counts == {ig.VALUE_OUT_OF_LIMITS: 3, ig.NONFINITE_POINT: 1}
    assert "not a class label" in ingest.drops.details[ig.VALUE_OUT_OF_LIMITS]
