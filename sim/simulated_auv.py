"""The simulated AUV as a stream of timed events: plans in, odometry and soundings out (no ROS).

:class:`SimulatedAuv` drives a :class:`SurveySimulator` one control step at a time along the
current plan and returns what a vehicle would publish, in time order: an :class:`Odom` per
control step, a :class:`Sounding` per echo-sounder ping, with a multibeam sonar a
:class:`Ping` per swath and, with scalar sensors (a temperature sensor: a second survey
channel), a :class:`Reading` per reading. The ROS node (``simulated_auv_node``) only paces
:meth:`advance` against the wall clock and converts the events to messages.

Two modes:

* ``lockstep``: time advances only while the vehicle has a plan. When the plan's last
  waypoint is reached it holds the clock until the next plan, so a mission over ROS makes
  exactly the poses and soundings of :meth:`SurveySimulator.follow` on the same plans (the
  stepping follows :meth:`follow`'s rule: skip waypoints within the goal radius, step
  towards the next, give up after :meth:`Unicycle.leg_step_limit` steps).
* ``realtime``: time always runs; with no plan the vehicle holds position and keeps
  sounding.

In both modes a new plan replaces the current one at once (between two control steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.multibeam import MultibeamSonar, Swath
from poam_ros.sim.simulator import CLOCK_TOLERANCE, SurveySimulator
from poam_ros.sim.vehicle import Pose, wrap_angle

MODES = ("lockstep", "realtime")


@dataclass
class SimulatedAuvConfig(Params):
    """How the simulated AUV runs: mode, pace, seed, start and frames."""

    mode: str = param("lockstep", "lockstep holds the clock between plans (reproduces the "
                                  "ROS-free mission); realtime always runs it", choices=MODES)
    time_scale: float = param(20.0, "simulated seconds per wall-clock second; 0 runs as fast "
                                    "as possible (max_steps_per_tick bounds each tick)",
                              low=0.0, high=1.0e6)
    seed: int = param(0, "seed of the sonar noise; a mission passes "
                         "mission_seeds(mission.seed)['simulator']", low=0)
    start_pose: list = param([], "start x, y, yaw; empty: the terrain's lower-right corner "
                                 "facing west", unit="m, m, rad")
    world_frame: str = param("map", "frame of odometry poses and plans (REP-105)")
    base_frame: str = param("base_link", "vehicle body frame, odometry child_frame_id")
    sonar_frame: str = param("sonar_link", "frame of sonar/range and sonar/swath: at the "
                                           "vehicle's origin, axes as base_link")
    publish_rate: float = param(100.0, "wall-clock rate of the stepping and publishing timer",
                                unit="Hz", low=1.0, high=1000.0)
    max_steps_per_tick: int = param(20, "most control steps one timer tick makes, so a slow "
                                        "tick cannot burst past the queues' depth", low=1,
                                    high=10000)
    hold_for: list[str] = param(
        ["sensor_ingest"], "lockstep: hold the clock until each of these nodes subscribes to "
        "odom, sonar/range (and sonar/swath, temperature), so that none misses the first "
        "reading; a name starting with / is matched with its namespace; empty: never hold")
    max_backlog: int = param(500, "lockstep: the clock stands while a hold_for node that "
                                  "reports its progress (the ingest's ~/progress) has this "
                                  "many messages of a sensor topic still to take, so that no "
                                  "queue (the ingest's and the publishers': 2,000, or this "
                                  "if more) overflows; 0: never",
                             low=0, high=1000000)

    def validate(self) -> None:
        if self.start_pose and (len(self.start_pose) != 3 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in self.start_pose)):
            raise ConfigError(f"SimulatedAuvConfig.start_pose must be empty or three finite "
                              f"numbers x, y, yaw, got {self.start_pose!r}")
        self.start_pose = [float(v) for v in self.start_pose]
        if not all(isinstance(name, str) and name.strip("/") for name in self.hold_for):
            raise ConfigError(f"SimulatedAuvConfig.hold_for must list node names, got "
                              f"{self.hold_for!r}")

    @property
    def lockstep(self) -> bool:
        """Whether the clock is held between plans (``mode`` lockstep), which the pacing of
        the sensor streams and ``hold_for`` apply to."""
        return self.mode == "lockstep"


class Odom(NamedTuple):
    """Vehicle state at ``t`` s: pose (m, m, rad), the last step's speed and yaw rate, the
    height ``z`` (m, map frame, up) and the attitude's ``roll`` and ``pitch`` (rad)."""

    t: float
    x: float
    y: float
    yaw: float
    speed: float
    yaw_rate: float
    z: float
    roll: float = 0.0
    pitch: float = 0.0


class Sounding(NamedTuple):
    """Echo-sounder range (m, measured, noisy) at ``t`` s, straight down from the vehicle."""

    t: float
    range: float


