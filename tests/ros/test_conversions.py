"""Conversions tested on messages built directly: no rclpy.init, no node, no DDS."""

import math
import struct

import numpy as np
import pytest

# Skip where ROS is absent, but fail where it is installed and broken (exc_type).
pytest.importorskip("sensor_msgs", reason="ROS 2 message packages are not installed",
                    exc_type=ModuleNotFoundError)

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import Quaternion  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402
from sensor_msgs.msg import PointCloud2, PointField, Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import RecorderStatus, encode  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402


def make_header(frame_id="map", seconds=12.5):
    return Header(frame_id=frame_id, stamp=cv.seconds_to_time(seconds))


# ---------------------------------------------------------------------- time

@pytest.mark.parametrize("seconds, sec, nanosec", [
    (0.0, 0, 0), (0.1, 0, 100_000_000), (12.5, 12, 500_000_000),
    (1.9999999999, 2, 0),  # the fraction rounds to a whole second and carries
    (-0.25, -1, 750_000_000),
])
def test_seconds_to_time_rounds_to_nearest_nanosecond(seconds, sec, nanosec):
    stamp = cv.seconds_to_time(seconds)
    assert (stamp.sec, stamp.nanosec) == (sec, nanosec)


def test_time_round_trip_is_exact_for_small_times_and_bounded_for_epoch_times():
    for sec, nanosec in [(5, 1), (3, 999_999_999), (1000, 123_456_789)]:
        stamp = cv.seconds_to_time(msg.time_to_seconds(Time(sec=sec, nanosec=nanosec)))
        assert (stamp.sec, stamp.nanosec) == (sec, nanosec)
    # Near 1.7e9 s a float64 resolves ~240 ns: the round trip is that close, no worse.
    epoch = Time(sec=1_700_000_000, nanosec=123_456_789)
    back = cv.seconds_to_time(msg.time_to_seconds(epoch))
    assert back.sec == epoch.sec and abs(back.nanosec - epoch.nanosec) <= 256


# ------------------------------------------------------------------ rotation

@pytest.mark.parametrize("yaw", np.linspace(-math.pi + 1e-9, math.pi, 13))
def test_yaw_quaternion_round_trip(yaw):
    q = cv.yaw_to_quaternion(yaw)
    assert math.isclose(q.x**2 + q.y**2 + q.z**2 + q.w**2, 1.0)
    assert math.isclose(msg.quaternion_to_yaw(q), yaw, abs_tol=1e-12)


def _multiply(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


def test_yaw_of_a_rolled_and_pitched_quaternion_is_the_z_y_x_euler_yaw():
    yaw, pitch, roll = 1.1, 0.3, -0.4

    def about(angle, axis):
        return (math.cos(angle / 2), *(math.sin(angle / 2) * a for a in axis))

    w, x, y, z = _multiply(_multiply(about(yaw, (0, 0, 1)), about(pitch, (0, 1, 0))),
                           about(roll, (1, 0, 0)))
    assert math.isclose(msg.quaternion_to_yaw(Quaternion(x=x, y=y, z=z, w=w)), yaw)


# --------------------------------------------------------------------- poses

def test_pose_stamped_from_xy_places_the_pose():
    pose = cv.pose_stamped_from_xy(make_header(), np.array([1.5, -2.0]), yaw=0.7, z=-30.0)
    assert pose.header.frame_id == "map"
    position = pose.pose.position
    assert (position.x, position.y, position.z) == (1.5, -2.0, -30.0)
    assert msg.pose_to_xy_yaw(pose.pose) == pytest.approx((1.5, -2.0, 0.7))


def test_path_round_trip_and_default_headings_follow_the_legs():
    waypoints = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0]])
    path = cv.path_from_waypoints(make_header("odom"), waypoints)
    assert path.header.frame_id == "odom" and len(path.poses) == 3
    np.testing.assert_array_equal(msg.path_to_waypoints(path), waypoints)
    headings = [msg.quaternion_to_yaw(p.pose.orientation) for p in path.poses]
    assert headings == pytest.approx([0.0, math.pi / 2, math.pi / 2])


