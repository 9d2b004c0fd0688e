"""Conversions of the mapping and planning streams, on messages built directly (no rclpy.init)."""

import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs", reason="ROS 2 message packages are not installed",
                    exc_type=ModuleNotFoundError)

from sensor_msgs.msg import PointField  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402

# Coordinates float32 cannot hold exactly (UTM-sized eastings, thirds).
XY = np.array([[512345.123456789, 1.0 / 3.0], [-2.5, 7.25], [0.1, -0.2]])


def header():
    return Header(frame_id="map", stamp=cv.nanoseconds_to_time(12_000_000_007))


@pytest.mark.parametrize("datatype, exact", [(PointField.FLOAT32, False),
                                             (PointField.FLOAT64, True)])
def test_samples_round_trip(datatype, exact):
    z = np.array([-1.0 / 3.0, 2.0, np.nan])
    cloud = cv.samples_to_cloud(header(), XY, z, datatype=datatype)
    assert [f.name for f in cloud.fields] == ["x", "y", "z"]
    assert {f.datatype for f in cloud.fields} == {datatype}
    xy, elevations = msg.cloud_to_samples(cloud)
    assert xy.dtype == elevations.dtype == np.float64
    if exact:
        np.testing.assert_array_equal(xy, XY) and np.testing.assert_array_equal(elevations, z)
    else:
        np.testing.assert_allclose(xy, XY, rtol=1e-7) and \
            np.testing.assert_allclose(elevations, z, rtol=1e-7)
    assert np.isnan(elevations[2])  # passed on for the model to count and drop


def test_samples_need_a_z_field():
    cloud = cv.query_to_cloud(header(), XY)
    with pytest.raises(ValueError, match="lacks field"):
        msg.cloud_to_samples(cloud)


def test_map_cloud_is_an_organised_grid_with_the_contract_fields():
    x, y = np.meshgrid([0.5, 1.5, 2.5], [10.5, 11.5])
    mean = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, 6.0]])
    std = mean / 10
    cloud = cv.map_to_cloud(header(), x, y, mean, std, lengthscale=std * 2)
    assert (cloud.height, cloud.width) == (2, 3)
    assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean", "std", "lengthscale"]
    assert {f.datatype for f in cloud.fields} == {PointField.FLOAT32}
    assert cloud.is_dense is False  # the NaN cell
    arrays = msg.cloud_to_arrays(cloud)
    np.testing.assert_array_equal(arrays["x"].reshape(2, 3), x)
    np.testing.assert_array_equal(arrays["z"], arrays["mean"])
    np.testing.assert_allclose(arrays["std"].reshape(2, 3), std, rtol=1e-7)
    without = cv.map_to_cloud(header(), x, y, mean, std)
    assert "lengthscale" not in [f.name for f in without.fields]
    with pytest.raises(ValueError, match="share one 2-D shape"):
        cv.map_to_cloud(header(), x, y, mean[0], std)
    empty = cv.map_to_cloud(header(), *(np.empty((0, 0)),) * 4)
    assert empty.width * empty.height == 0


def test_inducing_cloud_puts_the_mean_in_z():
    cloud = cv.inducing_to_cloud(header(), XY, [1.0, 2.0, 3.0])
    arrays = msg.cloud_to_arrays(cloud)
    np.testing.assert_array_equal(arrays["z"], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="mean must have shape"):
        cv.inducing_to_cloud(header(), XY, [1.0])


def test_query_and_response_keep_float64_exactly():
    query = cv.query_to_cloud(header(), XY)
    assert [f.name for f in query.fields] == ["x", "y"]
    assert {f.datatype for f in query.fields} == {PointField.FLOAT64}
    np.testing.assert_array_equal(msg.cloud_to_query(query), XY)
    std = np.array([0.1, 1.0 / 7.0, 3.0])
    response = cv.response_to_cloud(header(), XY, std)
    points, answered = msg.cloud_to_response(response)
    np.testing.assert_array_equal(points, XY) and np.testing.assert_array_equal(answered, std)
    empty = cv.response_to_cloud(header(), np.empty((0, 2)), np.empty(0))
    assert msg.cloud_to_response(empty)[1].shape == (0,)
    with pytest.raises(ValueError, match="lacks field"):
        msg.cloud_to_response(query)


def test_evaluation_keeps_float64_exactly():
    mean, std = np.array([-3.0, 1.0 / 3.0, 7.5]), np.array([0.1, 1.0 / 7.0, 3.0])
    cloud = cv.evaluation_to_cloud(header(), XY, mean, std)
    assert [f.name for f in cloud.fields] == ["x", "y", "mean", "std"]
    assert {f.datatype for f in cloud.fields} == {PointField.FLOAT64}
    for read, written in zip(msg.cloud_to_evaluation(cloud), (XY, mean, std)):
        np.testing.assert_array_equal(read, written)
    with pytest.raises(ValueError, match="std must have shape"):
        cv.evaluation_to_cloud(header(), XY, mean, std[:2])


def test_nanosecond_stamps_are_exact():
    for ns in (0, 1, 999_999_999, 1_795_306_312_094_952_916):
        assert msg.time_to_nanoseconds(cv.nanoseconds_to_time(ns)) == ns


def test_arrival_headings_face_along_each_leg():
    yaws = cv.arrival_headings([0.0, 0.0], [[1.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(yaws, [math.pi / 4, math.pi / 2])


def test_fields_to_cloud_refuses_other_datatypes():
    with pytest.raises(ValueError, match="FLOAT32 or FLOAT64"):
        cv.fields_to_cloud(header(), {"x": [1.0], "y": [2.0]}, datatype=PointField.INT32)
