"""A torpedo-shaped vehicle: never tighter than its turning radius, never turning on the
spot, and flying the turn-then-straight path whose length the planner uses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim.simulator import SurveySimulator
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import VehicleConfig, forward_path_length, wrap_angle

R = 20.0
FLAT = Terrain(np.zeros((5, 5)), (-200.0, 200.0, -200.0, 200.0))
CONFIG = VehicleConfig(max_speed=1.5, max_yaw_rate=0.5, turning_radius=R, goal_radius=0.5,
                       speed_gain=1.0)


@pytest.mark.parametrize("goal, length", [
    ((50.0, 0.0), 50.0),                                # dead ahead: straight
    ((0.0, 2 * R), math.pi * R),                        # top of the left circle: half a turn
    ((R, R), 0.5 * math.pi * R),                        # a quarter turn
    ((R, -R), 0.5 * math.pi * R),                       # the same to the right
    ((-R, 0.0), 1.5 * math.pi * R + R),                 # behind: 3/4 turn, then R straight
    ((0.0, 3 * R), (2 * math.pi / 3 + math.sqrt(3.0)) * R),
])
def test_forward_path_length_closed_forms(goal, length):
    # (0, 3R): the goal is 2R from the centre (0, R), so the tangent is sqrt(3) R long and
    # touches the circle at beta = 90° - acos(1/2) = 30° about it: a turn of 30° + 90°.
    assert forward_path_length((0.0, 0.0, 0.0), np.array([goal]), R)[0] == \
        pytest.approx(length, rel=1e-12)


def test_forward_path_length_is_invariant_to_the_pose_and_euclidean_without_radius():
    rng = np.random.default_rng(0)
    goals = rng.uniform(-100, 100, (50, 2))
    base = forward_path_length((0.0, 0.0, 0.0), goals, R)
    c, s = math.cos(1.1), math.sin(1.1)
    moved = goals @ np.array([[c, s], [-s, c]]) + [7.0, -3.0]
    np.testing.assert_allclose(forward_path_length((7.0, -3.0, 1.1), moved, R), base,
                               rtol=1e-9)
    assert np.all(base >= np.hypot(*goals.T) - 1e-9)
    np.testing.assert_array_equal(forward_path_length((1.0, 2.0, 0.3), goals, 0.0),
                                  np.hypot(goals[:, 0] - 1.0, goals[:, 1] - 2.0))


@pytest.mark.parametrize("goal", [(-50.0, 5.0), (0.0, 60.0), (100.0, 0.0), (3.0, 1.0)])
def test_the_vehicle_never_turns_tighter_than_its_radius(goal):
    log = SurveySimulator(FLAT, CONFIG, start_pose=(0.0, 0.0, 0.0)).follow([goal])
    steps = np.hypot(*np.diff(log.poses[:, :2], axis=0).T)
    turns = np.abs([wrap_angle(a) for a in np.diff(log.poses[:, 2])])
    assert np.all(steps > 0.0)                       # it never stops to turn
    assert np.all(turns <= steps / R * (1 + 1e-9))   # curvature <= 1/R on every step
    # It flies the turn-then-straight path (less the goal radius and the proportional
    # heading law's rounder end of the turn).
    planned = forward_path_length((0.0, 0.0, 0.0), np.array([goal]), CONFIG.turn_radius)[0]
    assert steps.sum() == pytest.approx(planned, rel=0.01)


def test_a_goal_inside_the_turning_circle_is_reached_by_turning_away():
    log = SurveySimulator(FLAT, CONFIG, start_pose=(0.0, 0.0, 0.0)).follow([[10.0, -15.0]])
    assert np.hypot(*(log.poses[-1, :2] - [10.0, -15.0])) <= CONFIG.goal_radius
    assert log.poses[1, 2] > 0.0  # its first turn is to the left, away from the goal
    steps = np.hypot(*np.diff(log.poses[:, :2], axis=0).T)
    # The turn-then-straight length bounds the path flown from above in this case.
    assert steps.sum() <= forward_path_length((0.0, 0.0, 0.0), np.array([[10.0, -15.0]]),
                                              R)[0]


def test_the_turn_radius_is_the_wider_of_the_radius_and_the_yaw_rate_limit():
    assert CONFIG.turn_radius == R
    assert CONFIG.replace(max_yaw_rate=0.05).turn_radius == pytest.approx(30.0)
    assert VehicleConfig().turn_radius == 0.0


def test_reverse_does_not_apply_with_a_turning_radius():
    with pytest.raises(ConfigError, match="reverse does not apply"):
        VehicleConfig(turning_radius=5.0, reverse=True)
