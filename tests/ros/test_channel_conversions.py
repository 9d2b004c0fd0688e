"""Conversions of a multi-channel map's streams (map layers, uncertainty answers, evaluation),
on messages built directly (no rclpy.init)."""

import numpy as np
import pytest

pytest.importorskip("sensor_msgs", reason="ROS 2 message packages are not installed",
                    exc_type=ModuleNotFoundError)

from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402

XY = np.array([[512345.123456789, 1.0 / 3.0], [-2.5, 7.25], [0.1, -0.2]])


def header():
    return Header(frame_id="map", stamp=cv.nanoseconds_to_time(5))


def covariances(channels=3):
    rng = np.random.default_rng(0)
    factors = rng.normal(size=(len(XY), channels, channels))
    return factors @ np.transpose(factors, (0, 2, 1)) + np.eye(channels) / 3.0


def test_a_covariance_answer_round_trips_exactly():
    cov = covariances()
    cloud = cv.response_to_cloud(header(), XY, cov)
    assert [f.name for f in cloud.fields] == ["x", "y", "std", "cov_0_0", "cov_0_1", "cov_0_2",
                                              "cov_1_1", "cov_1_2", "cov_2_2"]
    points, answered = msg.cloud_to_response(cloud)
    np.testing.assert_array_equal(points, XY)
    np.testing.assert_array_equal(answered, cov)
    np.testing.assert_array_equal(msg.cloud_to_fields(cloud)["std"], np.sqrt(cov[:, 0, 0]))
    empty = cv.response_to_cloud(header(), np.empty((0, 2)), np.empty((0, 2, 2)))
    assert msg.cloud_to_response(empty)[1].shape == (0, 2, 2)


def test_an_answer_with_a_covariance_field_missing_is_refused():
    fields = {"x": XY[:, 0], "y": XY[:, 1], "std": np.ones(3), "cov_0_0": np.ones(3),
              "cov_1_1": np.ones(3), "cov_0_2": np.ones(3)}
    with pytest.raises(ValueError, match="cov_<d>_<e>"):
        msg.cloud_to_response(cv.fields_to_cloud(header(), fields))
    with pytest.raises(ValueError, match=r"shape \(3, D, D\)"):
        cv.response_to_cloud(header(), XY, covariances()[:2])


def test_the_evaluation_carries_each_channel():
    rng = np.random.default_rng(1)
    mean, std = rng.normal(size=(3, 2)), rng.uniform(0.1, 1.0, (3, 2))
    cloud = cv.evaluation_to_cloud(header(), XY, mean, std, ["temperature"])
    assert [f.name for f in cloud.fields] == ["x", "y", "mean", "std", "mean_temperature",
                                              "std_temperature"]
    points, means, stds = msg.cloud_to_evaluation(cloud, ["temperature"])
    np.testing.assert_array_equal(points, XY)
    np.testing.assert_array_equal(means, mean)
    np.testing.assert_array_equal(stds, std)
    np.testing.assert_array_equal(msg.cloud_to_evaluation(cloud)[1], mean[:, 0])
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        cv.evaluation_to_cloud(header(), XY, mean[:, 0], std[:, 0], ["temperature"])


def test_the_map_has_a_mean_and_std_field_per_channel():
    layer = np.arange(6.0).reshape(2, 3)
    cloud = cv.map_to_cloud(header(), layer, layer, layer, layer + 1, None, ["temperature"],
                            [layer + 2], [layer + 3])
    assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean", "std",
                                              "mean_temperature", "std_temperature"]
    arrays = msg.cloud_to_arrays(cloud)
    np.testing.assert_array_equal(arrays["std_temperature"], (layer + 3).ravel())
    with pytest.raises(ValueError, match="per channel"):
        cv.map_to_cloud(header(), layer, layer, layer, layer, None, ["temperature"], [], [])
