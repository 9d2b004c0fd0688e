"""One reader for every holder of a message: the same serialized messages, decoded by
rosbags (what the remap reads from a bag) and by rclpy (what a node receives), give
bit-identical numbers through :mod:`poam_ros.messages` (no ROS graph needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.bags import MessageTypes  # noqa: E402
from poam_ros.bags.remap import wire_samples  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402

TYPES = MessageTypes()
RNG = np.random.default_rng(7)


def stored(message, msgtype):
    """The message as the remap reads it from a bag (rosbags' CDR decoder)."""
    return TYPES.deserialize(serialize_message(message), msgtype)


def received(message):
    """The message as a node receives it (rclpy's CDR decoder; float32 fields rounded)."""
    return deserialize_message(serialize_message(message), type(message))


@pytest.mark.parametrize("t", [0.0, 0.1, 12.3456789, 1234.000000001, 1e5 + 1 / 3])
def test_odometry_and_time_as_the_ingest_node_reads_them(t):
    for _ in range(20):
        xy, yaw, z = RNG.uniform(-40, 40, 2), RNG.uniform(-math.pi, math.pi), RNG.normal()
        message = cv.odometry_from_state(Header(frame_id="map", stamp=cv.seconds_to_time(t)),
                                         "base_link", xy, yaw, z=z)
        assert msg.odometry_to_pose(stored(message, "nav_msgs/msg/Odometry")) == \
            msg.odometry_to_pose(received(message))
        assert msg.seconds_to_nanoseconds(t) == msg.time_to_nanoseconds(cv.seconds_to_time(t))


def test_ranges_paths_and_clouds_as_the_nodes_read_them():
    header = Header(frame_id="sonar_link", stamp=cv.seconds_to_time(3.3))
    reading = cv.range_from_reading(header, 1234.56789, min_range=1.0, max_range=2000.0,
                                    field_of_view=0.0)
    decoded = stored(reading, "sensor_msgs/msg/Range")
    assert (decoded.range, msg.time_to_seconds(decoded.header.stamp)) == \
        msg.range_to_reading(received(reading))[:2]
    waypoints = RNG.uniform(-30, 30, (5, 2))
    path = cv.path_from_waypoints(Header(frame_id="map"), waypoints)
    np.testing.assert_array_equal(msg.path_to_waypoints(stored(path, "nav_msgs/msg/Path")),
                                  msg.path_to_waypoints(received(path)))
    points = RNG.uniform(-100, 100, (50, 3))
    for float64 in (False, True):
        cloud = cv.points_to_cloud(Header(frame_id="map"), points, float64=float64)
        from_bag = msg.cloud_to_points(stored(cloud, "sensor_msgs/msg/PointCloud2"))
        np.testing.assert_array_equal(from_bag, msg.cloud_to_points(received(cloud)))
        # What the mapper reads off the ingest's samples cloud.
        np.testing.assert_array_equal(wire_samples(points, float64),
                                      np.column_stack(msg.cloud_to_samples(cloud)))


def test_grids_and_query_clouds_read_alike_from_a_bag_and_a_subscription():
    header = Header(frame_id="map", stamp=cv.seconds_to_time(7.25))
    values = RNG.uniform(0, 5, (4, 6))
    grid = cv.grid_from_array(header, values, resolution=0.5, origin=(1.0, 2.0))
    np.testing.assert_array_equal(msg.grid_to_array(stored(grid, "nav_msgs/msg/OccupancyGrid")),
                                  msg.grid_to_array(received(grid)))
    xy = RNG.uniform(-10, 10, (30, 2))
    for cloud, read in [(cv.evaluation_to_cloud(header, xy, xy[:, 0], xy[:, 1] ** 2),
                         msg.cloud_to_evaluation),
                        (cv.response_to_cloud(header, xy, np.abs(xy[:, 0])),
                         msg.cloud_to_response)]:
        for a, b in zip(read(stored(cloud, "sensor_msgs/msg/PointCloud2")), read(received(cloud))):
            np.testing.assert_array_equal(a, b)


def test_navsatfix_reads_alike_from_a_bag_and_a_subscription():
    from sensor_msgs.msg import NavSatFix, NavSatStatus

    fix = NavSatFix(header=Header(frame_id="usbl", stamp=cv.seconds_to_time(12.5)),
                    status=NavSatStatus(status=NavSatStatus.STATUS_FIX),
                    latitude=59.123456789, longitude=-10.987654321, altitude=float("nan"))
    unknown = (12.5, 59.123456789, -10.987654321, 0, None)  # COVARIANCE_TYPE_UNKNOWN
    assert msg.navsatfix_to_fix(stored(fix, "sensor_msgs/msg/NavSatFix")) == unknown
    assert msg.navsatfix_to_fix(received(fix)) == unknown
    fix.position_covariance[:] = [4.0, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 100.0]  # m², ENU
    fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    fix.status.status = NavSatStatus.STATUS_NO_FIX
    for read in (stored(fix, "sensor_msgs/msg/NavSatFix"), received(fix)):
        assert msg.navsatfix_to_fix(read)[3:] == (-1, 3.0)  # the larger horizontal std


def test_samples_with_channels_round_trip_through_the_builder_and_the_readers():
    """x, y, z and one field per channel, NaN where a sample did not measure it."""
    channels = ("temperature", "pressure")
    points = RNG.uniform(-100, 100, (40, 5))
    points[::3, 2], points[1::3, 3], points[2::3, 4] = np.nan, np.nan, np.nan
    for float64 in (False, True):
        cloud = cv.points_to_cloud(Header(frame_id="map"), points, float64, channels)
        assert [f.name for f in cloud.fields] == ["x", "y", "z", *channels]
        for read in (stored(cloud, "sensor_msgs/msg/PointCloud2"), received(cloud)):
            np.testing.assert_array_equal(msg.cloud_to_points(read, channels),
                                          wire_samples(points, float64))
            xy, values = msg.cloud_to_samples(read, channels)
            np.testing.assert_array_equal(np.column_stack([xy, values]),
                                          wire_samples(points, float64))
            np.testing.assert_array_equal(msg.cloud_to_points(read),
                                          wire_samples(points[:, :3], float64))
    with pytest.raises(ValueError, match="lacks field"):
        msg.cloud_to_points(cv.points_to_cloud(Header(), points[:, :3]), channels)
    with pytest.raises(ValueError, match="shape"):
        cv.points_to_cloud(Header(), points)


def test_scalar_channel_messages_read_alike_from_a_bag_and_a_subscription():
    from sensor_msgs.msg import FluidPressure, Temperature

    header = Header(frame_id="ctd_link", stamp=cv.seconds_to_time(42.5))
    temperature = Temperature(header=header, temperature=7.25, variance=0.01)
    pressure = FluidPressure(header=header, fluid_pressure=2.5e6, variance=4.0)
    for read in (stored(temperature, "sensor_msgs/msg/Temperature"), received(temperature)):
        assert msg.temperature_to_reading(read) == (7.25, 42.5, "ctd_link")
    for read in (stored(pressure, "sensor_msgs/msg/FluidPressure"), received(pressure)):
        assert msg.fluid_pressure_to_reading(read) == (2.5e6, 42.5, "ctd_link")
    # Any other sensor: a stamped cloud with one field per channel.
    cloud = cv.fields_to_cloud(header, {"oxygen": np.array([211.5]),
                                        "methane": np.array([3.25])}, required=())
    for read in (stored(cloud, "sensor_msgs/msg/PointCloud2"), received(cloud)):
        t, values = msg.cloud_to_channel_readings(read, ["methane", "salinity"])
        assert t == 42.5 and list(values) == ["methane"]
        np.testing.assert_array_equal(values["methane"], [3.25])
        with pytest.raises(ValueError, match="none of the channels"):
            msg.cloud_to_channel_readings(read, ["salinity"])