class Ping(NamedTuple):
    """One multibeam swath at ``t`` s (points in the sensor frame: ``swath.points_sensor``)."""

    t: float
    swath: Swath


class Reading(NamedTuple):
    """A scalar sensor's measured ``value`` at ``t`` s, taken at the vehicle's position
    (``channel`` names the sensor; NaN off the terrain)."""

    t: float
    channel: str
    value: float


class _State(NamedTuple):
    """The vehicle at ``t`` s: pose (x m, y m, yaw rad), height z m, roll and pitch rad."""

    t: float
    pose: Pose
    z: float
    roll: float
    pitch: float


Event = Odom | Sounding | Ping | Reading
_ORDER = {Odom: 0, Sounding: 1, Ping: 2, Reading: 3}  # at equal times: the pose first


class SimulatedAuv:
    """Plans in, time-ordered :data:`Event` lists out; see the module docstring.

    Args:
        simulator: vehicle, echo sounder and clock; the AUV steps it, nothing else should.
        mode: ``lockstep`` or ``realtime``.
        multibeam: optional swath sonar, pinged at ``ping_rate`` Hz of sim time (ping ``k``
            at ``k / ping_rate`` s) at the pose interpolated along the control step. It
            draws from its own generator, so the echo sounder's noise does not depend on it.
        ping_rate: multibeam pings per second of simulated time.
        sensors: scalar sensors (``name``, ``rate`` Hz and ``read(xy)`` -> measured and true
            values, as :class:`~poam_ros.sim.water_temperature.TemperatureSensor`), each
            read at its own clock (reading ``k`` at ``k / rate`` s) at the position
            interpolated along the control step, from its own generator.
    """

    def __init__(self, simulator: SurveySimulator, mode: str = "lockstep",
                 multibeam: MultibeamSonar | None = None, ping_rate: float = 1.0,
                 sensors: Sequence = ()) -> None:
        self.simulator = simulator
        self.mode = mode
        self.multibeam = multibeam
        if not ping_rate > 0:
            raise ValueError(f"ping_rate must be > 0, got {ping_rate}")
        self.ping_period = 1.0 / ping_rate
        self._pings = 0
        self.sensors = list(sensors)
        self._readings = [0] * len(self.sensors)
        self._started = False
        self._plan: list[list[float]] | None = None
        self._index = 0
        self._steps_on_waypoint = 0
        self._step_limit = 0
        self.last_failure: str | None = None
        self.pings_off_terrain = 0

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self._mode = mode

    @property
    def time(self) -> float:
        """Sim time in seconds."""
        return self.simulator.time

    @property
    def pose(self) -> Pose:
        return self.simulator.pose

    @property
    def holding(self) -> bool:
        """True when the vehicle has no plan left (lockstep: the clock is held)."""
        return self._plan is None

    @property
    def progress(self) -> tuple[int, int]:
        """(waypoints reached, waypoints in the plan); (0, 0) without a plan."""
        return (self._index, len(self._plan)) if self._plan is not None else (0, 0)

    def set_plan(self, waypoints) -> None:
        """Replace the plan by ``waypoints`` (K, 2) m; K = 0 cancels it (the vehicle holds).

        Raises:
            TerrainError: a waypoint outside the terrain, or not an (K, 2) array; the
                current plan is kept.
        """
        points = np.asarray(waypoints, dtype=float)
        if points.size == 0:
            self._plan = None
            return
        goals = self.simulator.terrain.require_inside(points, "waypoint")
        self._plan = goals.tolist()
        self._index = 0
        self._steps_on_waypoint = 0
        self.last_failure = None

    def advance(self, until: float, max_steps: int | None = None) -> list[Event]:
        """Step while the next step ends by ``until`` s (at most ``max_steps`` steps).

        Lockstep stops early when the plan is done. Returns the events in time order; the
        first call that runs (realtime: the first; lockstep: at the first plan) starts with
        the odometry and sounding at the start time.
        """
        events: list[Event] = []
        if not self._started:
            if self._mode == "lockstep" and self._plan is None:
                return events
            self._started = True
            x, y, yaw = self.pose
            state = self._state()
            events.append(Odom(state.t, x, y, yaw, 0.0, 0.0, state.z, state.roll, state.pitch))
            events.extend(self._soundings(self.simulator.sound_due()))
            events.extend(self._pings_between(state, state))
            events.extend(self._readings_between(state, state))
        self._progress()
        dt = self.simulator.vehicle.dt
        steps = 0
        while (self.simulator.steps + 1) * dt <= until + CLOCK_TOLERANCE and (
                max_steps is None or steps < max_steps):
            if self._plan is None and self._mode == "lockstep":
                break
            events.extend(self._step())
            steps += 1
            self._progress()
        events.sort(key=lambda event: (event.t, _ORDER[type(event)]))
        return events

    def _step(self) -> list[Event]:
        goal = None
        if self._plan is not None:
            if self._steps_on_waypoint >= self._step_limit:
                goal_x, goal_y = self._plan[self._index]
                return self._abandon(f"waypoint #{self._index} ({goal_x:g}, {goal_y:g}) not "
                                     f"reached within {self._step_limit} control steps")
            goal = self._plan[self._index]
        before = self._state()
        log = self.simulator.step(goal)
        if goal is not None:
            self._steps_on_waypoint += 1
        after = self._state()
        dt = after.t - before.t
        (x0, y0, yaw0), (x1, y1, yaw1) = before.pose, after.pose
        events: list[Event] = [Odom(after.t, x1, y1, yaw1, math.hypot(x1 - x0, y1 - y0) / dt,
                                    wrap_angle(yaw1 - yaw0) / dt, after.z, after.roll,
                                    after.pitch)]
        events.extend(self._soundings(log))
        events.extend(self._pings_between(before, after))
        events.extend(self._readings_between(before, after))
        return events

    def _state(self) -> _State:
        simulator = self.simulator
        t = simulator.time
        return _State(t, simulator.pose, simulator.z, *simulator.vehicle.roll_pitch(t))

    def _abandon(self, reason: str) -> list[Event]:
        """Drop the plan after a failure; lockstep then holds, realtime holds position."""
        self.last_failure = reason
        self._plan = None
        return []

    def _progress(self) -> None:
        """Skip reached waypoints (within the goal radius) as :meth:`follow` does; a plan
        whose last waypoint is reached is done."""
        if self._plan is None:
            return
        vehicle = self.simulator.vehicle
        x, y, _ = self.pose
        while self._index < len(self._plan):
            goal_x, goal_y = self._plan[self._index]
            distance = math.hypot(goal_x - x, goal_y - y)
            if self._steps_on_waypoint == 0:
                self._step_limit = vehicle.leg_step_limit(distance)
            if distance > vehicle.config.goal_radius:
                return
            self._index += 1
            self._steps_on_waypoint = 0
        self._plan = None

    @staticmethod
    def _soundings(log) -> list[Sounding]:
        return [Sounding(t, r) for t, r in zip(log.times.tolist(), log.ranges.tolist())]

    def _pings_between(self, before: _State, after: _State) -> list[Ping]:
        """Multibeam pings due by ``after.t`` on the step ``before`` -> ``after``, at the
        pose, height and attitude interpolated linearly (yaw along the shorter arc) as the
        ingest interpolates the odometry, so that it places each beam where it was cast."""
        if self.multibeam is None:
            return []
        t0, t1, start, end = before.t, after.t, before.pose, after.pose
        pings = []
        while self._pings * self.ping_period <= t1 + CLOCK_TOLERANCE:
            t = self._pings * self.ping_period
            self._pings += 1
            fraction = 1.0 if t1 <= t0 else min(max((t - t0) / (t1 - t0), 0.0), 1.0)
            pose = (start[0] + fraction * (end[0] - start[0]),
                    start[1] + fraction * (end[1] - start[1]),
                    wrap_angle(start[2] + fraction * wrap_angle(end[2] - start[2])))
            if not self.simulator.terrain.contains([pose[:2]])[0]:
                self.pings_off_terrain += 1
                continue
            z, roll, pitch = (a + fraction * (b - a) for a, b in (
                (before.z, after.z), (before.roll, after.roll), (before.pitch, after.pitch)))
            pings.append(Ping(t, self.multibeam.ping(pose, z, roll, pitch)))
        return pings

    def _readings_between(self, before: _State, after: _State) -> list[Reading]:
        """Scalar readings due by ``after.t`` on the step ``before`` -> ``after``, at the
        position interpolated linearly at each reading's time (as the ingest places it)."""
        readings = []
        t0, t1 = before.t, after.t
        (x0, y0, _), (x1, y1, _) = before.pose, after.pose
        for index, sensor in enumerate(self.sensors):
            period, count, times = 1.0 / sensor.rate, self._readings[index], []
            while count * period <= t1 + CLOCK_TOLERANCE:
                times.append(count * period)
                count += 1
            self._readings[index] = count
            if not times:
                continue
            fraction = (np.ones(len(times)) if t1 <= t0 else
                        np.clip((np.asarray(times) - t0) / (t1 - t0), 0.0, 1.0))
            xy = np.column_stack((x0 + fraction * (x1 - x0), y0 + fraction * (y1 - y0)))
            measured, _ = sensor.read(xy)
            readings += [Reading(t, sensor.name, value)
                         for t, value in zip(times, measured.tolist())]
        return readings


def start_pose(config: SimulatedAuvConfig) -> Sequence[float] | None:
    """The configured start pose, or None for the simulator's default corner."""
    return config.start_pose or None
