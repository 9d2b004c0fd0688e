"""Several simulated AUVs on one terrain and one clock (no ROS): what ``fleet_sim`` flies.

:class:`FleetSim` steps N :class:`~poam_ros.sim.simulated_auv.SimulatedAuv` together, one
control step of all of them at a time, so that every vehicle's events carry the one clock's
time. In ``lockstep`` the clock holds while any vehicle that is not done has no plan: the
vehicle that reached the end of its plan waits for its planner, and the others wait with it
at that very control step, as the single vehicle's clock waits for its planner. A vehicle
whose mission is done (or aborted) stops counting; it holds where it is, its own clock
stopped, and takes no plan again in that run (its readings would carry a time past).
In ``realtime`` the clock always runs and a vehicle without a plan holds position, sounding.

A vehicle whose stack left the fleet (its processes gone: :meth:`FleetSim.set_left`, the node
says when) stops holding the clock too, but unlike a done one it keeps the fleet's time: it
drops its plan and holds position, sounding, as in ``realtime``, so that when its stack comes
back it takes a plan again at the fleet's time and flies on.

Each vehicle has its own sonar noise (:func:`vehicle_seeds`: independent streams spawned from
the fleet's seed) and its own start (:func:`fleet_start_poses`: spread over the area, drawn
from the seed), so that the vehicles neither sound the same noise nor start on one spot.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.multibeam import MultibeamSonar, MultibeamStreamConfig
from poam_ros.sim.seabed_class import SeabedClass, SeabedClassConfig, seabed_class_sensor
from poam_ros.sim.simulated_auv import Event, SimulatedAuv
from poam_ros.sim.simulator import CLOCK_TOLERANCE, SimulationError, SurveySimulator
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import Pose, VehicleConfig
from poam_ros.sim.water_temperature import (
    WaterTemperature,
    WaterTemperatureConfig,
    temperature_sensor,
)

START_MARGIN = 0.1  # of the area's width and height kept clear of its edges at the start
START_DRAWS = 1000  # draws per vehicle before a start off the terrain is an error


@dataclass
class FleetConfig(Params):
    """The fleet the simulator flies (the ``fleet_sim`` node's ``fleet.*``)."""

    vehicles: int = param(2, "vehicles flown on the one terrain", low=1, high=64)
    namespace_prefix: str = param("auv", "vehicle k's topics are under /<prefix><k> "
                                         "(/auv0/odom, /auv1/plan, ...)")
    start_poses: list = param([], "x, y, yaw of each vehicle in turn (3 per vehicle); empty: "
                                  "drawn from the seed, spread over the terrain",
                              unit="m, m, rad")
    leave_timeout: float = param(10.0, "a vehicle whose planner has had no publisher on its "
                                       "plan topic this long (wall time: a lockstep clock "
                                       "stands while it waits) has left the fleet: it no "
                                       "longer holds the clock; 0: never", unit="s", low=0.0)

    def validate(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.namespace_prefix):
            raise ConfigError(f"FleetConfig.namespace_prefix must be a ROS name token, got "
                              f"{self.namespace_prefix!r}")
        if self.start_poses and (len(self.start_poses) != 3 * self.vehicles or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in self.start_poses)):
            raise ConfigError(f"FleetConfig.start_poses must be empty or 3 finite numbers per "
                              f"vehicle ({3 * self.vehicles}), got {self.start_poses!r}")
        self.start_poses = [float(v) for v in self.start_poses]

    def namespaces(self) -> list[str]:
        """``/auv0``, ``/auv1``, ...: each vehicle's namespace."""
        return [f"/{self.namespace_prefix}{k}" for k in range(self.vehicles)]

    def poses(self) -> list[Pose] | None:
        """The configured start poses, None when they are to be drawn."""
        values = self.start_poses
        return [tuple(values[i:i + 3]) for i in range(0, len(values), 3)] or None


def vehicle_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent seeds spawned from ``seed`` (numpy's SeedSequence), one per
    vehicle: vehicle k's noise does not depend on how many vehicles fly."""
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(count)]


def fleet_start_poses(extent: Sequence[float], count: int, seed: int,
                      inside: Callable[[np.ndarray], np.ndarray]) -> list[Pose]:
    """``count`` start poses spread over ``extent`` (xmin, xmax, ymin, ymax) m: vehicle k in
    the k-th of ``count`` equal strips across x, at a position and heading drawn from
    ``seed``, clear of the edges by :data:`START_MARGIN` and where ``inside`` ((N, 2) ->
    (N,) bool: over the terrain, in the workspace) holds."""
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    width, height = xmax - xmin, ymax - ymin
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
    poses = []
    for k in range(count):
        low = xmin + width * (START_MARGIN + (1 - 2 * START_MARGIN) * k / count)
        high = xmin + width * (START_MARGIN + (1 - 2 * START_MARGIN) * (k + 1) / count)
        xy = np.column_stack([rng.uniform(low, high, START_DRAWS),
                              rng.uniform(ymin + START_MARGIN * height,
                                          ymax - START_MARGIN * height, START_DRAWS)])
        fits = np.flatnonzero(inside(xy))
        if len(fits) == 0:
            raise ConfigError(f"no start for vehicle {k} in x [{low:g}, {high:g}] m: the "
                              f"strip lies off the terrain or the workspace")
        x, y = xy[fits[0]]
        poses.append((float(x), float(y), float(rng.uniform(-math.pi, math.pi))))
    return poses


