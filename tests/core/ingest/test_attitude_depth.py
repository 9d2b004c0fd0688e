"""Attitude from an IMU and depth from a pressure sensor in place of the odometry's: a rolling
vehicle's swath lands where the odometry's quaternion with the same attitude puts it, a
pressure of ρ g d + p_atm gives z = -d, a reading waits for the sensors to reach its stamp,
and bad messages are counted drops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.attitude import GRAVITY, depth_from_pressure, quaternion_from_rpy
from poam_ros.bags.sim_survey import T, header
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.feeders import feed_depth, feed_imu

PLAIN = IngestConfig(voxel_size=0.0, outlier_neighbors=0)
SWATH = np.array([[0.0, -20.0, -30.0], [0.0, 0.0, -30.0], [5.0, 25.0, -30.0]])  # sonar frame
LIMITS = (1.0, 2000.0)


def attitude(t):
    """A rolling, pitching vehicle heading north-east: (roll, pitch, yaw) rad at ``t`` s."""
    return 0.3 * math.sin(t), 0.1 * math.cos(2.0 * t), 0.8


def swaths(ingest, imu=False, heading=None):
    """Poses along x at 1 m/s from t = 0 to 4 s, z = -50 m, a swath at t = 1 s (a pose's
    stamp) and at 1.25 and 2.75 s (between poses); the attitude in the odometry's quaternion
    or, with ``imu``, in IMU messages at the poses' stamps, the odometry then level with
    the yaw ``heading``."""
    ingest.set_plan([[4.0, 0.0]], 0.0, 0.0)
    for step in range(5):
        t = float(step)
        roll, pitch, yaw = attitude(t)
        if imu:
            ingest.add_pose(t, t, 0.0, -50.0, heading, 0.0,
                            orientation=quaternion_from_rpy(0.0, 0.0, heading))
            ingest.add_attitude(t, quaternion_from_rpy(roll, pitch, yaw), 0.0)
        else:
            ingest.add_pose(t, t, 0.0, -50.0, yaw, 0.0,
                            orientation=quaternion_from_rpy(roll, pitch, yaw))
    for t in (1.0, 1.25, 2.75):
        ingest.add_swath(t, SWATH, 0.0)
    ingest.poll(math.inf)
    [batch] = ingest.take_batches()
    return batch.points


def test_a_rolling_vehicles_swath_with_the_imu_attitude_is_the_odometrys():
    from_odometry = swaths(Ingest(PLAIN))
    from_imu = swaths(Ingest(PLAIN.replace(imu_attitude=True, imu_yaw=True)), imu=True,
                      heading=0.0)
    assert from_odometry.shape == (9, 3)
    np.testing.assert_allclose(from_imu, from_odometry, rtol=0, atol=1e-12)
    # Without imu_yaw the heading stays the odometry's.
    heading = swaths(Ingest(PLAIN.replace(imu_attitude=True)), imu=True, heading=0.8)
    np.testing.assert_allclose(heading, from_odometry, rtol=0, atol=1e-12)
    ingest = Ingest(PLAIN)
    level = swaths(ingest, imu=True, heading=0.8)  # imu_attitude off: the IMU is not read
    assert np.abs(level - from_odometry).max() > 1.0
    assert ingest.drops.counts == {ig.WRONG_FRAME: 5}


def test_a_pressure_of_rho_g_d_plus_p_atm_is_z_minus_d():
    config = PLAIN.replace(depth_from_pressure=True, water_density=1027.0,
                           atmospheric_pressure=101000.0)
    assert depth_from_pressure(1027.0 * GRAVITY * 42.0 + 101000.0, 1027.0,
                               101000.0) == pytest.approx(42.0, abs=1e-12)
    ingest = Ingest(config)
    ingest.set_plan([[3.0, 0.0]], 0.0, 0.0)
    for t in range(4):
        ingest.add_pose(float(t), float(t), 0.0, 300.0, 0.0, 0.0)  # its z is not used
    ingest.add_range(0.5, 10.0, *LIMITS, 0.0)
    ingest.add_range(1.5, 10.0, *LIMITS, 0.0)
    assert ingest.placement.pending == 2  # waiting for the depth at their stamps
    for t, depth in ((0.0, 40.0), (1.0, 42.0), (2.0, 44.0)):
        ingest.add_pressure(t, 1027.0 * GRAVITY * depth + 101000.0, 0.0)
    assert ingest.placement.pending == 0
    ingest.poll(math.inf)
    [batch] = ingest.take_batches()
    np.testing.assert_allclose(batch.points[:, 2], [-41.0 - 10.0, -43.0 - 10.0], rtol=0,
                               atol=1e-9)


def imu(t, q, frame="base_link", covariance=0.0):
    vector = T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)
    return T["sensor_msgs/msg/Imu"](
        header=header(t, frame), orientation=T["geometry_msgs/msg/Quaternion"](
            x=q[0], y=q[1], z=q[2], w=q[3]),
        orientation_covariance=np.array([covariance] + [0.0] * 8),
        angular_velocity=vector, angular_velocity_covariance=np.zeros(9),
        linear_acceleration=vector, linear_acceleration_covariance=np.zeros(9))


def pressure(t, value, frame="base_link"):
    return T["sensor_msgs/msg/FluidPressure"](header=header(t, frame), fluid_pressure=value,
                                              variance=0.0)


def test_bad_imu_and_pressure_messages_are_counted_drops():
    ingest = Ingest(PLAIN.replace(imu_attitude=True, depth_from_pressure=True,
                                  imu_frame="imu_link"))
    level = (0.0, 0.0, 0.0, 1.0)
    for message in (imu(1.0, level, frame="base_link"),       # wrong frame
                    imu(1.0, level, "imu_link", covariance=-1.0),  # no orientation
                    imu(1.0, (0.0, 0.0, 0.0, 0.0), "imu_link"),    # not a rotation
                    imu(2.0, level, "imu_link"),
                    imu(1.5, level, "imu_link")):                   # out of order
        feed_imu(ingest, message, 0.0)
    for message in (pressure(1.0, math.nan), pressure(1.0, 2e5, frame="sonar_link"),
                    pressure(2.0, 2e5)):
        feed_depth(ingest, message, 0.0)
    assert ingest.drops.counts == {ig.WRONG_FRAME: 2, ig.IMU_INVALID: 2, ig.OUT_OF_ORDER: 1,
                              ig.PRESSURE_INVALID: 1}
    assert (ingest.drops.details[ig.WRONG_FRAME]
            == "depth in frame 'sonar_link', expected 'base_link'")
