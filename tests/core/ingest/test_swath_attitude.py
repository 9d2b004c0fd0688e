"""Swath points placed with the vehicle's full attitude and the sonar's mounting, against
closed forms worked out by hand: position + R_vehicle (t_mount + R_mount p)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.attitude import quaternion_from_rpy, roll_pitch_from_quaternion, rotation_matrix
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.params import ConfigError

POSITION = np.array([100.0, 50.0, -20.0])


def placed(points, roll=0.0, pitch=0.0, yaw=0.0, **config):
    """The world points of one swath ``points`` (sonar frame) taken at a pose (POSITION,
    attitude) held from t = 0 s to t = 1 s."""
    ingest = Ingest(IngestConfig(voxel_size=0.0, outlier_neighbors=0, **config))
    q = quaternion_from_rpy(roll, pitch, yaw)
    for t in (0.0, 1.0):
        ingest.add_pose(t, *POSITION, yaw, 0.0, orientation=q)
    ingest.add_swath(0.5, points, now=0.0)
    ingest.flush_tail()
    batch, = ingest.take_batches()
    return batch.points


def beam(phi, r):
    """Sonar-frame point of a beam ``phi`` rad from nadir (positive to port), range r m."""
    return [0.0, r * math.sin(phi), -r * math.cos(phi)]


def test_a_rolled_vehicle_turns_its_beams_by_the_roll():
    # Rolled by alpha about x, a beam phi from nadir points phi + alpha from nadir: today's
    # yaw-only placement puts a 60° beam of 100 m 2 r sin 5° = 17 m off at 10° of roll.
    alpha, phi, r = math.radians(10.0), math.radians(60.0), 100.0
    points = placed([beam(phi, r), beam(-phi, r)], roll=alpha)
    expected = POSITION + np.array([beam(phi + alpha, r), beam(-phi + alpha, r)])
    np.testing.assert_allclose(points, expected, atol=1e-9)
    assert np.linalg.norm(points[0] - (POSITION + beam(phi, r))) > 17.0


def test_a_pitched_vehicle_moves_its_nadir_beam_along_track():
    # Ry(beta) (0, 0, -r) = (-r sin beta, 0, -r cos beta): nose up puts nadir behind.
    beta, r = math.radians(5.0), 80.0
    points = placed([[0.0, 0.0, -r]], pitch=beta, yaw=math.pi / 2)   # facing north
    np.testing.assert_allclose(points, [POSITION + [0.0, -r * math.sin(beta),
                                                    -r * math.cos(beta)]], atol=1e-9)


def test_lever_arm_and_mount_rotation_with_roll_and_yaw():
    alpha, gamma, phi, r = 0.2, -0.1, 0.7, 60.0
    lever = [2.0, 0.5, -1.0]
    points = placed([beam(phi, r)], roll=alpha, yaw=math.pi / 2,
                    sonar_mount_xyz=lever, sonar_mount_rpy=[gamma, 0.0, 0.0])
    # In the vehicle frame the sonar's beam is phi + gamma from nadir, from the lever arm;
    # the vehicle's roll turns both by alpha about x; facing north maps (x, y) -> (-y, x).
    total = phi + gamma + alpha
    body = np.array([2.0,
                     0.5 * math.cos(alpha) + math.sin(alpha) + r * math.sin(total),
                     0.5 * math.sin(alpha) - math.cos(alpha) - r * math.cos(total)])
    expected = POSITION + [-body[1], body[0], body[2]]
    np.testing.assert_allclose(points, [expected], atol=1e-9)


def test_attitude_is_interpolated_between_poses():
    ingest = Ingest(IngestConfig(voxel_size=0.0, outlier_neighbors=0))
    ingest.add_pose(0.0, *POSITION, 0.0, 0.0, orientation=quaternion_from_rpy(0.0, 0, 0))
    ingest.add_pose(1.0, *POSITION, 0.0, 0.0, orientation=quaternion_from_rpy(0.2, 0, 0))
    ingest.add_swath(0.25, [beam(0.0, 50.0)], now=0.0)
    ingest.flush_tail()
    batch, = ingest.take_batches()
    np.testing.assert_allclose(batch.points, [POSITION + beam(0.05, 50.0)], atol=1e-9)


def test_a_pose_without_orientation_is_level_as_before():
    points = placed([beam(0.5, 40.0)], yaw=0.3)
    c, s = math.cos(0.3), math.sin(0.3)
    _, y, z = beam(0.5, 40.0)
    np.testing.assert_allclose(points, [POSITION + [-s * y, c * y, z]], atol=1e-9)


@pytest.mark.parametrize("roll, pitch, yaw", [(0.1, -0.2, 2.5), (-1.0, 0.4, -3.0),
                                              (0.0, 0.0, 1.0)])
def test_quaternion_round_trip(roll, pitch, yaw):
    q = quaternion_from_rpy(roll, pitch, yaw)
    assert roll_pitch_from_quaternion(q) == pytest.approx((roll, pitch), abs=1e-12)
    # The quaternion's rotation matrix is the one rotation_matrix builds.
    x, y, z, w = q
    from_q = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                       [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                       [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    np.testing.assert_allclose(rotation_matrix(roll, pitch, yaw), from_q, atol=1e-12)


def test_mount_must_be_three_numbers():
    with pytest.raises(ConfigError, match="sonar_mount_xyz must be three finite numbers"):
        IngestConfig(sonar_mount_xyz=[0.0, 1.0])
