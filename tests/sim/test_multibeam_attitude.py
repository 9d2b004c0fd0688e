"""The multibeam cast from the vehicle's full attitude and the sonar's mounting, and placed
back by the ingest exactly where it hit."""

from __future__ import annotations

import math

import numpy as np

from poam_ros.attitude import quaternion_from_rpy
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.sim.multibeam import MultibeamConfig, MultibeamSonar
from poam_ros.sim.simulated_auv import Odom, Ping, SimulatedAuv
from poam_ros.sim.simulator import SurveySimulator
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import VehicleConfig

FLOOR = -100.0
FLAT = Terrain(np.full((4, 4), FLOOR), (-500.0, 500.0, -500.0, 500.0))


def fan(**config):
    return MultibeamSonar(FLAT, MultibeamConfig(noise_std=0.0, **config), None,
                          np.random.default_rng(0))


def test_a_rolled_vehicle_casts_its_fan_rolled():
    # Rolled alpha about the forward axis, beam phi from nadir meets a floor h below at
    # (0, h tan(phi + alpha)) after h / cos(phi + alpha); the yaw turns it (facing north).
    alpha, z = math.radians(10.0), -10.0
    h = z - FLOOR
    swath = fan(num_beams=5, swath_angle=1.6).ping((20.0, 30.0, math.pi / 2), z, roll=alpha)
    total = swath.beam_angles + alpha
    np.testing.assert_allclose(swath.ranges, h / np.cos(total), rtol=1e-9)
    np.testing.assert_allclose(swath.points_world[:, 0], 20.0 - h * np.tan(total), atol=1e-6)
    np.testing.assert_allclose(swath.points_world[:, 1], 30.0, atol=1e-9)
    np.testing.assert_allclose(swath.points_world[:, 2], FLOOR, atol=1e-6)


def test_pitch_and_lever_arm():
    # Pitched beta, the nadir beam leans back: it meets the floor at x = -d tan(beta), where
    # the sonar's origin is the lever arm (1, 0, -2) turned by the pitch.
    beta, z = math.radians(4.0), -20.0
    swath = fan(num_beams=1, swath_angle=0.0, mount_xyz=[1.0, 0.0, -2.0]).ping(
        (0.0, 0.0, 0.0), z, pitch=beta)
    origin_x = math.cos(beta) * 1.0 + math.sin(beta) * -2.0
    origin_z = z - math.sin(beta) * 1.0 + math.cos(beta) * -2.0
    d = origin_z - FLOOR
    np.testing.assert_allclose(swath.ranges, [d / math.cos(beta)], rtol=1e-9)
    np.testing.assert_allclose(swath.points_world,
                               [[origin_x - d * math.tan(beta), 0.0, FLOOR]], atol=1e-6)


def slope_terrain():
    x = np.linspace(-500, 500, 41)
    grid = -300.0 + 0.2 * x[None, :] + 20.0 * np.sin(x[:, None] / 80.0)
    return Terrain(grid, (-500.0, 500.0, -500.0, 500.0))


def test_the_ingest_places_each_beam_where_the_simulator_cast_it():
    terrain = slope_terrain()
    vehicle = VehicleConfig(vertical_mode="altitude", altitude=40.0, max_speed=2.0,
                            speed_gain=1.0, goal_radius=1.0, roll_amplitude=0.15,
                            pitch_amplitude=0.05, attitude_period=7.0)
    mount = {"mount_xyz": [0.8, -0.1, -0.4], "mount_rpy": [0.02, -0.03, 0.01]}
    simulator = SurveySimulator(terrain, vehicle, SonarConfig(), seed=1,
                                start_pose=(-300.0, 0.0, 0.3))
    multibeam = MultibeamSonar(terrain, MultibeamConfig(num_beams=16, **mount), None,
                               np.random.default_rng(2))
    auv = SimulatedAuv(simulator, "lockstep", multibeam, ping_rate=2.0)
    ingest = Ingest(IngestConfig(voxel_size=0.0, outlier_neighbors=0, sonar_rate=0.0,
                                 sonar_mount_xyz=mount["mount_xyz"],
                                 sonar_mount_rpy=mount["mount_rpy"]))
    auv.set_plan([[-200.0, 60.0], [-150.0, -40.0]])
    expected, rolls = [], []
    for event in auv.advance(math.inf):
        if isinstance(event, Odom):
            rolls.append(event.roll)
            ingest.add_pose(event.t, event.x, event.y, event.z, event.yaw, event.t,
                            orientation=quaternion_from_rpy(event.roll, event.pitch,
                                                            event.yaw))
        elif isinstance(event, Ping):
            swath = event.swath
            ingest.add_swath(event.t, swath.points_sensor[swath.valid], event.t)
            expected.append(swath.points_world[swath.valid])
    ingest.flush_tail()
    placed = np.concatenate([batch.points for batch in ingest.take_batches()])
    expected = np.concatenate(expected)
    assert len(expected) > 1000
    np.testing.assert_allclose(placed, expected, atol=1e-6)
    # The vehicle really rolled, and the beams really hit the seabed.
    assert max(np.abs(rolls)) > 0.14
    np.testing.assert_allclose(expected[:, 2], terrain.elevation(expected[:, :2]), atol=3.5)
