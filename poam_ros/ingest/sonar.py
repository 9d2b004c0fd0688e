"""The sonar's readings: an echo sounder's ranges and a multibeam's swaths, checked (no ROS).

A reading in another frame than ``sonar_frame`` is ``wrong_frame`` and one with a non-finite
stamp ``stale_stamp`` (:meth:`Streams.admit <poam_ros.ingest.streams.Streams.admit>`); a
swath whose points are not an (N, 3) array is ``malformed``. Then the clock and order rules
of every stream (:mod:`~poam_ros.ingest.streams`), and the values:

* a range [m] (``sensor_msgs/Range``) of +inf is ``no_return`` (REP-117), another
  non-finite one ``nonfinite_range``, a negative one ``negative_range``, one outside the
  message's own [``min_range``, ``max_range``] ``range_out_of_limits``;
* a swath point [m, sonar frame] that is not finite is ``nonfinite_point``, one whose
  distance from the sonar lies outside [``swath_min_range``, ``swath_max_range``]
  ``range_out_of_limits``: each point is dropped alone, the rest of the ping is kept.

Each drop counts the samples lost (a swath's points). What passes is placed at the vehicle's
pose (:mod:`~poam_ros.ingest.placement`).
"""

from __future__ import annotations

import math

import numpy as np

from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.reasons import (
    NEGATIVE_RANGE,
    NO_RETURN,
    NONFINITE_POINT,
    NONFINITE_RANGE,
    RANGE_OUT_OF_LIMITS,
    Drops,
)


class Sonar:
    """The checks of the sonar's ranges and swaths (see the module docstring); drops are
    counted in ``drops``."""

    def __init__(self, config: IngestConfig, drops: Drops) -> None:
        self.config = config
        self._drops = drops

    def configure(self, config: IngestConfig) -> None:
        """New swath limits."""
        self.config = config

    def range_ok(self, t: float, distance: float, min_range: float, max_range: float) -> bool:
        """Whether the range ``distance`` [m] at ``t`` s is a return within the message's
        limits [m] (else it is counted)."""
        drop = self._drops.drop
        if distance == math.inf:
            return drop(NO_RETURN, 1, f"no return at t={t:.6f} s")
        if not math.isfinite(distance):
            return drop(NONFINITE_RANGE, 1, f"range {distance} at t={t:.6f} s")
        if distance < 0:
            return drop(NEGATIVE_RANGE, 1, f"range {distance:g} m at t={t:.6f} s")
        if not min_range <= distance <= max_range:
            return drop(RANGE_OUT_OF_LIMITS, 1, f"range {distance:g} m outside the message's "
                        f"[{min_range:g}, {max_range:g}] m")
        return True

    def swath_points(self, t: float, points: np.ndarray) -> np.ndarray:
        """The finite points (M, 3) [m] of the swath ``points`` (N, 3) at ``t`` s within the
        swath's range limits; the others are counted."""
        finite = np.isfinite(points).all(axis=1)
        if not finite.all():
            self._drops.drop(NONFINITE_POINT, int((~finite).sum()),
                             f"swath at t={t:.6f} s has non-finite points")
            points = points[finite]
        low, high = self.config.swath_min_range, self.config.swath_max_range
        reach = np.linalg.norm(points, axis=1)
        inside = (reach >= low) & (reach <= high)
        if not inside.all():
            self._drops.drop(RANGE_OUT_OF_LIMITS, int((~inside).sum()),
                             f"swath points outside [{low:g}, {high:g}] m")
            points = points[inside]
        return points
