"""Mission control: the states of a mission, its budgets and why it changed state (no ROS).

The planner node and the ROS-free :class:`~poam_ros.mission.Mission` drive one
:class:`MissionController` each, so a budget ends both missions by the same rule.

States::

    idle --start--> pilot --first informative plan--> adaptive
    pilot | adaptive --budget spent--> returning (on_budget: home) | done (on_budget: hold)
    returning --home reached--> done
    pilot | adaptive | returning --pause | vehicle link lost--> paused
    paused --resume | start--> the state it left
    any --abort--> aborted;  any but idle and returning --return_home--> returning

``done`` and ``aborted`` end the mission (a ``return_home`` still brings the vehicle back).
Every change carries its reason, one line (``samples budget spent: 5012 of 5000``).

The vehicle's link (:meth:`MissionController.observe_vehicle_link`): a moving mission whose
vehicle bridge lost its autopilot pauses with the reason :data:`LINK_LOST_REASON`; the link
coming back resumes nothing. Only an explicit request (``start`` or ``pause(False)``)
resumes, and not while the link is still lost: the vehicle would not follow.

Budgets, any combination (a limit of 0 is no budget), checked while the mission runs (pilot,
adaptive):

* ``samples``: the samples the mapper holds (its count, as the map that holds them reports),
  or with ``samples_counted: own`` this vehicle's own soundings in that map, not those a fleet
  link relayed from its teammates (:class:`OwnSoundings`): in a distributed fleet each
  vehicle's map holds its own soundings and what its links carried, so a thin link would
  make every vehicle fly far more than its share; counting its own, each flies its share
  (the fleet's budget over N) whatever the link carries;
* ``time_s``: seconds of the vehicle's clock since the first pose after the start;
* ``distance_m``: metres flown, the sum of the straight steps between successive poses
  (x, y, z) after the start;
* ``std_m``: the map quality, the mean or the 95th percentile of the map's predictive std
  (m) over the workspace's cells: spent once it falls *below* the threshold.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from poam_ros.diagnostics import MissionStatus
from poam_ros.params import ConfigError, Params, param

IDLE, PILOT, ADAPTIVE, RETURNING, DONE, PAUSED, ABORTED = (
    "idle", "pilot", "adaptive", "returning", "done", "paused", "aborted")
STATES = (IDLE, PILOT, ADAPTIVE, RETURNING, DONE, PAUSED, ABORTED)
RUNNING = (PILOT, ADAPTIVE)  # budgets are checked in these
MOVING = (PILOT, ADAPTIVE, RETURNING)  # the vehicle follows a plan
HOME, HOLD = "home", "hold"
MEAN, P95 = "mean", "p95"
MAP, OWN = "map", "own"  # what the sample budget counts

LINK_LOST_REASON = "vehicle link lost"

#: the budgets' names, in the order they are checked and reported (``<name>_used``, ...)
BUDGETS = ("samples", "time_s", "distance_m", "std_m")


@dataclass
class MissionControlConfig(Params):
    """The mission's budgets and what happens when one is spent (the planner's ``mission.*``;
    a limit of 0 is no budget)."""

    max_samples: int = param(5000, "end the mission once the mapper holds this many samples; "
                                   "0: no sample budget", low=0)
    max_time: float = param(0.0, "end the mission after this long on the vehicle's clock "
                                 "since the first pose after the start; 0: no time budget",
                            unit="s", low=0.0)
    max_distance: float = param(0.0, "end the mission once the vehicle has flown this far "
                                     "(summed from its odometry); 0: no distance budget",
                                unit="m", low=0.0)
    samples_counted: str = param(MAP, "what max_samples counts: map (every sample the mapper "
                                      "holds) or own (this vehicle's own soundings in its "
                                      "map, not those a fleet link relayed: a distributed "
                                      "fleet's share)", choices=(MAP, OWN))
    std_threshold: float = param(0.0, "end the mission once the map's predictive std over the "
                                      "workspace (std_statistic) falls below this; 0: no "
                                      "map-quality stop", unit="m", low=0.0)
    std_statistic: str = param(MEAN, "what std_threshold bounds: the mean or the 95th "
                                     "percentile of the map's std over the workspace cells",
                               choices=(MEAN, P95))
    on_budget: str = param(HOLD, "when a budget is spent: hold (the vehicle stays where it "
                                 "is) or home (it flies to home, then the mission is done)",
                           choices=(HOLD, HOME))
    home: list = param([], "x, y of home in the map frame; empty: the vehicle's position at "
                           "its first pose after the start", unit="m")

    def validate(self) -> None:
        if self.home and (len(self.home) != 2 or not all(map(math.isfinite, self.home))):
            raise ConfigError(f"MissionControlConfig.home must be empty or a finite [x, y], "
                              f"got {self.home}")

    @property
    def limits(self) -> dict[str, float]:
        """Each budget's limit (0: none), by :data:`BUDGETS` name."""
        return {"samples": self.max_samples, "time_s": self.max_time,
                "distance_m": self.max_distance, "std_m": self.std_threshold}

    @property
    def bounded(self) -> bool:
        """Whether any budget ends the mission."""
        return any(self.limits.values())