def test_path_uses_given_yaws_and_checks_shapes():
    path = cv.path_from_waypoints(make_header(), [[0.0, 0.0], [5.0, 5.0]], yaws=[0.3, -0.3])
    assert [msg.quaternion_to_yaw(p.pose.orientation) for p in path.poses] == pytest.approx(
        [0.3, -0.3])
    assert msg.path_to_waypoints(cv.path_from_waypoints(make_header(), np.empty((0, 2)))).shape \
        == (0, 2)
    with pytest.raises(ValueError, match=r"\(K, 2\)"):
        cv.path_from_waypoints(make_header(), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="yaws"):
        cv.path_from_waypoints(make_header(), np.zeros((3, 2)), yaws=[0.0])


def test_odometry_round_trip():
    odometry = cv.odometry_from_state(make_header("odom", 3.25), "base_link", (4.0, -1.0),
                                      yaw=-2.0, speed=1.5, yaw_rate=0.1)
    assert odometry.child_frame_id == "base_link"
    assert odometry.twist.twist.linear.x == 1.5 and odometry.twist.twist.angular.z == 0.1
    assert msg.odometry_to_state(odometry) == pytest.approx((4.0, -1.0, -2.0, 3.25))


# -------------------------------------------------------------------- ranges

def test_range_round_trip_passes_misses_through():
    reading = cv.range_from_reading(make_header("altimeter", 7.0), 12.25, min_range=0.5,
                                    max_range=50.0, field_of_view=0.05, variance=0.01)
    assert reading.radiation_type == Range.ULTRASOUND
    assert (reading.min_range, reading.max_range) == (0.5, 50.0)
    assert msg.range_to_reading(reading) == (12.25, 7.0, "altimeter")
    miss = cv.range_from_reading(make_header(), math.inf, min_range=0.5, max_range=50.0,
                                 field_of_view=0.05)
    assert msg.range_to_reading(miss)[0] == math.inf


# --------------------------------------------------------------------- grids

def test_grid_scales_to_percent_with_row_zero_south_and_nan_unknown():
    values = np.array([[0.0, 5.0, 10.0], [2.5, np.nan, 7.5]])
    grid = cv.grid_from_array(make_header(), values, resolution=0.5, origin=(-3.0, 4.0))
    assert (grid.info.width, grid.info.height, grid.info.resolution) == (3, 2, 0.5)
    assert (grid.info.origin.position.x, grid.info.origin.position.y) == (-3.0, 4.0)
    assert grid.info.origin.orientation.w == 1.0 and grid.header.frame_id == "map"
    # OccupancyGrid is row-major from the origin: the first row stored is values[0] (south).
    assert list(grid.data) == [0, 50, 100, 25, -1, 75]
    back = msg.grid_to_array(grid)
    np.testing.assert_array_equal(back, [[0, 50, 100], [25, np.nan, 75]])


def test_grid_round_trip_within_quantisation_and_clipping():
    rng = np.random.default_rng(0)
    values = rng.uniform(-2.0, 3.0, size=(40, 60))
    grid = cv.grid_from_array(make_header(), values, resolution=1.0, origin=(0.0, 0.0),
                              value_range=(-2.0, 3.0))
    back = msg.grid_to_array(grid, value_range=(-2.0, 3.0))
    assert np.abs(back - values).max() <= 5.0 / 200 + 1e-12
    clipped = cv.grid_from_array(make_header(), np.array([[-10.0, 10.0]]), resolution=1.0,
                                 origin=(0, 0), value_range=(0.0, 1.0))
    assert list(clipped.data) == [0, 100]
    constant = cv.grid_from_array(make_header(), np.full((2, 2), 4.0), resolution=1.0,
                                  origin=(0, 0))
    assert list(constant.data) == [0, 0, 0, 0]


