"""Navigation besides odometry in the world frame: a declared static ``map`` ← ``odom``
transform, and position fixes as declared resets of the horizontal position.

REP-105: ``map`` and ``odom`` are both world-fixed and z-up, so the transform between them
is a rotation by a yaw about +z and a translation (x, y, z) [m]; a pose (x, y, z, yaw) in
``odom`` lies in ``map`` at ``t + R(yaw₀) (x, y)``, ``z + z₀``, ``yaw + yaw₀``; roll and pitch
are unchanged, as Rz(yaw₀) Rz(yaw) Ry(pitch) Rx(roll) = Rz(yaw₀ + yaw) Ry(pitch) Rx(roll).
It is declared as a parameter: tf2 is not a dependency (on a robot with tf2 the same
numbers are on ``/tf_static``; reading them from there is not built).

A fix (GNSS at the surface, a USBL fix relayed by the vehicle) says where the vehicle was,
horizontally, at the fix's stamp. It is not fused with the odometry (that is a navigation
filter's job: robot_localization's EKF and ``navsat_transform`` on a robot, whose output is
odometry we take): it resets the horizontal position. As a localisation node's ``map`` →
``odom`` transform jumps while the odometry stays continuous (REP-105), the ingest keeps the
odometry as it comes and a horizontal correction (dx, dy) [m] that each fix sets, in force
from the fix's stamp on (:class:`HorizontalResets`). So the speed limit still judges the
odometry against itself (a 100 m correction is no jump), and readings are placed at the
odometry interpolated at their stamps plus the correction in force then, never
interpolated across a reset.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import NamedTuple

from poam_ros.ingest.pose_history import wrap

# A map <- odom rotation given as a quaternion must be about z: its x and y parts within
# this of 0 (a tilt of 2e-6 rad moves a point 1 km away by 2 mm).
TILT_TOLERANCE = 1e-6


class StaticTransform(NamedTuple):
    """``map`` ← ``odom``: translation (x, y, z) [m] after a rotation by ``yaw`` [rad] about +z."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    yaw: float = 0.0

    @classmethod
    def from_values(cls, values, tolerance: float) -> StaticTransform:
        """From ``[x, y, z, yaw]`` or ``[x, y, z, qx, qy, qz, qw]`` (a unit quaternion,
        its norm within ``tolerance`` of 1, about z); ``ValueError`` saying what is wrong."""
        values = [float(v) for v in values]
        if len(values) not in (4, 7) or not all(math.isfinite(v) for v in values):
            raise ValueError(f"a static transform is x, y, z, yaw or x, y, z, qx, qy, qz, qw "
                             f"(finite numbers), got {values}")
        if len(values) == 4:
            return cls(*values[:3], wrap(values[3]))
        qx, qy, qz, qw = values[3:]
        norm = math.hypot(qx, qy, qz, qw)
        if abs(norm - 1.0) > tolerance:
            raise ValueError(f"quaternion {values[3:]} (norm {norm:.6g}) is not a rotation")
        if max(abs(qx), abs(qy)) > TILT_TOLERANCE * norm:
            raise ValueError(f"quaternion {values[3:]} tilts odom against map; both frames are "
                             f"z-up (REP-105), so the rotation must be about z (qx = qy = 0)")
        return cls(*values[:3], wrap(2.0 * math.atan2(qz, qw)))

    def apply(self, x: float, y: float, z: float, yaw: float
              ) -> tuple[float, float, float, float]:
        """The pose (x, y, z [m], yaw [rad]) given in ``odom``, in ``map``."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (self.x + c * x - s * y, self.y + s * x + c * y, self.z + z,
                wrap(yaw + self.yaw))


class HorizontalResets:
    """The horizontal correction (dx, dy) [m] added to odometry positions, by stamp.

    Each fix sets a new correction in force from its stamp on; fixes come in stamp order.
    Corrections older than what a reading can still be placed at are forgotten
    (:meth:`forget_before`).
    """

    def __init__(self) -> None:
        self._times = [-math.inf]
        self._offsets = [(0.0, 0.0)]

    @property
    def latest_stamp(self) -> float:
        """Stamp [s] of the newest reset (-inf before the first)."""
        return self._times[-1]

    @property
    def latest(self) -> tuple[float, float]:
        """The correction (dx, dy) [m] in force from the newest reset on."""
        return self._offsets[-1]

    def at(self, t: float) -> tuple[float, float]:
        """The correction (dx, dy) [m] in force at stamp ``t`` [s]."""
        return self._offsets[bisect_right(self._times, t) - 1]

    def reset(self, t: float, dx: float, dy: float) -> None:
        """From stamp ``t`` [s] on (not before the newest reset), add (dx, dy) [m]."""
        if t < self._times[-1]:
            raise ValueError(f"reset at {t} s before the one at {self._times[-1]} s")
        self._times.append(t)
        self._offsets.append((dx, dy))

    def forget_before(self, t: float) -> None:
        """Keep the correction in force at ``t`` and the later ones."""
        first = bisect_right(self._times, t) - 1
        if first > 0:
            del self._times[1:first + 1]
            self._offsets[:first + 1] = [self._offsets[first]]

    def restart(self) -> None:
        """The odometry's clock changed: the correction now in force holds from -inf, as
        the resets' stamps belong to the old clock."""
        self._times, self._offsets = [-math.inf], [self._offsets[-1]]
