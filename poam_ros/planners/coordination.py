"""A fleet's vehicles planning together: teammates' plans, their future samples, separation
and the split pilot survey.

Each vehicle's max-entropy planner conditions its candidates' scores on where its teammates
will sample (a GP's predictive variance depends on where samples are, not on their values:
:meth:`~poam_ros.models.prediction.Prediction.conditioned_std`). It conditions on the
*last announced* plans of the others rather than planning in a fixed vehicle order
(sequential greedy): over an acoustic link a vehicle cannot wait for the one before it to
plan and announce, and a lost announcement would stall every vehicle after it. Each
vehicle plans when it reaches its goal, on what it last heard; a teammate not heard from
for ``plan_timeout`` seconds (a link loss, a vehicle that left) stops counting.

An announcement is a vehicle's position and its remaining waypoints, stamped; the planner
node sends it as a ``nav_msgs/Path`` whose first pose is the position
(:mod:`poam_ros.ros.fleet_coordination`). No goal is chosen within ``separation`` of a
teammate's position or goal. The pilot survey is split by length: vehicle k of N flies the
k-th of N contiguous, equally long shares of the one pilot pattern (:func:`pilot_share`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.planners.base import Planner, checked_position
from poam_ros.planners.max_entropy import MaxEntropyPlanner

#: The predictive spread at candidates (N, 2) given teammates' future sample points (T, 2)
#: [m] (None or empty: none): as :data:`~poam_ros.planners.base.PredictStd`.
ConditionedStd = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]


@dataclass
class FleetMemberConfig(Params):
    """Which vehicle of a fleet this planner plans for (``fleet.*`` of the planner)."""

    vehicle_index: int = param(0, "this vehicle's index k in the fleet, 0 <= k < vehicles: "
                                  "it flies the k-th share of the pilot survey", low=0)
    vehicles: int = param(1, "vehicles N in the fleet (1: a vehicle on its own)", low=1)
    teammates: list[str] = param([], "topics of the teammates' plan announcements "
                                "(nav_msgs/Path, e.g. /auv1/fleet/plan)")

    def validate(self) -> None:
        if self.vehicle_index >= self.vehicles:
            raise ConfigError(f"fleet.vehicle_index {self.vehicle_index} must be below "
                              f"fleet.vehicles {self.vehicles}")
        if not all(isinstance(topic, str) and topic for topic in self.teammates):
            raise ConfigError(f"fleet.teammates must be topic names, got {self.teammates!r}")


@dataclass
class CoordinationConfig(Params):
    """How a fleet's planners coordinate (``coordination.*`` of the planner)."""

    enabled: bool = param(False, "condition the max-entropy scores on the teammates' "
                                 "announced plans, keep goals apart and split the pilot "
                                 "survey (false: the vehicles plan independently)")
    separation: float = param(10.0, "no goal within this distance of a teammate's position "
                                    "or goal", unit="m", low=0.0)
    plan_timeout: float = param(60.0, "a teammate's announcement older than this stops "
                                      "counting", unit="s", low=0.001)
    sample_spacing: float = param(0.5, "along-track spacing of a teammate's future samples: "
                                       "the sonar's, vehicle speed / sounding rate", unit="m",
                                  low=0.001)
    max_points: int = param(500, "at most about this many future samples of all teammates "
                                 "(beyond, the spacing widens: Σ_tt is T × T)", low=1)
    announce_period: float = param(5.0, "period of this vehicle's own announcement",
                                   unit="s", low=0.001)


@dataclass(frozen=True)
class Announcement:
    """A teammate's position (2,) [m], remaining waypoints (K, 2) [m] (K = 0: no plan) and the
    time it announced them [s]."""

    position: np.ndarray
    waypoints: np.ndarray
    stamp: float

    @property
    def keep_out(self) -> np.ndarray:
        """Where no goal may go (P, 2): its position and its goal."""
        return np.vstack([self.position, self.waypoints[-1:]])

    def path(self) -> np.ndarray:
        """The polyline it will fly (K + 1, 2): from its position through its waypoints."""
        return np.vstack([self.position, self.waypoints])


class TeammatePlans:
    """The last announcement of each teammate (by its name: the topic it came on)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = float(timeout)
        self._plans: dict[str, Announcement] = {}

    def update(self, vehicle: str, position: np.ndarray, waypoints: np.ndarray,
               stamp: float) -> bool:
        """Keep ``vehicle``'s announcement unless one as new is held (a late duplicate);
        returns whether it was kept."""
        held = self._plans.get(vehicle)
        if held is not None and held.stamp >= stamp:
            return False
        waypoints = np.asarray(waypoints, dtype=float).reshape(-1, 2)
        if not np.isfinite(waypoints).all():
            raise ValueError(f"{vehicle}: non-finite waypoints")
        self._plans[vehicle] = Announcement(checked_position(position), waypoints,
                                            float(stamp))
        return True

    def current(self, now: float) -> dict[str, Announcement]:
        """The announcements at most ``timeout`` s old at ``now`` [s]."""
        return {vehicle: plan for vehicle, plan in self._plans.items()
                if now - plan.stamp <= self.timeout}

    def keep_out(self, now: float) -> np.ndarray:
        """The current teammates' positions and goals (P, 2) [m]."""
        plans = self.current(now).values()
        return np.vstack([plan.keep_out for plan in plans]) if plans else np.empty((0, 2))

    def sample_points(self, now: float, spacing: float, max_points: int) -> np.ndarray:
        """Where the current teammates will sample (T, 2) [m]: each one's path from its
        position, every ``spacing`` m; where that makes more than ``max_points`` the spacing
        widens to their total length / ``max_points`` (T then exceeds it by at most one
        point per teammate)."""
        paths = [plan.path() for plan in self.current(now).values() if len(plan.waypoints)]
        total = sum(path_length(path) for path in paths)
        spacing = max(spacing, total / max_points)
        points = [along(path, np.arange(0.0, path_length(path) + 1e-9, spacing))
                  for path in paths]
        return np.vstack(points) if points else np.empty((0, 2))


