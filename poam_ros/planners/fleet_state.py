"""A fleet's mission state from its vehicles' (no ROS): the rule ``poam-ros sim --robots N``
ends the fleet's mission by.

Each vehicle's planner runs its own mission (:mod:`poam_ros.planners.mission_control`). The
fleet's mission has ended once every vehicle's has: ``done``, or ``aborted`` if any vehicle's
was; until then it is in the state of its first vehicle still running (in the vehicles'
order). A vehicle that left the fleet (its stack gone: ``fleet_sim`` says so) is not waited
for: it counts as absent, neither done nor aborted, since what it mapped stays in the map and
its teammates carry the mission on; it counts again once it is back. A fleet all of whose
vehicles left is aborted: none is left to end its mission. Its figures are those of the
vehicle that counted the most samples: in a fleet with a central map every planner counts
that one map's samples, so the fleet's map must hold them.
"""

from __future__ import annotations

from typing import Collection, Mapping

from poam_ros.diagnostics import FleetLinkStatus, IngestStatus, MissionStatus
from poam_ros.planners.mission_control import ABORTED, DONE, IDLE

ENDED = (DONE, ABORTED)
LEFT = "left the fleet"  # the first words of fleet_sim's status of a vehicle that left


def fleet_state(states: Mapping[str, str], left: Collection[str] = ()) -> str:
    """The fleet's state from each vehicle's (vehicle -> state; "" before it said one), the
    vehicles in ``left`` (those that left the fleet) not counted."""
    if states and all(vehicle in left for vehicle in states):
        return ABORTED
    values = [state for vehicle, state in states.items() if vehicle not in left]
    if values and all(state in ENDED for state in values):
        return ABORTED if ABORTED in values else DONE
    return next((state for state in values if state not in ENDED and state), IDLE)


def fleet_mission(missions: Mapping[str, MissionStatus | None]) -> MissionStatus | None:
    """The vehicles' mission status that counted the most samples; None before any came."""
    known = [mission for mission in missions.values() if mission is not None]
    return max(known, key=lambda mission: mission.samples_used) if known else None


def own_counts_current(ingest: IngestStatus | None, mission: MissionStatus | None,
                       link: FleetLinkStatus | None) -> bool:
    """Whether a distributed fleet's vehicle's last statuses count its last batch: its ingest
    published every own sounding its planner counted (``samples_counted: own``), and its
    link holds each of them as sent, waiting, dropped from the pool or refused. A vehicle's
    last batch spends its budget and can end the fleet's mission within the second before
    its ingest's and link's next status."""
    if ingest is None or link is None:
        return False
    if mission is not None and ingest.samples_published < mission.samples_used:
        return False
    offered = (link.soundings_sent + link.waiting + link.pool_dropped
               + sum(link.refused.values()))
    return offered >= ingest.samples_published
