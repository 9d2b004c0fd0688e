"""One feeder per message type: a deserialized bag message (the same field names as an
rclpy one) reaches the ingest with the numbers the readers of poam_ros.messages take off
it; unreadable messages are counted."""

from __future__ import annotations

import numpy as np
import pytest

from poam_ros.bags.sim_survey import T, header
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import feeders as fd
from poam_ros.ingest import reasons as ig


def pose(x, y, z=0.0):
    return T["geometry_msgs/msg/Pose"](
        position=T["geometry_msgs/msg/Point"](x=x, y=y, z=z),
        orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0))


class Recorder:
    """Stands for the Ingest: records each call."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_odometry_range_fix_and_plan_reach_the_ingest():
    ingest = Recorder()
    odometry = T["nav_msgs/msg/Odometry"](
        header=header(1.5, "map"), child_frame_id="base_link",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose(1.0, 2.0, -3.0),
                                                       covariance=np.zeros(36)),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](
            twist=T["geometry_msgs/msg/Twist"](linear=T["geometry_msgs/msg/Vector3"](
                x=0.0, y=0.0, z=0.0), angular=T["geometry_msgs/msg/Vector3"](
                x=0.0, y=0.0, z=0.0)), covariance=np.zeros(36)))
    fd.feed_odometry(ingest, odometry, 9.0)
    sounding = T["sensor_msgs/msg/Range"](header=header(2.0, "sonar_link"), radiation_type=1,
                                          field_of_view=0.1, min_range=1.0, max_range=50.0,
                                          range=12.5, variance=0.0)
    fd.feed_range(ingest, sounding, 9.0)
    path = T["nav_msgs/msg/Path"](header=header(3.0, "map"), poses=[
        T["geometry_msgs/msg/PoseStamped"](header=header(3.0, "map"), pose=pose(4.0, 5.0))])
    fd.feed_plan(ingest, path, 9.0)
    odom, reading, plan = ingest.calls
    assert odom == ("add_pose", 1.5, 1.0, 2.0, -3.0, 0.0, 9.0, "map", "base_link",
                    (0.0, 0.0, 0.0, 1.0))
    assert reading == ("add_range", 2.0, 12.5, 1.0, 50.0, 9.0, "sonar_link")
    assert plan[0] == "set_plan" and plan[2:] == (3.0, 9.0, "map")
    np.testing.assert_array_equal(plan[1], [[4.0, 5.0]])


def test_an_unreadable_swath_is_malformed():
    ingest = Ingest(IngestConfig())
    cloud = T["sensor_msgs/msg/PointCloud2"](header=header(1.0, "sonar_link"), height=1,
                                             width=1, fields=[], is_bigendian=False,
                                             point_step=0, row_step=0,
                                             data=np.zeros(0, np.uint8), is_dense=True)
    fd.feed_swath(ingest, cloud, 0.0)
    assert ingest.drops.counts == {ig.MALFORMED: 1}


@pytest.mark.parametrize("config, names", [
    (IngestConfig(), []),
    (IngestConfig(channels=["temperature"], imu_attitude=True, depth_from_pressure=True),
     ["channel:temperature", "imu", "depth"])])
def test_the_configured_inputs_have_their_feeders(config, names):
    feeders = fd.input_feeders(config)
    assert [feeder.name for feeder in feeders] == names
    assert [feeder.topic for feeder in feeders] == [name.split(":")[-1] for name in names]
