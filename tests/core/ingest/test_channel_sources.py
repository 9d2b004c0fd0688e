"""Each channel's topic, message type and frame, and its messages into the ingest: the same
reader for a live and a recorded message; bad messages are counted drops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.bags.sim_survey import T, header
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.channels import ChannelSource, channel_sources
from poam_ros.ingest.feeders import feed_channel
from poam_ros.params import ConfigError

CONFIG = IngestConfig(channels=["temperature", "pressure", "methane"],
                      channel_types=["temperature", "fluid_pressure", "cloud"])


def temperature(t, value, frame="base_link"):
    return T["sensor_msgs/msg/Temperature"](header=header(t, frame), temperature=value,
                                            variance=0.0)


def pressure(t, value, frame="base_link"):
    return T["sensor_msgs/msg/FluidPressure"](header=header(t, frame), fluid_pressure=value,
                                              variance=0.0)


def cloud(t, fields, frame="base_link"):
    """A one-point float64 PointCloud2 with ``fields`` {name: value}."""
    field = T["sensor_msgs/msg/PointField"]
    names = list(fields)
    data = np.array([fields[name] for name in names], dtype="<f8").view(np.uint8)
    return T["sensor_msgs/msg/PointCloud2"](
        header=header(t, frame), height=1, width=1,
        fields=[field(name=name, offset=8 * i, datatype=8, count=1)
                for i, name in enumerate(names)],
        is_bigendian=False, point_step=8 * len(names), row_step=8 * len(names), data=data,
        is_dense=True)


def test_defaults_read_each_channel_off_its_own_name():
    sources = channel_sources(IngestConfig(channels=["temperature", "fluid_pressure",
                                                     "salinity"]))
    assert sources == [ChannelSource("temperature", "temperature", "temperature", "base_link"),
                       ChannelSource("fluid_pressure", "fluid_pressure", "fluid_pressure",
                                     "base_link"),
                       ChannelSource("salinity", "salinity", "cloud", "base_link")]
    assert sources[0].msgtype == "sensor_msgs/msg/Temperature"
    configured = channel_sources(IngestConfig(channels=["t"], channel_topics=["ctd/t"],
                                              channel_types=["temperature"],
                                              channel_frames=["ctd_link"]))
    assert configured == [ChannelSource("t", "ctd/t", "temperature", "ctd_link")]


@pytest.mark.parametrize("values, message", [
    (dict(channel_topics=["a"]), "one name per channel"),
    (dict(channel_types=["temperature", "salinity"]), "unknown"),
    (dict(channel_frames=["", "x"]), "one name per channel"),
    (dict(channel_topics=["ctd", "ctd"]), "distinct"),
])
def test_bad_channel_sources_are_config_errors(values, message):
    with pytest.raises(ConfigError, match=message):
        IngestConfig(channels=["temperature", "pressure"], **values)


def test_each_message_type_is_placed_and_bad_ones_are_counted_drops():
    ingest = Ingest(CONFIG)
    sources = {source.name: source for source in channel_sources(CONFIG)}
    ingest.set_plan([[4.0, 0.0]], 0.0, 0.0)
    for t in range(5):
        ingest.add_pose(float(t), float(t), 0.0, -10.0, 0.0, 0.0)
    feed = [("temperature", temperature(0.5, 7.5)),
            ("temperature", temperature(1.0, math.nan)),              # nonfinite_point
            ("temperature", temperature(1.5, 7.0, frame="sonar_link")),  # wrong_frame
            ("pressure", pressure(1.0, 2.0e5)),
            ("methane", cloud(2.0, {"x": 0.0, "salinity": 35.0})),    # malformed: no field
            ("methane", cloud(2.5, {"methane": 0.25})),
            ("methane", cloud(3.0, {"methane": 0.5, "other": 1.0}))]  # extra fields: ignored
    for name, message in feed:
        feed_channel(sources[name], ingest, message, 0.0)
    ingest.poll(math.inf)
    [batch] = ingest.take_batches()
    nan = math.nan
    np.testing.assert_array_equal(batch.points, [[0.5, 0.0, nan, 7.5, nan, nan],
                                                 [1.0, 0.0, nan, nan, 2.0e5, nan],
                                                 [2.5, 0.0, nan, nan, nan, 0.25],
                                                 [3.0, 0.0, nan, nan, nan, 0.5]])
    assert ingest.drops.counts == {ig.NONFINITE_POINT: 1, ig.WRONG_FRAME: 1, ig.MALFORMED: 1}
    assert "sonar_link" in ingest.drops.details[ig.WRONG_FRAME]
    assert ingest.channels.received == {"temperature": 3, "pressure": 1, "methane": 2}
    assert ingest.placement.channel_placed == {"temperature": 1, "pressure": 1, "methane": 2}
    assert ingest.channel_waiting("temperature") == 0


def test_a_reading_ahead_of_the_poses_is_waiting_not_dropped():
    ingest = Ingest(CONFIG)
    source = channel_sources(CONFIG)[0]
    ingest.add_pose(0.0, 0.0, 0.0, -10.0, 0.0, 0.0)
    feed_channel(source, ingest, temperature(0.5, 7.5), 0.0)
    assert ingest.channels.received["temperature"] == 1
    assert ingest.channel_waiting("temperature") == 1 and not ingest.placement.channel_placed
