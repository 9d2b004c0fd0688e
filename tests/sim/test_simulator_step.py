"""SurveySimulator.step: one control period at a time, the same physics and noise as follow()."""

import math

import numpy as np
import pytest
from sim_data import PAPER_EXTENT, TASK_EXTENT

from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.simulator import SurveySimulator, lower_right_start
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import VehicleConfig

TERRAIN = default_terrain(PAPER_EXTENT)
START = lower_right_start(TASK_EXTENT)
WAYPOINTS = np.array([[-30, -30], [-30, -20], [30, -20], [-5, -5], [-5, -5.05]], dtype=float)


def simulator(seed=0, sonar_rate=3.0):
    return SurveySimulator(TERRAIN, VehicleConfig(), SonarConfig(rate=sonar_rate), seed, START)


def step_through(sim, waypoints):
    """follow()'s rule by hand: skip waypoints within the goal radius, step towards the next."""
    logs = [sim.sound_due()]
    radius = sim.vehicle.config.goal_radius
    for goal in waypoints.tolist():
        while math.hypot(goal[0] - sim.pose[0], goal[1] - sim.pose[1]) > radius:
            logs.append(sim.step(goal))
    return logs


@pytest.mark.parametrize("sonar_rate", [3.0, 7.0, 25.0])
def test_stepping_reproduces_follow_bit_for_bit(sonar_rate):
    reference = simulator(seed=4, sonar_rate=sonar_rate)
    log = reference.follow(WAYPOINTS)
    sim = simulator(seed=4, sonar_rate=sonar_rate)
    logs = step_through(sim, WAYPOINTS)
    for field in ("times", "positions", "elevations", "ranges", "true_elevations"):
        np.testing.assert_array_equal(np.concatenate([getattr(p, field) for p in logs]),
                                      getattr(log, field), err_msg=field)
    poses = np.vstack([logs[0].poses] + [p.poses[1:] for p in logs[1:]])
    np.testing.assert_array_equal(poses, log.poses)
    assert sim.time == reference.time and sim.pose == reference.pose
    assert sim.steps == len(log.poses) - 1


def test_step_returns_its_segment_and_only_new_soundings():
    sim = simulator()
    first = sim.step((0.0, 0.0))
    assert first.times.tolist() == [0.0]  # the sounding at t = 0, at the start pose
    np.testing.assert_allclose(first.pose_times, [0.0, 0.1])
    assert tuple(first.poses[0]) == START and tuple(first.poses[1]) == sim.pose
    assert len(sim.sound_due()) == 0
    counts = [len(sim.step((0.0, 0.0))) for _ in range(30)]
    assert sum(counts) == 9  # 3 Hz over 3 s, the one at t = 3.0 s included
    assert set(counts) == {0, 1}


def test_holding_keeps_the_pose_and_the_sonar_running():
    sim = simulator()
    for _ in range(20):
        log = sim.step(None)
    assert sim.pose == START and math.isclose(sim.time, 2.0)
    assert np.array_equal(log.poses[0], log.poses[1])
    np.testing.assert_allclose(log.positions, [START[:2]] * len(log))


def test_a_step_off_the_terrain_sounds_nothing_there():
    flat = Terrain(np.zeros((4, 4)), (-10.0, 0.0, -10.0, 10.0))
    sim = SurveySimulator(flat, start_pose=(0.0, 0.0, 0.0), sonar_config=SonarConfig(rate=10.0))
    sim.sound_due()
    log = sim.step((5.0, 0.0))  # the goal is off the terrain too: the caller's check
    assert sim.pose[0] > 0.0 and sim.steps == 1
    assert len(log) and (log.positions[:, 0] > 0.0).all()
    assert np.isposinf(log.ranges).all() and np.isnan(log.elevations).all()
