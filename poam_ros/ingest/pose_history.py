"""A short, time-ordered history of vehicle poses, interpolated at sensor timestamps.

Poses are ``(t, x, y, z, yaw, roll, pitch)``: seconds, metres in the world frame, radians
(yaw about +z; roll and pitch as in :mod:`poam_ros.attitude`, 0 for a level vehicle).
Between two stored poses, position is interpolated linearly and the angles along the
shorter arc of the circle, so a heading crossing ±π does not swing through zero. Readings are placed
only between two poses (never extrapolated), and only when those poses are close enough
in time for a straight segment to describe the motion between them.

Per-reading work is scalar Python over a bisected list: a reading needs one pose, and
numpy's per-call overhead would dominate at sensor rates.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from enum import Enum
from typing import NamedTuple

# Stamps this close count as the same instant: ROS stamps are integer nanoseconds and a
# float seconds value of a few thousand seconds carries about 1e-12 s of rounding.
STAMP_TOLERANCE = 1e-6  # s


class PlacedPose(NamedTuple):
    x: float
    y: float
    z: float
    yaw: float
    roll: float = 0.0
    pitch: float = 0.0


class Lookup(Enum):
    """Why a timestamp could not be placed (``PLACED`` when it was)."""

    PLACED = "placed"
    EMPTY = "empty"          # no pose yet: wait
    FUTURE = "future"        # newer than the latest pose: wait for the next one
    STALE = "stale"          # older than the oldest pose kept: no pose will come
    GAP = "gap"              # the poses around it are too far apart in time


def wrap(angle: float) -> float:
    """``angle`` wrapped to (-π, π]."""
    wrapped = math.remainder(angle, math.tau)
    return math.pi if wrapped == -math.pi else wrapped


class PoseHistory:
    """Poses of the last ``horizon`` seconds (of stamp time), appended in time order.

    Args:
        horizon: poses older than the newest minus this are forgotten [s].
        max_gap: two neighbouring poses further apart than this cannot place a reading
            between them [s].
    """

    def __init__(self, horizon: float, max_gap: float) -> None:
        self.horizon = float(horizon)
        self.max_gap = float(max_gap)
        self._times: list[float] = []
        self._poses: list[tuple[float, float, float, float, float, float]] = []
        self._first = 0  # index of the oldest pose kept; the prefix is dropped lazily

    def __len__(self) -> int:
        return len(self._times) - self._first

    @property
    def latest(self) -> tuple[float, ...] | None:
        """(t, x, y, z, yaw, roll, pitch) of the newest pose, or None."""
        if not len(self):
            return None
        return (self._times[-1], *self._poses[-1])

    @property
    def oldest_time(self) -> float | None:
        return self._times[self._first] if len(self) else None

    def poses_since(self, t: float) -> list[tuple[float, ...]]:
        """(t, x, y, z, yaw, roll, pitch) of the poses from the newest one at or before ``t``
        on (all of them when none is)."""
        index = max(bisect_left(self._times, t + STAMP_TOLERANCE, self._first) - 1,
                    self._first)
        return [(self._times[i], *self._poses[i]) for i in range(index, len(self._times))]

    def append(self, t: float, x: float, y: float, z: float, yaw: float, roll: float = 0.0,
               pitch: float = 0.0) -> None:
        """Store a pose; the caller guarantees ``t`` is newer than :attr:`latest`."""
        self._times.append(t)
        self._poses.append((x, y, z, yaw, roll, pitch))
        cutoff = t - self.horizon
        first = self._first
        while first < len(self._times) - 1 and self._times[first] < cutoff:
            first += 1
        self._first = first
        if first > 1024 and first > len(self._times) // 2:  # amortised compaction
            del self._times[:first]
            del self._poses[:first]
            self._first = 0

    def clear(self) -> None:
        """Forget every pose: after a clock reset they belong to another clock."""
        self._times.clear()
        self._poses.clear()
        self._first = 0

    def lookup(self, t: float) -> tuple[Lookup, PlacedPose | None]:
        """The pose at ``t`` s, interpolated between the poses around it."""
        if not len(self):
            return Lookup.EMPTY, None
        times = self._times
        if t > times[-1] + STAMP_TOLERANCE:
            return Lookup.FUTURE, None
        if t < times[self._first] - STAMP_TOLERANCE:
            return Lookup.STALE, None
        i = bisect_left(times, t, self._first)
        if i < len(times) and abs(times[i] - t) <= STAMP_TOLERANCE:
            return Lookup.PLACED, PlacedPose(*self._poses[i])
        if i > self._first and abs(times[i - 1] - t) <= STAMP_TOLERANCE:
            return Lookup.PLACED, PlacedPose(*self._poses[i - 1])
        if i == self._first or i == len(times):  # within tolerance of an end, handled above
            return Lookup.STALE if i == self._first else Lookup.FUTURE, None
        t0, t1 = times[i - 1], times[i]
        if t1 - t0 > self.max_gap:
            return Lookup.GAP, None
        f = (t - t0) / (t1 - t0)
        x0, y0, z0, *angles0 = self._poses[i - 1]
        x1, y1, z1, *angles1 = self._poses[i]
        return Lookup.PLACED, PlacedPose(x0 + f * (x1 - x0), y0 + f * (y1 - y0),
                                         z0 + f * (z1 - z0),
                                         *(wrap(a0 + f * wrap(a1 - a0))
                                           for a0, a1 in zip(angles0, angles1)))


def not_a_rotation(orientation, tolerance: float) -> str | None:
    """Why a quaternion (x, y, z, w) is no rotation (its norm off 1 by more than
    ``tolerance``, or not finite), as ``"orientation (…) (norm n): not a rotation"``; None
    when it is one. A zero quaternion would otherwise give atan2 a made-up heading of 0."""
    norm = math.hypot(*orientation)
    if abs(norm - 1.0) <= tolerance:  # NaN compares False: refused too
        return None
    return f"orientation {tuple(orientation)} (norm {norm:.6g}): not a rotation"

