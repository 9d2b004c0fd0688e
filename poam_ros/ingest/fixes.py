"""Position fixes: declared resets of the horizontal position, waiting for the odometry at
their stamps (no ROS).

A fix (:meth:`PositionFixes.add`: latitude and longitude, converted with the map's geodetic
anchor) is a declared reset of the horizontal position, never fused
(:mod:`~poam_ros.ingest.navigation`): the correction fix − odometry at the fix's stamp is
added to the odometry from that stamp on (:meth:`PositionFixes.at`), including to readings
placed since then and not yet handed out (:meth:`PositionFixes.resolve` says by how much
they move; those already handed out stay where they were). The pose history keeps the
odometry as it came, so the speed limit judges the odometry against itself and a 100 m
USBL correction drops no pose. A fix whose stamp is ahead of every pose waits for one
(``pending_timeout``).

A fix is judged before it moves the vehicle. Its correction's change, the innovation
‖fix − (odometry + the correction in force)‖ at its stamp, must stay within what the
navigation can have drifted since it was last corrected:

    ‖Δ‖ ≤ fix_max_correction + fix_drift_rate · (t − t₀) + 3 σ            [m]

with t₀ the stamp of the last fix applied (before the first, of the first pose of the
odometry's clock) and σ the fix's own reported horizontal std (0 when it reports none: the
bound is then the navigation's alone). A fix beyond is a gross outlier (a fix of another
vehicle, a wrong datum, a corrupted field), dropped as ``fix_outlier``; it sets no t₀, so
the bound keeps growing and a true, large correction is taken once the drift allows it.

Fixes are dropped, counted per message, without the anchor (``fix_no_anchor``), with
status NO_FIX or never set (``fix_no_fix``), a non-finite stamp, latitude or longitude
(``fix_nonfinite``), a latitude beyond ±90° or a longitude beyond ±180° (hard limits: the
coordinates' definition) or where the anchor's projection has no place for it
(``fix_out_of_range``), a reported east or north variance that is negative, not finite or
above ``limits.fix_max_covariance`` (``fix_implausible_covariance``), a reported horizontal
std above ``fix_max_std`` (``fix_imprecise``; 0: off; a fix reporting no covariance passes),
a stamp not after the previous fix's (``fix_out_of_order``: the clock and order rules of
every stream, :mod:`~poam_ros.ingest.streams`), no pose to reset at its stamp
(``fix_no_pose``, also for a fix waiting on an odometry clock that a reset abandoned) or as
an outlier (``fix_outlier``).

Pair fixes with odometry that does not apply them itself (dead reckoning, a DVL/INS solution,
robot_localization's continuous ``odom``-frame output): odometry aided by the same fixes
would be corrected twice, and its own jump is still judged by the speed limit. Not modelled:
the lever arm of the antenna or the transponder.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.navigation import HorizontalResets
from poam_ros.ingest.pose_history import Lookup, PoseHistory
from poam_ros.ingest.reasons import (
    FIX_IMPLAUSIBLE_COVARIANCE,
    FIX_IMPRECISE,
    FIX_NO_ANCHOR,
    FIX_NO_FIX,
    FIX_NO_POSE,
    FIX_NONFINITE,
    FIX_OUT_OF_RANGE,
    FIX_OUTLIER,
    Drops,
)

if TYPE_CHECKING:  # the anchor is handed in: the ingest itself needs no pyproj or rasterio
    from poam_ros.geo.georeference import GeoReference

log = logging.getLogger(__name__)

FIX_GATE = 3.0  # the fix's stds its outlier bound allows (a 3-sigma gate)


class PositionFixes:
    """The fixes waiting for a pose and the corrections they set; see the module docstring.
    ``georeference``: the map's geodetic anchor (None: every fix is dropped)."""

    def __init__(self, config: IngestConfig, drops: Drops,
                 georeference: GeoReference | None = None) -> None:
        self.config = config
        self.georeference = georeference
        self._drops = drops
        self.applied = 0               # fixes applied
        self.last_correction = 0.0     # m, how far the latest fix moved the position
        self._resets = HorizontalResets()
        self._pending: deque = deque()  # (t, x, y, received, std) ahead of every pose
        self._corrected = -math.inf     # t₀: stamp of the last fix, or of the first pose

    def configure(self, config: IngestConfig) -> None:
        """New limits; the waiting fixes and the corrections stay."""
        self.config = config

    def at(self, t: float) -> tuple[float, float]:
        """The correction (dx, dy) [m] in force at stamp ``t`` [s]."""
        return self._resets.at(t)

    def forget_before(self, t: float) -> None:
        """Corrections older than ``t`` [s] (the pose history's oldest) are of no more use."""
        self._resets.forget_before(t)

    def check(self, t: float, latitude: float, longitude: float, status: int = 0,
              horizontal_std: float | None = None) -> tuple[float, float] | None:
        """The map position (x, y) [m] of a fix at ``t`` s, WGS 84 ``latitude``,
        ``longitude`` [deg], or None where it is dropped (see the module docstring);
        ``status`` as ``sensor_msgs/NavSatStatus`` (below 0: NO_FIX, or -2: never set, is
        no fix); ``horizontal_std`` [m], None when unknown. Its stamp's clock and order are
        :class:`~poam_ros.ingest.streams.Streams`' to judge; then :meth:`queue`."""
        refused = self._refused(t, latitude, longitude, status, horizontal_std)
        if refused is None:
            try:  # GeoError (a ValueError): a place the anchor's CRS cannot project
                x, y = self.georeference.to_map(longitude, latitude)
                return float(x), float(y)
            except ValueError as error:
                refused = FIX_OUT_OF_RANGE, str(error)
        reason, why = refused
        self._drops.drop(reason, 1, f"fix at t={t:.6f} s ({latitude!r}, {longitude!r}): {why}")
        return None

    def _refused(self, t: float, latitude: float, longitude: float, status: int,
                 horizontal_std: float | None) -> tuple[str, str] | None:
        """(reason, why) a fix is dropped before its position is projected, or None."""
        if self.georeference is None:
            return FIX_NO_ANCHOR, ("no geodetic anchor for the map frame (set geo.anchor), so "
                                   "a latitude/longitude has no place")
        if status < 0:
            return FIX_NO_FIX, f"status {status} (NO_FIX is -1, -2 never set)"
        if not all(math.isfinite(v) for v in (t, latitude, longitude)):
            return FIX_NONFINITE, "non-finite stamp or position"
        if abs(latitude) > 90.0 or abs(longitude) > 180.0:
            return FIX_OUT_OF_RANGE, "latitude beyond ±90° or longitude beyond ±180°"
        plausible = self.config.limits.fix_max_covariance
        if horizontal_std is not None and not 0.0 <= horizontal_std ** 2 <= plausible:
            return FIX_IMPLAUSIBLE_COVARIANCE, (
                f"horizontal variance {horizontal_std ** 2:.3g} m² negative, not finite or "
                f"above limits.fix_max_covariance {plausible:g} m²")
        limit = self.config.fix_max_std
        if limit and horizontal_std is not None and not horizontal_std <= limit:
            return FIX_IMPRECISE, (f"horizontal std {horizontal_std:.3g} m above fix_max_std "
                                   f"{limit:g} m")
        return None

    def queue(self, t: float, x: float, y: float, now: float,
              horizontal_std: float | None = None) -> bool:
        """A checked fix at ``t`` s, map position (x, y) [m], received at wall time ``now``
        [s], with its reported ``horizontal_std`` [m] (None: unknown), waits for
        :meth:`resolve`; True."""
        self._pending.append((t, x, y, now, horizontal_std or 0.0))
        return True

    def resolve(self, poses: PoseHistory) -> list[tuple[float, np.ndarray]]:
        """Apply the waiting fixes that ``poses`` (the odometry as it came) now reach, in
        stamp order: for each, (its stamp [s], the change (dx, dy) [m] of the correction from
        then on), by which the samples placed since then move."""
        changes = []
        if self._corrected == -math.inf and len(poses):
            self._corrected = poses.oldest_time
        while self._pending:
            t, x, y, _, std = self._pending[0]
            status, pose = poses.lookup(t)
            if status in (Lookup.EMPTY, Lookup.FUTURE):
                break
            self._pending.popleft()
            if status is Lookup.PLACED:
                if self._plausible(t, x - pose.x, y - pose.y, std):
                    changes.append((t, self._reset(t, x - pose.x, y - pose.y)))
            else:
                self._drops.drop(FIX_NO_POSE, 1, f"fix at t={t:.6f} s: no odometry to reset ("
                                 f"{status.value}: poses more than {self.config.max_pose_gap:g}"
                                 f" s apart around it, or older than the pose history)")
        return changes

    def _plausible(self, t: float, dx: float, dy: float, std: float) -> bool:
        """Whether the correction (dx, dy) [m] at ``t`` s of a fix of horizontal ``std`` [m]
        is within the module docstring's bound; else it is dropped."""
        old_x, old_y = self._resets.latest
        change = math.hypot(dx - old_x, dy - old_y)
        config = self.config
        elapsed = max(t - self._corrected, 0.0)
        bound = config.fix_max_correction + config.fix_drift_rate * elapsed + FIX_GATE * std
        if change <= bound:
            return True
        return self._drops.drop(FIX_OUTLIER, 1, f"fix at t={t:.6f} s would move the position "
                                f"by {change:.6g} m, beyond the {bound:.6g} m the navigation "
                                f"can have drifted in the {elapsed:.6g} s since its last fix "
                                f"(fix_max_correction + fix_drift_rate * dt + {FIX_GATE:g} "
                                f"std)")

    def _reset(self, t: float, dx: float, dy: float) -> np.ndarray:
        """From stamp ``t`` on, odometry positions get (dx, dy) [m]; the change."""
        old_x, old_y = self._resets.latest
        shift = np.array([dx - old_x, dy - old_y])
        self._resets.reset(t, dx, dy)
        self._corrected = t
        self.applied += 1
        self.last_correction = float(np.hypot(*shift))
        log.info("fix at t=%.6f s: horizontal position reset by (%+.3f, %+.3f) m", t, *shift)
        return shift

    def expire(self, now: float, last_pose_wall: float) -> None:
        """Give up the fixes waiting since before ``now - pending_timeout`` (wall [s]) while
        no pose came (the newest at wall time ``last_pose_wall``)."""
        timeout = self.config.pending_timeout
        while self._pending and now - max(self._pending[0][3], last_pose_wall) > timeout:
            t = self._pending.popleft()[0]
            self._drops.drop(FIX_NO_POSE, 1, f"fix at t={t:.6f} s: no pose came after it for "
                             f"{timeout:g} s")

    def restart(self, low: float, high: float) -> None:
        """The odometry's clock was reset, its new clock's stamps within [``low``, ``high``]
        s: the correction in force holds from then on, and waiting fixes stamped outside the
        new clock are dropped."""
        self._resets.restart()
        self._corrected = -math.inf  # t₀ again from the new clock's first pose
        for fix in [f for f in self._pending if not low <= f[0] <= high]:
            self._pending.remove(fix)
            self._drops.drop(FIX_NO_POSE, 1, f"fix at t={fix[0]:.6f} s: of the odometry clock "
                             f"before its reset")