def arc_lengths(path: np.ndarray) -> np.ndarray:
    """Distance [m] along a polyline (K, 2) to each of its vertices: (K,), from 0."""
    steps = np.linalg.norm(np.diff(np.asarray(path, dtype=float), axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(steps)])


def path_length(path: np.ndarray) -> float:
    """Length [m] of a polyline (K, 2)."""
    return float(arc_lengths(path)[-1])


def along(path: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """Points (S, 2) at ``distances`` (S,) [m] along a polyline (K, 2), clipped to its ends;
    a distance at a vertex gives that vertex exactly."""
    path = np.asarray(path, dtype=float)
    if len(path) == 1:
        return np.repeat(path, len(distances), axis=0)
    cumulative = arc_lengths(path)
    distances = np.clip(np.asarray(distances, dtype=float), 0.0, cumulative[-1])
    # The segment each distance falls in (zero-length segments are never chosen).
    segment = np.clip(np.searchsorted(cumulative, distances, side="right") - 1, 0,
                      len(path) - 2)
    start, end = cumulative[segment], cumulative[segment + 1]
    span = end - start
    fraction = np.divide(distances - start, span, out=np.zeros_like(span), where=span > 0)
    return path[segment] + fraction[:, None] * (path[segment + 1] - path[segment])


def pilot_share(pilot: np.ndarray, index: int, count: int) -> np.ndarray:
    """Vehicle ``index``'s share (S, 2) [m] of the pilot survey (W, 2) split between
    ``count`` vehicles: the contiguous stretch from length index·L/count to
    (index + 1)·L/count of the pilot's polyline (L its length), i.e. its cut points and
    the waypoints between them. The shares meet at their cut points and together are the
    pilot; ``count`` 1 gives the pilot itself."""
    pilot = np.asarray(pilot, dtype=float)
    if not 0 <= index < count:
        raise ValueError(f"vehicle index {index} is not in 0..{count - 1}")
    if count == 1:
        return pilot.copy()
    cumulative = arc_lengths(pilot)
    low, high = (cumulative[-1] * k / count for k in (index, index + 1))
    inside = pilot[(cumulative > low) & (cumulative < high)]
    return np.vstack([along(pilot, [low]), inside, along(pilot, [high])])


@dataclass(frozen=True)
class TeamView:
    """The teammates as one vehicle knows them when it plans: where they will sample
    (T, 2) [m] and where its goal may not go (P, 2) [m]."""

    planned: np.ndarray
    keep_out: np.ndarray


class Coordinator:
    """One vehicle's coordination with its teammates: their plans as heard, and ``planner``'s
    planning given them (``config.enabled``, which needs the max-entropy planner: the only
    one that scores candidates; else it plans alone, as a single vehicle does)."""

    def __init__(self, config: CoordinationConfig, member: FleetMemberConfig,
                 planner: Planner) -> None:
        if config.enabled and not isinstance(planner, MaxEntropyPlanner):
            raise ConfigError(f"coordination.enabled needs the max_entropy planner (it "
                              f"conditions its scores), not {type(planner).__name__}")
        self.config, self.member, self.planner = config, member, planner
        self.teammates = TeammatePlans(config.plan_timeout)

    def pilot(self, pilot: np.ndarray) -> np.ndarray:
        """This vehicle's share of the pilot survey (all of it when not coordinating)."""
        if not self.config.enabled:
            return pilot
        return pilot_share(pilot, self.member.vehicle_index, self.member.vehicles)

    def view(self, now: float) -> TeamView:
        """What this vehicle knows of its current teammates at ``now`` [s]."""
        config = self.config
        return TeamView(self.teammates.sample_points(now, config.sample_spacing,
                                                     config.max_points),
                        self.teammates.keep_out(now))

    def plan(self, position: np.ndarray, predict_std: ConditionedStd, heading: float | None,
             view: TeamView) -> np.ndarray:
        """The planner's next waypoints from ``position``: scored on the std conditioned on
        the teammates' future samples, no goal within ``separation`` of their positions and
        goals (``ValueError`` if no candidate is); without coordination, alone."""
        if not self.config.enabled:
            return self.planner.plan(position, lambda points: predict_std(points, None),
                                     heading)
        separation = self.config.separation

        def conditioned(points: np.ndarray) -> np.ndarray:
            return predict_std(points, view.planned)

        return self.planner.plan(position, conditioned, heading,
                                 allowed=lambda points: separated(points, view.keep_out,
                                                                  separation))


def separated(points: np.ndarray, keep_out: np.ndarray, separation: float) -> np.ndarray:
    """Which of ``points`` (N, 2) lie at least ``separation`` [m] from every point of
    ``keep_out`` (P, 2): (N,) bool."""
    if len(keep_out) == 0 or separation <= 0.0:
        return np.ones(len(points), dtype=bool)
    distance = np.linalg.norm(points[:, None, :] - keep_out[None, :, :], axis=2)
    return distance.min(axis=1) >= separation
