"""SurveySimulator: sonar clock in sim time, limits, persistence, reproducibility, errors."""

import math

import numpy as np
import pytest
from sim_data import PAPER_EXTENT, TASK_EXTENT

from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.simulator import SimulationError, SurveySimulator, lower_right_start
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import Terrain, TerrainError
from poam_ros.sim.vehicle import VehicleConfig

TERRAIN = default_terrain(PAPER_EXTENT)
START = lower_right_start(TASK_EXTENT)
# A lawnmower over the task area with a few diagonal legs.
WAYPOINTS = np.array([[-30, -30], [-30, -20], [30, -20], [30, -10], [-30, -10], [0, 30],
                      [25, 25], [-5, -5]], dtype=float)


def simulator(seed=0, **vehicle):
    return SurveySimulator(TERRAIN, VehicleConfig(**vehicle), SonarConfig(), seed, START)


@pytest.fixture(scope="module")
def survey():
    sim = simulator()
    return sim, sim.follow(WAYPOINTS)


def test_paper_start_pose():
    assert START == (30.0, -30.0, math.pi)


def test_soundings_at_exactly_three_hertz_in_sim_time(survey):
    sim, log = survey
    assert len(log) == math.floor(sim.time * 3.0 + 1e-9) + 1  # the first at t = 0
    np.testing.assert_allclose(log.times, np.arange(len(log)) / 3.0, rtol=0, atol=1e-9)
    assert log.times[-1] <= sim.time < log.times[-1] + 1.0 / 3.0


def test_soundings_lie_on_the_trajectory(survey):
    _, log = survey
    for axis in (0, 1):
        on_path = np.interp(log.times, log.pose_times, log.poses[:, axis])
        np.testing.assert_allclose(log.positions[:, axis], on_path, atol=1e-9)
    np.testing.assert_allclose(log.positions[0], START[:2])


def test_vehicle_limits_are_never_exceeded(survey):
    _, log = survey
    dt = np.diff(log.pose_times)
    np.testing.assert_allclose(dt, 0.1)
    speed = np.hypot(*np.diff(log.poses[:, :2], axis=0).T) / dt
    yaw_rate = np.abs(np.angle(np.exp(1j * np.diff(log.poses[:, 2])))) / dt
    assert speed.max() <= 1.0 + 1e-9 and yaw_rate.max() <= 1.0 + 1e-9
    assert np.all((-math.pi < log.poses[:, 2]) & (log.poses[:, 2] <= math.pi))


def test_turns_at_task_corners_stay_on_the_map(survey):
    # The paper keeps 1 m between the task area and the map's edge; turns need less.
    _, log = survey
    assert np.abs(log.poses[:, :2]).max() < 30.75


def test_every_waypoint_is_reached_in_order(survey):
    sim, log = survey
    step = 0
    for waypoint in WAYPOINTS:
        distances = np.hypot(*(log.poses[step:, :2] - waypoint).T)
        step += int(np.argmax(distances <= 0.1))
        assert distances.min() <= 0.1
    assert math.dist(sim.pose[:2], WAYPOINTS[-1]) <= 0.1


def test_noise_is_gaussian_with_unit_std():
    sim = simulator(seed=3)
    log = sim.follow(np.random.default_rng(3).uniform(-30, 30, (60, 2)))
    noise = log.elevations - log.true_elevations
    assert len(log) > 3000
    assert abs(noise.std() - 1.0) < 0.05 and abs(noise.mean()) < 0.05
    np.testing.assert_allclose(log.ranges, 300.0 - log.elevations)
    np.testing.assert_allclose(log.true_elevations, TERRAIN.elevation(log.positions))


def test_same_seed_same_log_other_seed_other_noise(survey):
    _, log = survey
    again = simulator(seed=0).follow(WAYPOINTS)
    other = simulator(seed=1).follow(WAYPOINTS)
    for field in ("times", "positions", "elevations", "ranges", "pose_times", "poses"):
        np.testing.assert_array_equal(getattr(again, field), getattr(log, field))
    np.testing.assert_array_equal(other.positions, log.positions)
    assert not np.allclose(other.elevations, log.elevations)


def test_time_pose_and_clock_persist_across_calls(survey):
    _, whole = survey
    sim = simulator()
    parts = [sim.follow(WAYPOINTS[:3]), sim.follow(WAYPOINTS[3:5]), sim.follow(WAYPOINTS[5:])]
    np.testing.assert_allclose(np.concatenate([p.times for p in parts]), whole.times)
    np.testing.assert_allclose(np.concatenate([p.positions for p in parts]), whole.positions)
    assert parts[1].pose_times[0] == parts[0].pose_times[-1]
    np.testing.assert_array_equal(parts[1].poses[0], parts[0].poses[-1])


def test_waypoint_outside_is_refused_before_moving():
    sim = simulator()
    with pytest.raises(TerrainError, match=r"1 waypoint\(s\) outside .* #1 \(40, 0\)"):
        sim.follow([[0.0, 0.0], [40.0, 0.0]])
    assert sim.time == 0.0 and sim.pose == START
    with pytest.raises(TerrainError, match=r"\(N, 2\) array"):
        sim.follow([1.0, 2.0])
    with pytest.raises(ValueError, match="at least one waypoint"):
        sim.follow(np.empty((0, 2)))


def test_start_outside_is_refused():
    with pytest.raises(TerrainError, match=r"start position\(s\) outside .*\(32, 0\)"):
        SurveySimulator(TERRAIN, start_pose=(32.0, 0.0, 0.0))


def test_default_start_is_the_terrain_corner():
    assert SurveySimulator(TERRAIN).pose == (31.0, -31.0, math.pi)


def test_unreachable_waypoint_stops_with_the_simulator_unchanged():
    sim = simulator(speed_gain=0.001)  # crawls: far slower than the leg time allows
    with pytest.raises(SimulationError, match=r"waypoint #0 \(-30, -30\) not reached within "
                                              r"\d+ control steps"):
        sim.follow(WAYPOINTS)
    assert sim.time == 0.0 and sim.pose == START


def test_swinging_beyond_the_terrain_sounds_nothing_there_and_the_survey_goes_on():
    # Starting on the eastern edge heading east-south-east, the turn towards a goal due
    # north swings the vehicle beyond the edge.
    flat = Terrain(np.zeros((4, 4)), (-10.0, 0.0, -10.0, 10.0))
    log = SurveySimulator(flat, start_pose=(0.0, 0.0, -0.26)).follow([[0.0, 9.0]])
    off = log.positions[:, 0] > 0.0
    assert off.any() and not off.all()
    assert np.isposinf(log.ranges[off]).all() and np.isnan(log.elevations[off]).all()
    # Over the terrain, the soundings of a vehicle on a terrain reaching further east.
    wide = Terrain(np.zeros((4, 4)), (-10.0, 10.0, -10.0, 10.0))
    reference = SurveySimulator(wide, start_pose=(0.0, 0.0, -0.26)).follow([[0.0, 9.0]])
    np.testing.assert_array_equal(log.positions, reference.positions)
    np.testing.assert_array_equal(log.ranges[~off], reference.ranges[~off])


def test_a_five_thousand_sounding_mission_completes():
    # Behaviour, not timing (about 17,000 control steps).
    sim = simulator(seed=5)
    rng = np.random.default_rng(5)
    soundings = 0
    while soundings < 5000:
        soundings += len(sim.follow(rng.uniform(-30, 30, (5, 2))))
    assert soundings >= 5000
