"""The simulated AUV flown through a MAVLink endpoint: the simulated autopilot's guided target
is the vehicle's plan, its telemetry replaces the odometry (no ROS, no pymavlink import).

:class:`MavlinkVehicle` couples a :class:`~poam_ros.sim.simulated_auv.SimulatedAuv` (the
stepping, the soundings, the sensors) with a
:class:`~poam_ros.vehicle.autopilot.SimulatedAutopilot` (the messages) and offers the AUV's
``advance``/``holding`` to the simulated AUV node, which paces it and publishes what it
returns: every event but the odometry, which reaches the stack from the bridge.

Each call to :meth:`MavlinkVehicle.advance`: the queued messages the bridge's clock has
reached go out. The bridge maps the autopilot's boot time onto its clock (``/clock``) by the
smallest delay seen, so a message that reached it before the ``/clock`` that covers it
(a loaded machine delays either) would stamp the odometry early, and equal stamps would
follow. Its targets carry its clock (``time_boot_ms`` since its start, at simulated time 0 in
lockstep: the clock stands until its first target), re-sent every ``command_period``; while
the clock stands and the bridge has no reason to re-send, a message goes after
``send_delay`` wall seconds all the same. Then
the bridge's messages are taken at the vehicle's time; then, per control step, the target
expires after ``guided_timeout`` s of simulated time (ArduSub's), the vehicle steps towards
the live target (a new target replaces the plan; the same one re-sent changes nothing), and
the state is sent for that step (one odometry per control step, as the simulated AUV
publishes it). Heartbeats go at 1 Hz of simulated time, checked at every step, and of wall
time, so the link stays up while the clock stands.

Lockstep: the clock stands still while the autopilot has no live target or the vehicle has
reached it (within ``vehicle.goal_radius``) and nothing newer came, the analogue of "no plan".
The bridge, the ingest and the planner see positions rounded to 1e-7° (about a centimetre)
and count a pose reached within ``goal_radius + ARRIVAL_MARGIN``, so a stop always shows as
an arrival; a step that ends within twice that margin outside the vehicle's own radius, where
they may count it reached before the vehicle does, holds the clock for up to
``settle_time`` wall seconds, so that a next target they send comes at the same simulated
time on every run. The state is first sent once the bridge has been heard (its heartbeat,
or its request for the EKF origin, sent once it hears the autopilot's heartbeat): a bridge
listening on ``udpin`` answers only peers it heard from, and the state at the held time,
sent once, is what it needs to command.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from poam_ros.params import Params, param
from poam_ros.sim.simulated_auv import Event, Odom, SimulatedAuv

#: m added to the vehicle's goal radius for those who judge arrival from the telemetry (the
#: bridge, the ingest, the planner): they compare the plan with a position rounded to 1e-7°,
#: the vehicle a target so rounded with its true position, each off by up to 0.79 cm
#: (0.56 cm north and east at the equator), so their distances differ by 1.6 cm at most
ARRIVAL_MARGIN = 0.02


@dataclass
class MavlinkEndpointConfig(Params):
    """The simulated AUV's MAVLink endpoint (``mavlink.*``): off unless ``connection`` is set."""

    connection: str = param("", "pymavlink connection string of the simulated autopilot, e.g. "
                                "udpout:127.0.0.1:14550; empty: off, the vehicle follows the "
                                "plan topic")
    system_id: int = param(1, "the autopilot's MAVLink system id", low=1, high=255)
    component_id: int = param(1, "the autopilot's component id (1: MAV_COMP_ID_AUTOPILOT1)",
                              low=1, high=255)
    guided_timeout: float = param(3.0, "a guided target not re-sent for this long (simulated "
                                       "time) is dropped and the vehicle holds (ArduSub's "
                                       "GUIDED_POSVEL_TIMEOUT_MS)", unit="s", low=0.1)
    start_armed_guided: bool = param(False, "simulation only, the operator's part: start "
                                            "armed in GUIDED (the bridge never arms); false: "
                                            "disarmed in MANUAL, as an autopilot boots")
    start_bridge: str = param("", "simulation only, the operator's part: the bridge node "
                                  "whose ~/start (std_srvs/Trigger) is called, once a second "
                                  "until it succeeds; empty: none")
    send_delay: float = param(0.25, "lockstep, while the clock stands: wall seconds a MAVLink "
                                    "message newer than the bridge's clock waits before it "
                                    "goes all the same", unit="s", low=0.0, high=5.0)
    settle_time: float = param(1.0, "lockstep: wall seconds the clock holds after a step "
                                    "that ends within twice ARRIVAL_MARGIN outside the goal "
                                    "radius, for the bridge's next target", unit="s",
                               low=0.0, high=10.0)