def std_statistic(std: np.ndarray, statistic: str) -> float:
    """The ``mean`` or ``p95`` of the finite entries of a map's std layer (any shape, m;
    cells outside the workspace are NaN); NaN when no cell is finite."""
    values = np.asarray(std, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan
    return float(values.mean() if statistic == MEAN else np.percentile(values, 95.0))


class MissionController:
    """One mission's state, budgets and reasons; see the module docstring.

    Each request returns None when it is accepted, or the reason it is refused (the state is
    then unchanged); the observations (:meth:`observe_pose`, :meth:`observe_map`) return
    whether the state changed. ``changes`` lists every (state, reason) in order.
    """

    def __init__(self, config: MissionControlConfig) -> None:
        self.config = config
        self.state = IDLE
        self.reason = "waiting for start"
        self.changes: list[tuple[str, str]] = [(IDLE, self.reason)]
        self.ended_by: str | None = None  # the budget that ended the mission
        self.samples = 0  # what the sample budget counts (samples_counted)
        self.samples_mapped = 0  # the samples the last counted map holds
        self.time_s = 0.0
        self.distance_m = 0.0
        self.std_m = math.nan  # no map yet
        self.home: np.ndarray | None = (np.array(config.home, dtype=float)
                                        if config.home else None)
        self._start_time: float | None = None
        self._last: np.ndarray | None = None  # the last pose (x, y, z)
        self._resume = IDLE  # the state a pause left
        self.vehicle_link_lost = False  # the vehicle bridge's last report

    # ---------------------------------------------------------------- requests
    def start(self) -> str | None:
        """Start an idle mission, or resume a paused one (after a lost vehicle link)."""
        if self.state == PAUSED:
            return self._resume_paused("resumed by start")
        if self.state != IDLE:
            return f"the mission is {self.state}, not idle"
        if self.vehicle_link_lost:
            return LINK_LOST_REASON
        self._change(PILOT, "started")
        return None

    def pause(self, paused: bool, reason: str = "paused by request") -> str | None:
        """Pause (True) a moving mission, saying ``reason``, or resume (False) a paused one."""
        if not paused:
            return self._resume_paused("resumed by request")
        if self.state not in MOVING:
            return f"the mission is {self.state}: nothing to pause"
        self._resume = self.state
        self._change(PAUSED, reason)
        return None

    def _resume_paused(self, reason: str) -> str | None:
        if self.state != PAUSED:
            return f"the mission is {self.state}, not paused"
        if self.vehicle_link_lost:
            return f"{LINK_LOST_REASON}: resume once the vehicle bridge has its link"
        self._change(self._resume, reason)
        return None

    def abort(self) -> None:
        """Abort from any state (again from aborted: the caller stops the vehicle again)."""
        self._change(ABORTED, "aborted by request")

    def return_home(self) -> str | None:
        if self.state in (IDLE, RETURNING):
            return f"the mission is {self.state}"
        if self.home is None:
            return "home unknown: no pose since the start and no mission.home"
        self._change(RETURNING, "return home by request")
        return None

    # ------------------------------------------------------------ observations
    def planning_started(self) -> bool:
        """The first informative plan is out: pilot -> adaptive."""
        if self.state != PILOT:
            return False
        self._change(ADAPTIVE, "pilot survey flown")
        return True

    def observe_pose(self, t: float, position) -> bool:
        """A pose at ``t`` [s] and ``position`` (x, y, z) [m] of the vehicle: time and
        distance budgets, and home's arrival judged by the caller (:meth:`home_reached`)."""
        if self.state == IDLE:
            return False
        position = np.asarray(position, dtype=float)
        if self._start_time is None:
            self._start_time = t
            if self.home is None:
                self.home = position[:2].copy()
        if self._last is not None:
            self.distance_m += float(np.linalg.norm(position - self._last))
        self._last = position
        self.time_s = max(self.time_s, t - self._start_time)
        return self._check()

    def observe_map(self, samples: int, std: float = math.nan, own: int | None = None) -> bool:
        """A map holding ``samples`` samples, ``own`` of them this vehicle's own soundings
        (needed with ``samples_counted: own``), its std statistic ``std`` [m] (NaN: not
        computed; the map-quality stop then waits). Once the mission has ended, maps change
        nothing: a distributed vehicle's map goes on taking its teammates' soundings."""
        if self.config.samples_counted == OWN and own is None:
            raise ValueError("samples_counted: own needs the map's own soundings")
        if self.ended:  # the counts stay those of the map that ended it, which is scored
            return False
        self.samples_mapped = int(samples)
        self.samples = self.samples_mapped if self.config.samples_counted == MAP else int(own)
        if math.isfinite(std):
            self.std_m = float(std)
        return self._check()

    def observe_vehicle_link(self, lost: bool) -> bool:
        """The vehicle bridge's report: ``lost`` (it had the autopilot's heartbeat and lost
        it) pauses a moving mission; a link back only lets a request resume."""
        self.vehicle_link_lost = lost
        return lost and self.pause(True, LINK_LOST_REASON) is None

    def home_reached(self) -> bool:
        """The vehicle reached home: returning -> done."""
        if self.state != RETURNING:
            return False
        self._change(DONE, "home reached" if self.ended_by is None else
                     f"home reached; {self.reason}")
        return True

    # ------------------------------------------------------------------- report
    def spent(self) -> str | None:
        """The first budget spent (by :data:`BUDGETS` order), None while none is."""
        for name, limit in self.config.limits.items():
            if not limit:
                continue
            used = getattr(self, name)
            if (used < limit) if name == "std_m" else (used >= limit):
                return name
        return None

    def status(self) -> MissionStatus:
        """The ``mission/state`` record (its state is :attr:`state`)."""
        limits = self.config.limits
        return MissionStatus(
            reason=self.reason, samples_used=self.samples, samples_limit=limits["samples"],
            samples_mapped=self.samples_mapped,
            time_s_used=self.time_s, time_s_limit=limits["time_s"],
            distance_m_used=self.distance_m, distance_m_limit=limits["distance_m"],
            std_m_used=None if math.isnan(self.std_m) else self.std_m,
            std_m_limit=limits["std_m"], ended_by=self.ended_by)

    @property
    def ended(self) -> bool:
        return self.state in (DONE, ABORTED)

    def _check(self) -> bool:
        if self.state not in RUNNING:
            return False
        name = self.spent()
        if name is None:
            return False
        limit = self.config.limits[name]
        self.ended_by = name
        reason = f"{name} budget spent: {_figure(getattr(self, name))} " + (
            f"below {_figure(limit)}" if name == "std_m" else f"of {_figure(limit)}")
        if self.config.on_budget == HOME and self.home is not None:
            self._change(RETURNING, f"{reason}; returning home")
        else:
            self._change(DONE, f"{reason}; holding")
        return True

    def _change(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason
        self.changes.append((state, reason))


class OwnSoundings:
    """This vehicle's own soundings in each map (``samples_counted: own``), from the batches
    on its mapper's input: its ingest's are stamped with their data time, those a fleet link
    relayed are unstamped (0), and a map is stamped with the newest own batch it holds, so the
    own soundings of the map stamped t are those of the stamped batches up to t. Batches
    reach this count long before the update that maps them ends (a local delivery against a
    model update); one not yet heard is counted at the next map, so the count never runs
    ahead of the map."""

    def __init__(self) -> None:
        self._stamps: list[int] = []  # ns, sorted
        self._counts: list[int] = []  # the samples of the batch of each stamp

    def add(self, stamp: int, count: int) -> None:
        """A batch stamped ``stamp`` [ns] of ``count`` samples; unstamped (relayed): none."""
        if stamp:
            index = bisect.bisect_right(self._stamps, stamp)
            self._stamps.insert(index, stamp)
            self._counts.insert(index, int(count))

    def until(self, stamp: int) -> int:
        """The own soundings of the map stamped ``stamp`` [ns]."""
        return sum(self._counts[:bisect.bisect_right(self._stamps, stamp)])


def _figure(value: float) -> str:
    return f"{value:d}" if isinstance(value, int) else f"{value:.6g}"