def test_grid_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        cv.grid_from_array(make_header(), np.zeros(4), resolution=1.0, origin=(0, 0))
    with pytest.raises(ValueError, match="resolution"):
        cv.grid_from_array(make_header(), np.zeros((2, 2)), resolution=0.0, origin=(0, 0))
    broken = OccupancyGrid()
    broken.info.width, broken.info.height = 3, 3
    broken.data = [0] * 8
    with pytest.raises(ValueError, match="8 cells"):
        msg.grid_to_array(broken)


# -------------------------------------------------------------- point clouds

def test_two_point_cloud_bytes_match_a_hand_packed_reference():
    points = {"x": [1.0, -4.0], "y": [2.0, 5.5], "z": [3.0, -6.25], "std": [0.5, 0.125]}
    cloud = cv.xyz_fields_to_cloud(make_header(), points)
    reference = struct.pack("<8f", 1.0, 2.0, 3.0, 0.5, -4.0, 5.5, -6.25, 0.125)
    assert bytes(cloud.data) == reference
    assert [(f.name, f.offset, f.datatype, f.count) for f in cloud.fields] == [
        ("x", 0, PointField.FLOAT32, 1), ("y", 4, PointField.FLOAT32, 1),
        ("z", 8, PointField.FLOAT32, 1), ("std", 12, PointField.FLOAT32, 1)]
    assert (cloud.height, cloud.width, cloud.point_step, cloud.row_step) == (1, 2, 16, 32)
    assert cloud.is_bigendian is False and cloud.is_dense is True
    assert cloud.header.frame_id == "map"


def test_large_cloud_round_trip_is_exact():
    rng = np.random.default_rng(1)
    n = 250_000
    names = ("x", "y", "z", "mean", "std", "lengthscale")
    points = {name: rng.normal(size=n).astype(np.float32) for name in names}
    arrays = msg.cloud_to_arrays(cv.xyz_fields_to_cloud(make_header(), points))
    assert list(arrays) == list(names)
    for name in names:
        assert arrays[name].shape == (n,) and arrays[name].dtype == np.float64
        np.testing.assert_array_equal(arrays[name], points[name])


def test_organised_cloud_with_holes_is_not_dense():
    rows, cols = 3, 4
    x, y = np.meshgrid(np.arange(cols, dtype=float), np.arange(rows, dtype=float))
    z = x + 10 * y
    z[1, 2] = np.nan
    cloud = cv.xyz_fields_to_cloud(make_header(), {"x": x, "y": y, "z": z})
    assert (cloud.height, cloud.width, cloud.row_step) == (rows, cols, cols * 12)
    assert cloud.is_dense is False
    arrays = msg.cloud_to_arrays(cloud)
    np.testing.assert_array_equal(arrays["z"].reshape(rows, cols), z)
    np.testing.assert_array_equal(arrays["x"].reshape(rows, cols), x)


def test_structured_array_input_and_empty_cloud():
    structured = np.zeros(3, dtype=[("z", "f8"), ("x", "f4"), ("y", "f4"), ("mean", "f8")])
    structured["x"], structured["z"], structured["mean"] = [1, 2, 3], [4, 5, 6], [7, 8, 9]
    cloud = cv.xyz_fields_to_cloud(make_header(), structured)
    assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean"]
    np.testing.assert_array_equal(msg.cloud_to_arrays(cloud)["mean"], [7, 8, 9])
    empty = cv.xyz_fields_to_cloud(make_header(), {n: np.empty(0) for n in "xyz"})
    assert (empty.width, empty.height, len(empty.data), empty.is_dense) == (0, 1, 0, True)
    assert msg.cloud_to_arrays(empty)["x"].shape == (0,)


def test_writer_rejects_incomplete_or_mismatched_points():
    with pytest.raises(ValueError, match="lack field"):
        cv.xyz_fields_to_cloud(make_header(), {"x": [1.0], "y": [1.0]})
    with pytest.raises(ValueError, match="shape"):
        cv.xyz_fields_to_cloud(make_header(), {"x": [1.0], "y": [1.0], "z": [1.0, 2.0]})
    with pytest.raises(ValueError, match="1-D or 2-D"):
        cv.xyz_fields_to_cloud(make_header(), {n: np.zeros((2, 2, 2)) for n in "xyz"})


