"""AUV kinematics on a horizontal plane: a unicycle (Dubins car) and a go-to-goal controller.

A pose is ``(x, y, yaw)``: metres in the map frame and radians from the x (east) axis,
counter-clockwise, wrapped to (-π, π]. The model is stateless; the simulator owns the
pose. Per-step work uses ``math`` on Python floats because the control loop is
sequential and numpy's per-call overhead would dominate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from poam_ros.params import ConfigError, Params, param

Pose = tuple[float, float, float]


def wrap_angle(angle: float) -> float:
    """``angle`` wrapped to (-π, π] radians."""
    wrapped = math.remainder(angle, math.tau)
    return math.pi if wrapped == -math.pi else wrapped


@dataclass
class VehicleConfig(Params):
    """Motion limits and controller gains of the simulated AUV (defaults: the POAM paper)."""

    control_rate: float = param(10.0, "control steps per second of simulated time",
                                unit="Hz", low=0.1, high=1000.0)
    max_speed: float = param(1.0, "speed limit", unit="m/s", low=0.001)
    max_yaw_rate: float = param(1.0, "yaw rate limit", unit="rad/s", low=0.001)
    goal_radius: float = param(0.1, "distance at which a waypoint counts as reached",
                               unit="m", low=0.001)
    speed_gain: float = param(3.0, "k in speed = max_speed * tanh(k * goal distance ahead) "
                                   "(* cos(goal bearing) unless reverse)", unit="1/m",
                              low=0.001)
    heading_gain: float = param(1.0, "yaw rate per radian of heading error, before the limit",
                                unit="1/s", low=0.001)
    plane_z: float = param(300.0, "height of the horizontal plane the vehicle moves in; must "
                                  "lie above the highest terrain", unit="m")
    leg_time_factor: float = param(5.0, "a waypoint must be reached within this multiple of "
                                         "distance/max_speed + pi/max_yaw_rate", low=1.0)
    reverse: bool = param(False, "back towards a goal behind while turning (the POAM "
                                 "authors' simulated robot); false: forward only, turning in "
                                 "place")

    def validate(self) -> None:
        dt = 1.0 / self.control_rate
        if self.heading_gain * dt > 1.0:
            raise ConfigError(f"VehicleConfig.heading_gain * control period must be <= 1 so a "
                              f"step never turns past the goal, got {self.heading_gain * dt:g}")
        if self.max_speed * self.speed_gain * dt >= 2.0:
            raise ConfigError(f"VehicleConfig.max_speed * speed_gain * control period must "
                              f"be < 2 so a step never overshoots the goal, got "
                              f"{self.max_speed * self.speed_gain * dt:g}")


class Unicycle:
    """Unicycle kinematics stepped at the control rate, and a go-to-goal controller.

    Controller, with the goal at distance ``d``, bearing ``e`` and ``ahead = d cos e`` in
    front of the vehicle::

        speed    = max_speed * tanh(speed_gain * ahead) * cos e   clipped to [0, max_speed]
        yaw_rate = heading_gain * e                               clipped to ±max_yaw_rate

    The ``tanh`` slows the vehicle near the goal. The ``cos e`` factor slows it while it
    still has to turn, so a 90° turn at a waypoint swings out about 0.7 m rather than a
    full turning radius (max_speed / max_yaw_rate); the POAM paper keeps 1 m between its
    task area and the map's edge. A goal behind gives zero speed: the vehicle turns in place.

    With ``reverse`` the speed is ``max_speed * tanh(speed_gain * ahead)`` clipped to
    ±max_speed, the POAM authors' controller: a goal behind makes the vehicle back towards
    it while it turns round, so no time (and no sonar ping) is spent turning on the spot.

    Why it cannot orbit a goal: a step moves ``s = |speed| * dt <= max_speed * speed_gain *
    dt * |ahead| < 2 * |ahead|`` (the validated bound) along ``ahead``'s sign, and the squared
    distance changes by ``s**2 - 2 * s * |ahead| < 0``, so every moving step gets strictly
    closer; a turn never passes the bearing since ``heading_gain * dt <= 1``.
    :meth:`leg_step_limit` bounds the steps a leg may take.
    """

    def __init__(self, config: VehicleConfig) -> None:
        self.config = config
        self.dt = 1.0 / config.control_rate

    def go_to_goal(self, pose: Pose, goal_x: float, goal_y: float) -> tuple[float, float]:
        """(speed m/s, yaw rate rad/s) that steer ``pose`` towards the goal, within limits."""
        x, y, yaw = pose
        dx, dy = goal_x - x, goal_y - y
        cos_yaw, sin_yaw = math.cos(yaw), math.sin(yaw)
        ahead = cos_yaw * dx + sin_yaw * dy
        left = cos_yaw * dy - sin_yaw * dx
        speed = self.config.max_speed * math.tanh(self.config.speed_gain * ahead)
        if not self.config.reverse:
            # cos e, floored at zero so that a goal behind gives zero speed, not a positive one.
            distance = math.hypot(dx, dy)
            speed *= max(ahead, 0.0) / distance if distance > 0.0 else 0.0
        return self.limited(speed, self.config.heading_gain * math.atan2(left, ahead))

    def limited(self, speed: float, yaw_rate: float) -> tuple[float, float]:
        """The command clipped to speed in [0, max_speed] ([-max_speed, max_speed] with
        ``reverse``) and |yaw rate| <= max_yaw_rate."""
        max_speed, max_yaw_rate = self.config.max_speed, self.config.max_yaw_rate
        min_speed = -max_speed if self.config.reverse else 0.0
        return (min(max(speed, min_speed), max_speed),
                min(max(yaw_rate, -max_yaw_rate), max_yaw_rate))

    def step(self, pose: Pose, speed: float, yaw_rate: float) -> Pose:
        """The pose one control period later (explicit Euler: move along yaw, then turn).

        The command is clipped to the limits first, so any caller (a controller or an
        external velocity command) moves the vehicle within them.
        """
        speed, yaw_rate = self.limited(speed, yaw_rate)
        x, y, yaw = pose
        step = speed * self.dt
        return (x + step * math.cos(yaw), y + step * math.sin(yaw),
                wrap_angle(yaw + yaw_rate * self.dt))

    def leg_step_limit(self, distance: float) -> int:
        """Control steps a leg of ``distance`` metres may take before it counts as failed."""
        nominal = distance / self.config.max_speed + math.pi / self.config.max_yaw_rate
        return math.ceil(self.config.leg_time_factor * nominal / self.dt)