class DeferredLink:
    """A link whose messages wait in a queue until :meth:`flush` releases them; a HEARTBEAT,
    which carries no time and which the bridge times the link by, goes at once (what else
    it does goes to ``link``). ``time``: the simulated time the messages sent now are of."""

    def __init__(self, link, wall: Callable[[], float]) -> None:
        self.link, self._wall = link, wall
        self.time = 0.0
        self.queue: list[tuple[float, float, object]] = []  # (wall queued, time, message)

    def __getattr__(self, name: str):
        return getattr(self.link, name)

    def send(self, message) -> None:
        if message.get_type() == "HEARTBEAT":
            self.link.send(message)
        else:
            self.queue.append((self._wall(), self.time, message))

    def ahead(self, send: Callable[[], None]) -> None:
        """What ``send()`` sends goes before what waits."""
        waiting, self.queue = self.queue, []
        send()
        self.queue += waiting

    def flush(self, until: float, waited: float | None) -> None:
        """Send, in order, the messages of time ``until`` or before and, with ``waited``
        given, those that have waited that many wall seconds."""
        due = -math.inf if waited is None else self._wall() - waited
        count = next((i for i, (queued, t, _) in enumerate(self.queue)
                      if t > until + 1e-6 and queued > due), len(self.queue))
        for _, _, message in self.queue[:count]:
            self.link.send(message)
        del self.queue[:count]


class MavlinkVehicle:
    """The simulated AUV flown by the simulated autopilot (module docstring).

    Args:
        auv: the simulated AUV; its simulator is the autopilot's.
        autopilot: the endpoint; its link is wrapped in a :class:`DeferredLink`.
        settle_time: wall seconds of the lockstep hold near an arrival.
        send_delay: wall seconds a message newer than the bridge's clock waits while the
            clock stands.
        wall: the wall clock (s).
    """

    def __init__(self, auv: SimulatedAuv, autopilot, settle_time: float = 1.0,
                 send_delay: float = 0.25, wall: Callable[[], float] = time.monotonic) -> None:
        if autopilot.simulator is not auv.simulator:
            raise ValueError("the autopilot must fly the simulated AUV's simulator")
        self.auv, self.autopilot = auv, autopilot
        autopilot.link = DeferredLink(autopilot.link, wall)
        self.send_delay = send_delay
        self.settle_time = settle_time
        self._wall = wall
        self._goal: tuple[float, float] | None = None  # the plan the AUV flies
        self._settle_until = -math.inf
        self._greeted = False

    @property
    def holding(self) -> bool:
        """Lockstep: whether the clock stands (no live target, or the target reached with
        nothing newer, or settling near an arrival)."""
        return self.auv.holding or self._wall() < self._settle_until

    def advance(self, until: float, max_steps: int | None = None) -> list[Event]:
        """Step up to ``until`` s (at most ``max_steps`` steps) as the module docstring says;
        returns the AUV's events but its odometry."""
        autopilot, auv = self.autopilot, self.auv
        autopilot.link.flush(autopilot.peer_time, self.send_delay if self.holding else None)
        autopilot.link.time = auv.time
        autopilot.receive(auv.time)
        self._follow()
        events: list[Event] = []
        if not self._greeted and sum(autopilot.received.values()):
            self._greeted = True  # ahead of the answers: they need the boot time it carries
            autopilot.link.ahead(lambda: autopilot.send_state(auv.time))
        steps = 0
        while max_steps is None or steps < max_steps:
            if auv.mode == "lockstep" and self.holding:
                break
            before, taken = auv.pose, auv.simulator.steps
            stepped = auv.advance(until, 1)
            events += [event for event in stepped if not isinstance(event, Odom)]
            if auv.simulator.steps == taken:
                break
            steps += 1
            autopilot.link.time = auv.time
            autopilot.moved(before)
            autopilot.send_state(auv.time)
            autopilot.send_heartbeat(auv.time)
            self._settle_near_arrival()
            autopilot.expire(auv.time)
            self._follow()
        autopilot.send_heartbeat(auv.time, self._wall())
        return events

    def _follow(self) -> None:
        """The autopilot's live target as the AUV's plan: a new one replaces it, none clears
        it; the same one again leaves the plan (and its step count) alone."""
        goal = self.autopilot.goal
        if goal != self._goal:
            self._goal = goal
            self.auv.set_plan([] if goal is None else [goal])
            self._settle_until = -math.inf

    def _settle_near_arrival(self) -> None:
        if self._goal is None or self.auv.holding:
            return
        x, y, _ = self.auv.pose
        radius = self.auv.simulator.vehicle.config.goal_radius
        if math.hypot(self._goal[0] - x, self._goal[1] - y) <= radius + 2 * ARRIVAL_MARGIN:
            self._settle_until = self._wall() + self.settle_time
