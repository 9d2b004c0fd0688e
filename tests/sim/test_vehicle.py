"""Unicycle limits, angle wrapping and go-to-goal convergence from random starts."""

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim.vehicle import Unicycle, VehicleConfig, wrap_angle


@pytest.mark.parametrize("angle, wrapped", [
    (0.0, 0.0), (math.pi, math.pi), (-math.pi, math.pi), (3 * math.pi, math.pi),
    (-1.5 * math.pi, 0.5 * math.pi), (2 * math.pi + 0.1, 0.1), (-0.1, -0.1),
])
def test_wrap_angle(angle, wrapped):
    assert wrap_angle(angle) == pytest.approx(wrapped)


def test_wrap_angle_range():
    for angle in np.random.default_rng(0).uniform(-50, 50, 1000):
        wrapped = wrap_angle(angle)
        assert -math.pi < wrapped <= math.pi
        assert math.remainder(wrapped - angle, math.tau) == pytest.approx(0.0, abs=1e-9)


def test_step_clips_commands_to_the_limits():
    vehicle = Unicycle(VehicleConfig(max_speed=1.0, max_yaw_rate=1.0, control_rate=10.0))
    x, y, yaw = vehicle.step((0.0, 0.0, 0.0), 50.0, -50.0)
    assert (x, y, yaw) == pytest.approx((0.1, 0.0, -0.1))
    assert vehicle.step((0.0, 0.0, 0.0), -3.0, 0.0) == (0.0, 0.0, 0.0)  # never reverses


def test_goal_behind_turns_in_place():
    vehicle = Unicycle(VehicleConfig())
    speed, yaw_rate = vehicle.go_to_goal((0.0, 0.0, 0.0), -5.0, 0.1)
    assert speed == 0.0 and yaw_rate == pytest.approx(1.0)


@pytest.mark.parametrize("values, message", [
    ({"heading_gain": 20.0}, "heading_gain .* must be <= 1"),
    ({"speed_gain": 25.0}, "max_speed \\* speed_gain .* must be < 2"),
    ({"max_speed": 0.0}, "max_speed must be >= 0.001"),
    ({"goal_radius": "0.1"}, "goal_radius must be of type float"),
])
def test_bad_config(values, message):
    with pytest.raises(ConfigError, match=message):
        VehicleConfig.from_dict(values)


def test_with_reverse_a_goal_behind_is_backed_towards_while_turning():
    vehicle = Unicycle(VehicleConfig(reverse=True, max_yaw_rate=math.pi))
    speed, yaw_rate = vehicle.go_to_goal((0.0, 0.0, 0.0), -5.0, 0.1)
    assert speed == pytest.approx(-1.0) and yaw_rate == pytest.approx(math.atan2(0.1, -5.0))
    assert vehicle.step((0.0, 0.0, 0.0), -3.0, 0.0) == pytest.approx((-0.1, 0.0, 0.0))
    # Ahead, it drives as the forward-only vehicle does, without slowing for the bearing.
    speed, _ = vehicle.go_to_goal((0.0, 0.0, 0.0), 5.0, 5.0)
    assert speed == pytest.approx(math.tanh(15.0))


@pytest.mark.parametrize("reverse, max_yaw_rate", [(False, 1.0), (True, 1.0), (True, math.pi)])
def test_reaches_random_goals_within_the_step_limit_and_never_recedes(reverse, max_yaw_rate):
    vehicle = Unicycle(VehicleConfig(reverse=reverse, max_yaw_rate=max_yaw_rate))
    rng = np.random.default_rng(42)
    for trial in range(300):
        pose = (*rng.uniform(-30, 30, 2), rng.uniform(-math.pi, math.pi))
        # Half the goals far away, half within a metre (the hard case for orbiting).
        goal = rng.uniform(-30, 30, 2) if trial % 2 else np.add(pose[:2], rng.uniform(-1, 1, 2))
        distance = math.dist(goal, pose[:2])
        for _ in range(vehicle.leg_step_limit(distance)):
            if distance <= vehicle.config.goal_radius:
                break
            pose = vehicle.step(pose, *vehicle.go_to_goal(pose, *goal))
            closer = math.dist(goal, pose[:2])
            assert closer <= distance + 1e-12
            distance = closer
        assert distance <= vehicle.config.goal_radius, f"trial {trial} did not converge"