def build_auv(terrain: Terrain, vehicle: VehicleConfig, sonar: SonarConfig,
              swath: MultibeamStreamConfig, temperature: WaterTemperatureConfig, seed: int,
              start_pose: Sequence[float] | None, mode: str,
              seabed: SeabedClassConfig | None = None) -> SimulatedAuv:
    """One simulated AUV as the ``simulated_auv`` node builds it: echo sounder seeded with
    ``seed``, the multibeam (with ``swath.enabled``), the temperature sensor (with
    ``temperature.enabled``) and the seabed class (with ``seabed.enabled``) on streams of
    their own from the same seed. Raises ValueError (a start off the terrain, a sonar too
    short)."""
    simulator = SurveySimulator(terrain, vehicle, sonar, seed=seed, start_pose=start_pose)
    multibeam = None
    if swath.enabled:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
        multibeam = MultibeamSonar(terrain, swath.sonar_config(), simulator.height.constant,
                                   rng)
    sensors = ([temperature_sensor(WaterTemperature(terrain, temperature), seed)]
               if temperature.enabled else [])
    # after the temperature, as the ROS-free mission lists them (setup.truth)
    sensors += ([seabed_class_sensor(SeabedClass(terrain, seabed), seed)]
                if seabed is not None and seabed.enabled else [])
    return SimulatedAuv(simulator, mode, multibeam, swath.rate, sensors)


class FleetSim:
    """The vehicles ``auvs`` (all at time 0, one control step ``dt``) on one clock; see the
    module docstring. ``done[k]``: vehicle k's mission has ended (the caller says so)."""

    def __init__(self, auvs: Sequence[SimulatedAuv], mode: str = "lockstep") -> None:
        if not auvs:
            raise ValueError("a fleet needs at least one vehicle")
        steps = {auv.simulator.vehicle.dt for auv in auvs}
        if len(steps) != 1 or any(auv.time != 0.0 for auv in auvs):
            raise ValueError("the fleet's vehicles must start together with one control step")
        self.auvs = list(auvs)
        self.dt = steps.pop()
        self.done = [False] * len(auvs)
        self.left = [False] * len(auvs)
        self.steps = 0
        self.mode = mode

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        self._mode = mode
        for k in range(len(self.auvs)):
            self._set_vehicle_mode(k)

    def _set_vehicle_mode(self, k: int) -> None:
        """The fleet's mode, or ``realtime`` for a vehicle that left and is not done: it
        holds position on the fleet's clock."""
        self.auvs[k].mode = "realtime" if self.left[k] and not self.done[k] else self._mode

    @property
    def time(self) -> float:
        """The fleet's clock, s."""
        return self.steps * self.dt

    def waiting(self) -> list[int]:
        """The vehicles that hold the lockstep clock: not done, not left, without a plan."""
        return [k for k, auv in enumerate(self.auvs)
                if auv.holding and not self.done[k] and not self.left[k]]

    def set_left(self, k: int, left: bool) -> None:
        """Vehicle ``k``'s stack left the fleet (True: it drops its plan and holds position
        on the fleet's clock) or came back (False: it waits for a plan, lockstep holding the
        clock for it, as at the end of a plan)."""
        if left and not self.left[k]:
            self.auvs[k].set_plan([])
        self.left[k] = left
        self._set_vehicle_mode(k)

    @property
    def holding(self) -> bool:
        """Whether the clock stands (lockstep, a vehicle waits for a plan)."""
        return self._mode == "lockstep" and bool(self.waiting())

    def set_plan(self, k: int, waypoints) -> None:
        """Give vehicle ``k`` the plan ``waypoints`` (K, 2) m (K = 0: it holds). Raises
        TerrainError (a waypoint off the terrain) or SimulationError (a vehicle whose clock
        stopped when its mission ended); the vehicle keeps its plan."""
        auv = self.auvs[k]
        if len(waypoints) and auv.time < self.time - CLOCK_TOLERANCE:
            raise SimulationError(f"vehicle {k} stopped at {auv.time:.1f} s when its mission "
                                  f"ended; it flies no more in lockstep")
        auv.set_plan(waypoints)

    def advance(self, until: float, max_steps: int | None = None) -> list[list[Event]]:
        """Step every vehicle together while the next step ends by ``until`` s (at most
        ``max_steps`` steps); lockstep stops at the step after which a vehicle waits.
        Returns each vehicle's events in time order (see :meth:`SimulatedAuv.advance`).

        Before each step every vehicle takes in its plan at the fleet's time (a vehicle
        advanced to now steps nothing: it starts, and a plan already reached where it was
        given ends), so that a vehicle that waits holds the clock at its own time."""
        events: list[list[Event]] = [[] for _ in self.auvs]
        steps = 0
        while (self.steps + 1) * self.dt <= until + CLOCK_TOLERANCE and (
                max_steps is None or steps < max_steps):
            for vehicle, auv in zip(events, self.auvs):
                vehicle.extend(auv.advance(self.time))
            if self.holding:
                break
            target = (self.steps + 1) * self.dt
            for vehicle, auv in zip(events, self.auvs):
                vehicle.extend(auv.advance(target, 1))
            self.steps += 1
            steps += 1
        return events
