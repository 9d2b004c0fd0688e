"""What a planner reads, checked before it changes anything, and what it refused, counted.

A planner follows the vehicle along its plan from the odometry it reads
(:class:`~poam_ros.planners.progress.PlanProgress`): one NaN position would make the distance
travelled NaN for good, and the plan's end would never count as reached. So every input is
checked first; a refused one is dropped whole, as if it never came, and counted under its
reason in :attr:`InputCheck.dropped`, the latest case's detail in :attr:`InputCheck.details`
(as the ingest counts its drops, with the same ``pose_*`` reasons).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from poam_ros.ingest.core import POSE_INVALID_ORIENTATION, POSE_NONFINITE, POSE_WRONG_FRAME
from poam_ros.ingest.pose_history import not_a_rotation
from poam_ros.params import Params, param

MAP_WRONG_FRAME = "map_wrong_frame"
RESPONSE_MALFORMED = "response_malformed"  # an uncertainty answer that cannot be read
REASONS = (POSE_WRONG_FRAME, POSE_NONFINITE, POSE_INVALID_ORIENTATION, MAP_WRONG_FRAME,
           RESPONSE_MALFORMED)


@dataclass
class InputCheckConfig(Params):
    """How strictly a planner checks the odometry it reads."""

    orientation_tolerance: float = param(1e-3, "odometry whose orientation quaternion's norm "
                                               "is off 1 by more than this is not a rotation "
                                               "and is refused (pose_invalid_orientation)",
                                         low=0.0, high=0.5)


class InputCheck:
    """Checks a planner's inputs against the frame it plans in (``frame``) and counts the
    ones it refuses. Not thread-safe: the caller serialises calls."""

    def __init__(self, frame: str, config: InputCheckConfig | None = None) -> None:
        self.frame = frame
        self.config = config or InputCheckConfig()
        self.dropped: Counter = Counter()
        self.details: dict[str, str] = {}
        self.last = ""  # the reason of the latest refusal

    def position(self, frame_id: str, position, orientation) -> np.ndarray | None:
        """The planar position (2,) [m] of a pose at ``position`` (x, y, z) [m] with
        ``orientation`` (x, y, z, w) in ``frame_id``; None when the pose is refused: another
        frame, a non-finite value, or an orientation that is not a rotation."""
        if frame_id != self.frame:
            return self.refuse(POSE_WRONG_FRAME, f"odometry in {frame_id!r}, expected "
                                                 f"{self.frame!r}")
        if not all(math.isfinite(v) for v in (*position, *orientation)):
            return self.refuse(POSE_NONFINITE, f"odometry at {tuple(position)} with orientation "
                                               f"{tuple(orientation)}: non-finite values")
        problem = not_a_rotation(orientation, self.config.orientation_tolerance)
        if problem is not None:
            return self.refuse(POSE_INVALID_ORIENTATION, f"odometry with {problem}")
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
