"""Conversions the vehicle and the ingest use: odometry with height, clock, xyz clouds,
diagnostics arrays. Messages built directly: no rclpy.init, no node, no DDS."""

import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs", reason="ROS 2 message packages are not installed",
                    exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from sensor_msgs.msg import PointField  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import RecorderStatus  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402


def test_odometry_keeps_the_plane_height_and_reads_back_as_a_pose():
    header = Header(frame_id="map", stamp=cv.seconds_to_time(12.3))
    odometry = cv.odometry_from_state(header, "base_link", (1.5, -2.0), 2.5, 0.7, -0.1,
                                      z=300.0)
    assert odometry.pose.pose.position.z == 300.0 and odometry.child_frame_id == "base_link"
    t, x, y, z, yaw = msg.odometry_to_pose(odometry)
    assert (t, x, y, z) == (12.3, 1.5, -2.0, 300.0) and math.isclose(yaw, 2.5)
    assert cv.odometry_from_state(header, "b", (0, 0), 0.0).pose.pose.position.z == 0.0


def test_clock_message():
    clock = cv.clock_from_seconds(1.25)
    assert (clock.clock.sec, clock.clock.nanosec) == (1, 250_000_000)


def test_points_round_trip_as_float32_xyz():
    points = np.random.default_rng(0).uniform(-1000, 1000, (500, 3))
    cloud = cv.points_to_cloud(Header(frame_id="map"), points)
    assert [f.name for f in cloud.fields] == ["x", "y", "z"]
    assert {f.datatype for f in cloud.fields} == {PointField.FLOAT32}
    assert (cloud.height, cloud.width, cloud.point_step) == (1, 500, 12)
    np.testing.assert_array_equal(msg.cloud_to_points(cloud), points.astype(np.float32))


def test_points_round_trip_exactly_as_float64():
    points = np.random.default_rng(1).uniform(-1000, 1000, (50, 3))
    cloud = cv.points_to_cloud(Header(frame_id="map"), points, float64=True)
    assert {f.datatype for f in cloud.fields} == {PointField.FLOAT64} and cloud.point_step == 24
    np.testing.assert_array_equal(msg.cloud_to_points(cloud), points)
    assert cv.points_to_cloud(Header(), np.empty((0, 3)), float64=True).width == 0


def test_empty_clouds_and_bad_shapes():
    empty = cv.points_to_cloud(Header(frame_id="map"), np.empty((0, 3)))
    assert empty.width == 0 and msg.cloud_to_points(empty).shape == (0, 3)
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        cv.points_to_cloud(Header(), np.zeros((4, 2)))
    broken = cv.points_to_cloud(Header(), np.zeros((4, 3)))
    broken.width = 5
    with pytest.raises(ValueError, match="row_step"):
        msg.cloud_to_points(broken)


def test_diagnostic_array():
    record = RecorderStatus(messages=2, queued=0, lost=0, topics=1)
    status = cv.diagnostic_status("recorder", DiagnosticStatus.WARN, "drops", record)
    array = cv.diagnostic_array(4.5, [status])
    assert array.header.stamp.sec == 4 and array.status[0].values[0].value == "2"
