"""Whether a vehicle has reached the end of its plan, judged from the positions it reports."""

from __future__ import annotations

import numpy as np

from poam_ros.planners.base import checked_position


class PlanProgress:
    """Tracks a vehicle along a plan of waypoints (K, 2) [m] until it reaches the last one.

    The plan is reached once a reported position lies within ``goal_radius`` [m] of the last
    waypoint *and* the vehicle has covered enough distance to have visited the waypoints
    before it. The second condition keeps a long plan (the pilot survey) from counting as
    done when its path happens to pass near its own end early on.

    The bound: a vehicle that comes within ``goal_radius`` of each of the K waypoints in turn
    travels at least ``L - 2 (K - 1) goal_radius``, L the length of the polyline through
    them. The travelled distance is summed from successive positions (chords of the true
    path, shorter on curves and across corners when reports are sparse), so only half of
    that bound is required. A single-waypoint plan needs no travel.

    A vehicle that moved and then stands still within ``goal_radius`` of the end (the same
    position twice in a row) has reached it, however far it was seen to travel: positions
    lost on the way shorten the distance summed, and a vehicle held in lockstep repeats its
    position there, so the end cannot be missed.
    """

    TRAVEL_FRACTION = 0.5

    def __init__(self, waypoints: np.ndarray, goal_radius: float) -> None:
        waypoints = np.asarray(waypoints, dtype=float)
        if waypoints.ndim != 2 or waypoints.shape[1] != 2 or len(waypoints) == 0:
            raise ValueError(f"waypoints must have shape (K, 2), K >= 1, got {waypoints.shape}")
        if not goal_radius > 0:
            raise ValueError(f"goal_radius must be > 0, got {goal_radius}")
        self.end = waypoints[-1].copy()
        self.goal_radius = float(goal_radius)
        length = float(np.linalg.norm(np.diff(waypoints, axis=0), axis=1).sum())
        slack = 2.0 * (len(waypoints) - 1) * self.goal_radius
        self.required_travel = self.TRAVEL_FRACTION * max(0.0, length - slack)
        self.travelled = 0.0
        self.reached = False
        self._last: np.ndarray | None = None

    def odometry_lost(self) -> None:
        """Positions were lost on the way (a subscriber's queue overflowed): the distance
        travelled is no longer known, so from now on the end within ``goal_radius`` alone
        counts. A held lockstep vehicle sits there and repeats its pose: the end cannot be
        missed."""
        self.required_travel = 0.0

    def update(self, position: np.ndarray) -> bool:
        """Account for a new position (2,) [m]; True once the plan's end has been reached
        (and from then on). A non-finite position raises ``ValueError`` and changes nothing:
        summed into the distance travelled, it would keep the end from counting as reached."""
        position = checked_position(position)
        step = None if self._last is None else float(np.linalg.norm(position - self._last))
        self.travelled += step or 0.0
        self._last = position
        if not self.reached:
            near = float(np.linalg.norm(position - self.end)) <= self.goal_radius
            self.reached = near and (self.travelled >= self.required_travel
                                   or (step == 0.0 and self.travelled > 0.0))
        return self.reached


def remaining_plan(waypoints: np.ndarray, position: np.ndarray) -> np.ndarray:
    """What is left of a plan (K, 2) [m] for a vehicle at ``position`` (2,) [m]: the
    waypoints from the nearest one on (a resumed plan picks up where the vehicle is)."""
    waypoints = np.asarray(waypoints, dtype=float)
    distances = np.linalg.norm(waypoints - checked_position(position), axis=1)
    return waypoints[int(np.argmin(distances)):]
