"""AUV kinematics: a unicycle (Dubins car) in the horizontal, a go-to-goal controller, and
the forward path such a vehicle flies to a goal.

A pose is ``(x, y, yaw)``: metres in the map frame and radians from the x (east) axis,
counter-clockwise, wrapped to (-π, π]. The height the vehicle holds (a plane, a depth or an
altitude above the terrain) is :class:`~poam_ros.sim.depth_keeping.HeightKeeper`'s; an
optional roll and pitch oscillation (:meth:`Unicycle.roll_pitch`) exercises the full
attitude of the multibeam. The model is stateless; the simulator owns the pose. Per-step
work uses ``math`` on Python floats because the control loop is sequential and numpy's
per-call overhead would dominate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poam_ros.params import ConfigError, Params, param

Pose = tuple[float, float, float]
VERTICAL_MODES = ("plane", "altitude", "depth")


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
    vertical_mode: str = param("plane", "plane: fly at plane_z (the POAM paper's maps); "
                                        "altitude: hold `altitude` above the terrain, never "
                                        "above the sea surface z = 0 over terrain below it; "
                                        "depth: hold z = -depth", choices=VERTICAL_MODES)
    altitude: float = param(10.0, "commanded height above the terrain (vertical_mode "
                                  "altitude)", unit="m", low=0.0)
    depth: float = param(10.0, "commanded depth below the surface z = 0 (vertical_mode "
                               "depth)", unit="m", low=0.0)
    turning_radius: float = param(0.0, "minimum turning radius of a torpedo-shaped vehicle: it "
                                       "never turns on the spot and keeps moving forward; 0: "
                                       "off (turns in place)", unit="m", low=0.0)
    roll_amplitude: float = param(0.0, "amplitude of a sinusoidal roll oscillation (waves, "
                                       "a test of the swath's attitude); 0: level",
                                  unit="rad", low=0.0, high=1.0)
    pitch_amplitude: float = param(0.0, "amplitude of a sinusoidal pitch oscillation, a "
                                        "quarter period behind the roll", unit="rad", low=0.0,
                                   high=1.0)
    attitude_period: float = param(10.0, "period of the roll and pitch oscillation", unit="s",
                                   low=0.01)

    @property
    def turn_radius(self) -> float:
        """Radius of the tightest turn at cruise speed (m): ``turning_radius``, or the radius
        ``max_speed / max_yaw_rate`` if that is wider; 0 without a turning radius."""
        if self.turning_radius == 0.0:
            return 0.0
        return max(self.turning_radius, self.max_speed / self.max_yaw_rate)

    def validate(self) -> None:
        if self.turning_radius > 0.0 and self.reverse:
            raise ConfigError("VehicleConfig.reverse does not apply to a vehicle with a "
                              "turning_radius (it only moves forward)")
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

    With a turning radius ``R`` (:attr:`VehicleConfig.turn_radius`) the vehicle never stops
    to turn: ``speed = max_speed * tanh(speed_gain * d)`` and ``|yaw_rate| <= speed / R``,
    so its path curves at most 1/R whatever its speed. It turns towards the goal's side, or
    away from it when the goal lies inside that side's turning circle (unreachable by a
    turn that way), and flies the turn-then-straight path :func:`forward_path_length`
    measures (the proportional heading law shortens the turn's end by a little).

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
        if self.config.turning_radius > 0.0:
            return self._turn_limited(ahead, left)
        speed = self.config.max_speed * math.tanh(self.config.speed_gain * ahead)
        if not self.config.reverse:
            # cos e, floored at zero so that a goal behind gives zero speed, not a positive one.
            distance = math.hypot(dx, dy)
            speed *= max(ahead, 0.0) / distance if distance > 0.0 else 0.0
        return self.limited(speed, self.config.heading_gain * math.atan2(left, ahead))

    def _turn_limited(self, ahead: float, left: float) -> tuple[float, float]:
        """The forward-only command of a vehicle with a turning radius (class docstring)."""
        config = self.config
        speed = config.max_speed * math.tanh(config.speed_gain * math.hypot(ahead, left))
        bearing = math.atan2(left, ahead)
        side = float(turn_side(ahead, left, config.turn_radius))
        if side * bearing >= 0.0:
            yaw_rate = config.heading_gain * bearing
        else:  # the goal is inside the turning circle on its side: turn the other way
            yaw_rate = side * config.max_yaw_rate
        return self.limited(speed, yaw_rate)

    def limited(self, speed: float, yaw_rate: float) -> tuple[float, float]:
        """The command clipped to speed in [0, max_speed] ([-max_speed, max_speed] with
        ``reverse``) and |yaw rate| <= max_yaw_rate (and <= speed / turn radius with one)."""
        max_speed, max_yaw_rate = self.config.max_speed, self.config.max_yaw_rate
        min_speed = -max_speed if self.config.reverse else 0.0
        speed = min(max(speed, min_speed), max_speed)
        if self.config.turning_radius > 0.0:
            max_yaw_rate = min(max_yaw_rate, speed / self.config.turn_radius)
        return speed, min(max(yaw_rate, -max_yaw_rate), max_yaw_rate)

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
        config = self.config
        # With a turning radius the turn-then-straight path is at most a full circle longer.
        path = distance + math.tau * config.turn_radius
        nominal = path / config.max_speed + math.pi / config.max_yaw_rate
        return math.ceil(config.leg_time_factor * nominal / self.dt)

    def roll_pitch(self, t: float) -> tuple[float, float]:
        """(roll, pitch) rad at sim time ``t`` s: ``roll_amplitude sin(2π t / T)`` and
        ``pitch_amplitude cos(2π t / T)`` with T = ``attitude_period`` (both 0 by default)."""
        config = self.config
        if config.roll_amplitude == 0.0 and config.pitch_amplitude == 0.0:
            return 0.0, 0.0
        phase = math.tau * t / config.attitude_period
        return config.roll_amplitude * math.sin(phase), config.pitch_amplitude * math.cos(phase)


def turn_side(ahead, left, radius: float):
    """+1 (left, counter-clockwise) or -1 (right), elementwise: the way a forward-only vehicle
    with turning radius ``radius`` turns towards a goal ``ahead`` m in front and ``left`` m to
    its left. The goal's side, unless the goal lies inside that side's turning circle (centre
    ``radius`` to that side), which no turn that way reaches: then the other side."""
    side = np.where(np.asarray(left) >= 0.0, 1.0, -1.0)
    return np.where(np.square(ahead) + np.square(left) < 2.0 * radius * side * left, -side,
                    side)


def forward_path_length(pose: Pose, goals: np.ndarray, radius: float) -> np.ndarray:
    """(N,) length in metres of the path a forward-only vehicle at ``pose`` flies to each of
    the (N, 2) ``goals`` with turning radius ``radius`` (m): a turn of radius ``radius`` on
    the side :func:`turn_side` picks, then the straight tangent to the goal. 0 gives the
    Euclidean distance.

    In the vehicle's frame with the turn mirrored to the left, the turning circle has its
    centre at c = (0, R); a goal g outside it at distance ``dc = |g - c| >= R`` is left along
    the tangent of length ``sqrt(dc² - R²)`` after an arc of angle ``α = (β + π/2) mod 2π``,
    where ``β = atan2(g - c) - acos(R / dc)`` is the tangent point's angle about c. Length
    ``R α + sqrt(dc² - R²)`` (Dubins' CS path to a point, without a final heading).
    """
    goals = np.asarray(goals, dtype=float)
    x, y, yaw = pose
    dx, dy = goals[:, 0] - x, goals[:, 1] - y
    if radius == 0.0:
        return np.hypot(dx, dy)
    cos_yaw, sin_yaw = math.cos(yaw), math.sin(yaw)
    ahead = cos_yaw * dx + sin_yaw * dy
    left = cos_yaw * dy - sin_yaw * dx
    side = turn_side(ahead, left, radius)
    mirrored = side * left  # the goal's offset towards the turn
    centre_dx, centre_dy = ahead, mirrored - radius
    dc = np.maximum(np.hypot(centre_dx, centre_dy), radius)  # rounding on the circle itself
    beta = np.arctan2(centre_dy, centre_dx) - np.arccos(radius / dc)
    alpha = np.mod(beta + 0.5 * math.pi, math.tau)
    # A goal dead ahead on the turn's side needs no turn; rounding can put it a hair
    # short of a full circle instead.
    alpha = np.where((mirrored >= 0.0) & (alpha > math.tau - 1e-9), 0.0, alpha)
    return radius * alpha + np.sqrt(dc ** 2 - radius ** 2)