def _foreign_cloud(big_endian=False):
    """Two rows of two points laid out as some other driver might: z as float64 first, a
    uint16 intensity, per-point padding and 8 bytes of padding at the end of each row."""
    order = ">" if big_endian else "<"
    point_step, row_step = 32, 2 * 32 + 8
    points = [(1.0, 2.0, 3.0, 7), (4.0, 5.0, 6.0, 8),
              (-1.0, -2.0, -3.0, 9), (0.5, 0.25, 0.125, 10)]
    data = bytearray()
    for row in (points[:2], points[2:]):
        for x, y, z, intensity in row:
            data += struct.pack(order + "d f 4x f H 10x", z, x, y, intensity)
        data += bytes(8)
    cloud = PointCloud2(header=make_header(), height=2, width=2, point_step=point_step,
                        row_step=row_step, is_bigendian=big_endian, is_dense=True)
    cloud.fields = [PointField(name="z", offset=0, datatype=PointField.FLOAT64, count=1),
                    PointField(name="x", offset=8, datatype=PointField.FLOAT32, count=1),
                    PointField(name="y", offset=16, datatype=PointField.FLOAT32, count=1),
                    PointField(name="intensity", offset=20, datatype=PointField.UINT16, count=1)]
    cloud.data = bytes(data)
    return cloud


@pytest.mark.parametrize("big_endian", [False, True])
def test_reader_handles_foreign_layouts_and_byte_order(big_endian):
    arrays = msg.cloud_to_arrays(_foreign_cloud(big_endian))
    np.testing.assert_array_equal(arrays["x"], [1.0, 4.0, -1.0, 0.5])
    np.testing.assert_array_equal(arrays["y"], [2.0, 5.0, -2.0, 0.25])
    np.testing.assert_array_equal(arrays["z"], [3.0, 6.0, -3.0, 0.125])
    np.testing.assert_array_equal(arrays["intensity"], [7, 8, 9, 10])


def test_reader_returns_multi_count_fields_as_columns():
    cloud = PointCloud2(height=1, width=2, point_step=20, row_step=40)
    cloud.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                    for i, n in enumerate("xyz")]
    cloud.fields.append(PointField(name="normal", offset=12, datatype=PointField.FLOAT32, count=2))
    cloud.data = struct.pack("<10f", *range(10))
    np.testing.assert_array_equal(msg.cloud_to_arrays(cloud)["normal"], [[3, 4], [8, 9]])


@pytest.mark.parametrize("corrupt, message", [
    (lambda c: setattr(c, "data", bytes(c.data)[:-1]), "bytes, expected"),
    (lambda c: setattr(c, "row_step", 40), "row_step"),
    (lambda c: c.fields.pop(0), "lacks field"),
    (lambda c: setattr(c.fields[3], "offset", 31), "overruns"),
    (lambda c: setattr(c.fields[3], "datatype", 42), "unknown datatype"),
    (lambda c: setattr(c.fields[3], "name", "x"), "twice"),
    (lambda c: setattr(c, "point_step", 0), "point_step"),
])
def test_reader_rejects_malformed_clouds(corrupt, message):
    cloud = _foreign_cloud()
    corrupt(cloud)
    with pytest.raises(ValueError, match=message):
        msg.cloud_to_arrays(cloud)


# --------------------------------------------------------------- diagnostics

def test_diagnostic_status_from_a_record():
    record = RecorderStatus(messages=3, queued=0, lost=0, topics=1, count={"/odom": 3})
    status = cv.diagnostic_status("recorder", 1, "slow disk", record, hardware_id="ssd")
    assert status.level == DiagnosticStatus.WARN and status.name == "recorder: bag"
    assert [(kv.key, kv.value) for kv in status.values] == encode(record)
    assert msg.status_record(status) == record and status.hardware_id == "ssd"
    error = cv.diagnostic_status("x", DiagnosticStatus.ERROR, "", record)
    assert error.level == DiagnosticStatus.ERROR
