"""Survey simulator: drive the AUV through waypoints in sim time and sound the seafloor.

Sim time advances one control period per step. The sonar keeps its own clock: sounding
``k`` happens at exactly ``k / sonar rate`` seconds (the first at t = 0, at the start
pose), at the point the vehicle passes at that instant, so soundings arrive at exactly the
sonar rate whatever the control rate. Time, pose and the clock persist across
:meth:`SurveySimulator.follow` calls, one per decision epoch of the mission loop.

:meth:`SurveySimulator.step` advances one control period at a time instead, towards a goal
or holding position, so that a caller (the simulated AUV node in real-time mode) can change
the goal between steps. Stepping through the waypoints as :meth:`follow` does (skip every
waypoint already within the goal radius, then step towards the next) gives the same poses
and soundings, noise included, bit for bit: both make the same arithmetic in the same order
and draw the noise in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from poam_ros.params import ConfigError
from poam_ros.sim.depth_keeping import HeightKeeper
from poam_ros.sim.sonar import SingleBeamSonar, SonarConfig
from poam_ros.sim.terrain import Terrain, check_extent
from poam_ros.sim.vehicle import Pose, Unicycle, VehicleConfig, wrap_angle

# Slack when comparing a sounding instant with the time after a step; both are products of
# integer counts and periods, so they agree far more closely than this when they coincide.
CLOCK_TOLERANCE = 1e-9


class SimulationError(RuntimeError):
    """The vehicle could not do what it was asked; the message says where and when."""


@dataclass(frozen=True)
class SurveyLog:
    """What one :meth:`SurveySimulator.follow` call produced.

    Soundings (N of them): ``times`` (N,) s, ``positions`` (N, 2) m, measured ``elevations``
    and ``ranges`` (N,), and the noise-free ``true_elevations`` (N,); off the terrain a
    sounding returns nothing (range +inf, elevations NaN). Trajectory (M poses,
    from the start of the call, one per control step): ``pose_times`` (M,) s and ``poses``
    (M, 3) as (x m, y m, yaw rad); ``heights`` (M,) m is the vehicle's z at each pose.
    """

    times: np.ndarray
    positions: np.ndarray
    elevations: np.ndarray
    ranges: np.ndarray
    true_elevations: np.ndarray
    pose_times: np.ndarray
    poses: np.ndarray
    heights: np.ndarray

    def __len__(self) -> int:
        return len(self.times)


def lower_right_start(task_extent: Sequence[float]) -> Pose:
    """The POAM paper's start: the task area's lower-right corner, facing west (yaw π)."""
    _, xmax, ymin, _ = check_extent(task_extent)
    return xmax, ymin, math.pi


class SurveySimulator:
    """An AUV with an echo sounder surveying ``terrain``, reproducible from ``seed``.

    Args:
        terrain: the seafloor; the vehicle must stay over it.
        vehicle_config: limits and gains; defaults to :class:`VehicleConfig`.
        sonar_config: rate, noise and range limits; defaults to :class:`SonarConfig`.
        seed: seeds the sonar noise.
        start_pose: (x m, y m, yaw rad); defaults to the terrain's lower-right corner
            facing west. See :func:`lower_right_start` for the paper's start.
    """

    def __init__(self, terrain: Terrain, vehicle_config: VehicleConfig | None = None,
                 sonar_config: SonarConfig | None = None, seed: int = 0,
                 start_pose: Sequence[float] | None = None) -> None:
        self.terrain = terrain
        self.vehicle = Unicycle(vehicle_config or VehicleConfig())
        self.height = HeightKeeper(self.vehicle.config, terrain)
        sonar_config = sonar_config or SonarConfig()
        if self.height.constant is None:
            altitude = self.vehicle.config.altitude
            if not sonar_config.min_range <= altitude <= sonar_config.max_range:
                raise ConfigError(f"VehicleConfig.altitude={altitude:g} m lies outside the "
                                  f"sonar's [{sonar_config.min_range:g}, "
                                  f"{sonar_config.max_range:g}] m range limits")
        self.sonar = SingleBeamSonar(terrain, sonar_config, self.height.constant,
                                     np.random.default_rng(seed))
        if start_pose is None:
            start_pose = lower_right_start(terrain.extent)
        x, y, yaw = (float(v) for v in start_pose)
        if not math.isfinite(yaw):
            raise SimulationError(f"start yaw must be finite, got {yaw}")
        terrain.require_inside([[x, y]], "start position")
        self._pose: Pose = (x, y, wrap_angle(yaw))
        self._z = self.height.height(x, y)
        self._steps = 0
        self._soundings = 0

    @property
    def time(self) -> float:
        """Sim time in seconds since the start."""
        return self._steps * self.vehicle.dt

    @property
    def steps(self) -> int:
        """Control steps taken since the start; :attr:`time` is ``steps * dt``."""
        return self._steps

    @property
    def pose(self) -> Pose:
        """Current (x m, y m, yaw rad)."""
        return self._pose

    @property
    def z(self) -> float:
        """Current height in metres (map frame, up)."""
        return self._z

    def _moved(self, pose: Pose, command: tuple[float, float]) -> tuple[Pose, float]:
        """The pose and height one control step after ``pose`` under ``command``."""
        after = self.vehicle.step(pose, *command)
        return after, self.height.height(after[0], after[1])

    def follow(self, waypoints) -> SurveyLog:
        """Drive through the (K, 2) ``waypoints`` in order, sounding at the sonar rate.

        Raises:
            TerrainError: a waypoint outside the terrain (checked before moving).
            SimulationError: a waypoint not reached in time.
            Either way the simulator is left as it was before the call. A vehicle that swings
            beyond the terrain's edge on its way sounds nothing there (see
            :meth:`SingleBeamSonar.measure`).
        """
        goals = self.terrain.require_inside(waypoints, "waypoint")
        if not len(goals):
            raise ValueError("follow() needs at least one waypoint, got none")
        vehicle, dt = self.vehicle, self.vehicle.dt
        radius = vehicle.config.goal_radius
        pose, z, steps, soundings = self._pose, self._z, self._steps, self._soundings
        poses, heights = [pose], [z]
        sound_times, sound_xs, sound_ys, sound_zs, soundings = self._due(
            steps * dt, soundings, (pose, z), (pose, z), 1.0)
        for index, (goal_x, goal_y) in enumerate(goals.tolist()):
            distance = math.hypot(goal_x - pose[0], goal_y - pose[1])
            limit = vehicle.leg_step_limit(distance)
            for _ in range(limit):
                if distance <= radius:
                    break
                before = (pose, z)
                pose, z = self._moved(pose, vehicle.go_to_goal(pose, goal_x, goal_y))
                poses.append(pose)
                heights.append(z)
                steps += 1
                # Soundings due during this step lie on its straight segment.
                times, xs, ys, zs, soundings = self._due(steps * dt, soundings, before,
                                                         (pose, z), dt)
                sound_times += times
                sound_xs += xs
                sound_ys += ys
                sound_zs += zs
                distance = math.hypot(goal_x - pose[0], goal_y - pose[1])
            if distance > radius:
                raise SimulationError(
                    f"waypoint #{index} ({goal_x:g}, {goal_y:g}) not reached within {limit} "
                    f"control steps; the vehicle is still {distance:.3g} m away at "
                    f"({pose[0]:.3g}, {pose[1]:.3g})")

        start_step = self._steps
        log = self._log(sound_times, sound_xs, sound_ys, sound_zs,
                        (start_step + np.arange(len(poses))) * dt, poses, heights)
        self._pose, self._z, self._steps, self._soundings = pose, z, steps, soundings
        return log

    def sound_due(self) -> SurveyLog:
        """The soundings due at the current time and not yet taken, without moving.

        Only the first call (the sounding at t = 0) or one after a sonar clock change can
        find any; :meth:`step` takes them itself, so this matters when the vehicle has a
        plan it need not move for. ``poses`` holds the current pose alone.
        """
        pose, z, t = self._pose, self._z, self.time
        times, xs, ys, zs, soundings = self._due(t, self._soundings, (pose, z), (pose, z), 1.0)
        log = self._log(times, xs, ys, zs, [t], [pose], [z])
        self._soundings = soundings
        return log

    def step(self, goal: Sequence[float] | None = None) -> SurveyLog:
        """Advance one control period towards ``goal`` (x m, y m), or hold when it is None.

        Holding commands zero speed and yaw rate: time runs, the vehicle stays and keeps
        sounding where it is. Returns the soundings due up to the new time (those due
        before the step first, as :meth:`follow` takes them) and the poses before and after
        the step (``pose_times`` (2,), ``poses`` (2, 3)). The goal is not checked against
        the terrain; a caller checks its plan once (:meth:`Terrain.require_inside`). Off
        the terrain the sonar returns nothing (see :meth:`SingleBeamSonar.measure`).
        """
        vehicle, dt = self.vehicle, self.vehicle.dt
        pose, z, steps = self._pose, self._z, self._steps
        t = steps * dt
        times, xs, ys, zs, soundings = self._due(t, self._soundings, (pose, z), (pose, z), 1.0)
        if goal is None:
            command = (0.0, 0.0)
        else:
            goal_x, goal_y = (float(v) for v in goal)
            command = vehicle.go_to_goal(pose, goal_x, goal_y)
        after, z_after = self._moved(pose, command)
        t_after = (steps + 1) * dt
        more_times, more_xs, more_ys, more_zs, soundings = self._due(
            t_after, soundings, (pose, z), (after, z_after), dt)
        log = self._log(times + more_times, xs + more_xs, ys + more_ys, zs + more_zs,
                        [t, t_after], [pose, after], [z, z_after])
        self._pose, self._z, self._steps, self._soundings = after, z_after, steps + 1, soundings
        return log

    def _due(self, t: float, soundings: int, before: tuple[Pose, float],
             after: tuple[Pose, float], dt: float
             ) -> tuple[list[float], list[float], list[float], list[float], int]:
        """Soundings due by time ``t`` from count ``soundings`` on, at the points of the
        segment ``before`` -> ``after`` ((pose, height) each) that ends at ``t`` and lasts
        ``dt``: their times, x, y, z and the new count. :meth:`follow` and :meth:`step` both
        use it, so the positions agree to the last bit."""
        period = 1.0 / self.sonar.config.rate
        (x0, y0, _), z0 = before
        (x1, y1, _), z1 = after
        times, xs, ys, zs = [], [], [], []
        while soundings * period <= t + CLOCK_TOLERANCE:
            if before is after:
                xs.append(x0)
                ys.append(y0)
                zs.append(z0)
            else:
                fraction = 1.0 - (t - soundings * period) / dt
                xs.append(x0 + fraction * (x1 - x0))
                ys.append(y0 + fraction * (y1 - y0))
                zs.append(z0 + fraction * (z1 - z0))
            times.append(soundings * period)
            soundings += 1
        return times, xs, ys, zs, soundings

    def _log(self, times, xs, ys, zs, pose_times, poses, heights) -> SurveyLog:
        """Measure at the positions (one noise draw each, in order) and bundle the log."""
        positions = np.column_stack((xs, ys)) if xs else np.empty((0, 2))
        measured = self.sonar.measure(positions, np.asarray(zs, dtype=float))
        return SurveyLog(
            times=np.asarray(times, dtype=float), positions=positions,
            elevations=measured.elevation, ranges=measured.range,
            true_elevations=measured.true_elevation,
            pose_times=np.asarray(pose_times, dtype=float), poses=np.asarray(poses),
            heights=np.asarray(heights, dtype=float))
