"""What a planner reads, checked before it changes anything, and what it refused, counted.

A planner follows the vehicle along its plan from the odometry it reads
(:class:`~poam_ros.planners.progress.PlanProgress`): one NaN position would make the distance
travelled NaN for good, and the plan's end would never count as reached. So every input is
checked first; a refused one is dropped whole, as if it never came, and counted under its
reason in :attr:`InputCheck.dropped`, the latest case's detail in :attr:`InputCheck.details`
(as the ingest counts its drops, with the same ``pose_*`` reasons).

Odometry stamps follow the ingest's clock rule (:class:`~poam_ros.ingest.clock_jumps.
ClockJumps`, the same parameters, the forward bound scaled with the odometry's measured rate,
so that a fast simulator's odometry skipped on a loaded computer is no jump): a stamp far
from the odometry's clock is held as a suspect, a glitch when a stamp near the clock comes
next (dropped: ``pose_stamp_outlier``), a clock change when ``stamp_reset_count`` in a row
agree (counted in :attr:`InputCheck.clock_resets`; the newest of them is used). Positions do
not depend on the clock, but a lockstep planner compares the stamps of maps with the stamp at
which the goal was reached: after a reset, the stamps of the old clock's maps mean nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from poam_ros.ingest.clock_jumps import ClockJumps, Verdict
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.pose_history import not_a_rotation
from poam_ros.ingest.reasons import (
    POSE_INVALID_ORIENTATION,
    POSE_NONFINITE,
    POSE_STAMP_OUTLIER,
    POSE_WRONG_FRAME,
)
from poam_ros.params import Params, param

MAP_WRONG_FRAME = "map_wrong_frame"
RESPONSE_MALFORMED = "response_malformed"  # an uncertainty answer that cannot be read
REASONS = (POSE_WRONG_FRAME, POSE_NONFINITE, POSE_INVALID_ORIENTATION, POSE_STAMP_OUTLIER,
           MAP_WRONG_FRAME, RESPONSE_MALFORMED)
_INGEST = IngestConfig()


@dataclass
class InputCheckConfig(Params):
    """How strictly a planner checks the odometry it reads."""

    orientation_tolerance: float = param(1e-3, "odometry whose orientation quaternion's norm "
                                               "is off 1 by more than this is not a rotation "
                                               "and is refused (pose_invalid_orientation)",
                                         low=0.0, high=0.5)
    stamp_jump_threshold: float = param(
        _INGEST.stamp_jump_threshold, "an odometry stamp further than this before the "
        "odometry's clock, or after it by more than the clock runs in this many wall s, is a "
        "suspect: a glitch (dropped) or the start of a clock change",
        unit="s", low=1e-3)
    stamp_reset_count: int = param(
        _INGEST.stamp_reset_count, "this many suspect stamps in a row, each within the "
        "threshold of the one before, are a clock change", low=1, high=1000)


class InputCheck:
    """Checks a planner's inputs against the frame it plans in (``frame``) and counts the
    ones it refuses. Not thread-safe: the caller serialises calls."""

    def __init__(self, frame: str, config: InputCheckConfig | None = None) -> None:
        self.frame = frame
        self.config = config or InputCheckConfig()
        self.dropped: Counter = Counter()
        self.details: dict[str, str] = {}
        self.last = ""  # the reason of the latest refusal
        self.clock_resets = 0
        self._clock = ClockJumps()

    def position(self, frame_id: str, position, orientation, stamp: float = 0.0,
                 now: float | None = None) -> np.ndarray | None:
        """The planar position (2,) [m] of a pose stamped ``stamp`` [s] at ``position``
        (x, y, z) [m] with ``orientation`` (x, y, z, w) in ``frame_id``, that came at wall
        time ``now`` [s] (None: unknown, the clock rule's rate stays 1); None when the pose is
        refused (another frame, a non-finite value, an orientation that is not a rotation, a
        glitched stamp) or held as a suspect stamp."""
        if frame_id != self.frame:
            return self.refuse(POSE_WRONG_FRAME, f"odometry in {frame_id!r}, expected "
                                                 f"{self.frame!r}")
        if not all(math.isfinite(v) for v in (*position, *orientation)):
            return self.refuse(POSE_NONFINITE, f"odometry at {tuple(position)} with orientation "
                                               f"{tuple(orientation)}: non-finite values")
        problem = not_a_rotation(orientation, self.config.orientation_tolerance)
        if problem is not None:
            return self.refuse(POSE_INVALID_ORIENTATION, f"odometry with {problem}")
        clock = self._clock.clock
        config = self.config
        verdict, outliers, _ = self._clock.judge(stamp, None, config.stamp_jump_threshold,
                                                 config.stamp_reset_count, now)
        for glitch, _ in outliers:
            self.refuse(POSE_STAMP_OUTLIER, f"odometry stamped {glitch:.6f} s, "
                                            f"{glitch - clock:+.6g} s from its clock: a glitch")
        if verdict is Verdict.HELD:
            return None
        self.clock_resets += verdict is Verdict.RESET
        return np.array(position[:2], dtype=float)

    def map_frame(self, frame_id: str) -> bool:
        """Whether a map in ``frame_id`` is one to plan with (counted when not)."""
        if frame_id == self.frame:
            return True
        self.refuse(MAP_WRONG_FRAME, f"map in {frame_id!r}, expected {self.frame!r}")
        return False

    def refuse(self, reason: str, detail: str) -> None:
        """Count one input dropped for ``reason`` (one of :data:`REASONS`)."""
        self.dropped[reason] += 1
        self.details[reason], self.last = detail, reason

    @property
    def total(self) -> int:
        """Inputs refused so far, all reasons together."""
        return sum(self.dropped.values())
