"""Readings placed at the vehicle's pose, or waiting for it (no ROS).

Each reading is placed at the vehicle pose interpolated at its timestamp
(the odometry's history, :mod:`~poam_ros.ingest.poses`; attitude and depth from the IMU and
the pressure sensor where they are enabled, :mod:`~poam_ros.ingest.attitude_depth`), plus
the position fixes' correction in force then (:mod:`~poam_ros.ingest.fixes`), and its
samples go to the :class:`~poam_ros.ingest.batcher.Batcher`. A reading stamped ahead of
the poses waits for them (at most ``max_pending``: the oldest overflows, ``queue_overflow``)
and is given up (``no_pose``) once no pose has come for ``pending_timeout`` wall seconds;
one between poses too far apart is a ``pose_gap``, one older than the history
``stale_stamp``.

Geometry. A range is measured straight down, so its sample is ``(x, y, z - range)`` at the
pose; a channel reading's sample is the vehicle's ``(x, y)`` there, its value in the
channel's column (the sensor's lever arm is neglected: a scalar field varies little over a
vehicle's length). A swath point ``p`` in the sonar frame becomes ``position + R_vehicle
(t_mount + R_mount p)``: the sonar sits at the lever arm ``t_mount`` (``sonar_mount_xyz``,
vehicle frame: x forward, y left, z up) rotated by ``R_mount`` (``sonar_mount_rpy``), and
the vehicle's attitude ``R_vehicle`` = R(roll, pitch, yaw) (:mod:`poam_ros.attitude`) comes
from the odometry's quaternion (level when a pose comes without one). Sound-velocity (ray
bending) correction is out of scope: beams are straight.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Callable

import numpy as np

from poam_ros.attitude import rotation_matrix
from poam_ros.ingest.attitude_depth import AttitudeDepth
from poam_ros.ingest.batcher import Batcher
from poam_ros.ingest.channels import CHANNEL
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.fixes import PositionFixes
from poam_ros.ingest.pose_history import Lookup, PlacedPose
from poam_ros.ingest.poses import Odometry
from poam_ros.ingest.reasons import (
    NO_POSE,
    POSE_GAP,
    QUEUE_OVERFLOW,
    STALE_STAMP,
    Drops,
)
from poam_ros.ingest.streams import RANGE, SWATH


class Placement:
    """The readings waiting for a pose, placed at the ``odometry``'s poses (the attitude and
    depth from ``attitude_depth`` where enabled) corrected by ``fixes``; their samples go to
    ``batcher``."""

    def __init__(self, config: IngestConfig, drops: Drops, odometry: Odometry,
                 attitude_depth: AttitudeDepth, fixes: PositionFixes, batcher: Batcher) -> None:
        self.config = config
        self._drops = drops
        self._odometry = odometry
        self._attitude_depth = attitude_depth
        self._fixes = fixes
        self._batcher = batcher
        self.channel_placed: Counter = Counter()  # per channel, readings placed as samples
        self._pending: deque = deque()   # (t, kind, payload, received)
        self._columns = {CHANNEL + name: 3 + index for index, name in enumerate(config.channels)}

    def configure(self, config: IngestConfig) -> None:
        """A new configuration; the waiting readings stay (the channels do not change)."""
        self.config = config

    @property
    def pending(self) -> int:
        """Readings waiting for a pose."""
        return len(self._pending)

    def waiting(self, kind: str) -> int:
        """Readings of ``kind`` waiting for a pose."""
        return sum(entry[1] == kind for entry in self._pending)

    def place(self, t: float, kind: str, payload, now: float) -> bool:
        """A reading of ``kind`` (a range [m], a swath's (N, 3) points [m], a channel's
        value) stamped ``t`` s: placed (its arrival checked at wall time ``now``), waiting,
        or dropped (False)."""
        status, pose = self._lookup(t)
        if status is Lookup.PLACED:
            self._add(t, kind, payload, pose)
            self._batcher.try_flush(now)
            return True
        if status in (Lookup.EMPTY, Lookup.FUTURE):
            if len(self._pending) >= self.config.max_pending:
                oldest = self._pending.popleft()
                self._drops.drop(QUEUE_OVERFLOW, _samples(oldest), f"more than "
                                 f"{self.config.max_pending} readings waiting for a pose")
            self._pending.append((t, kind, payload, now))
            return True
        return self._unplaceable(status, t, kind, _samples((t, kind, payload)))

    def resolve_pending(self) -> None:
        """Place the waiting readings that the series now reach."""
        if not self._pending:
            return
        waiting = deque()
        for entry in self._pending:
            t, kind, payload, _ = entry
            status, pose = self._lookup(t)
            if status is Lookup.PLACED:
                self._add(t, kind, payload, pose)
            elif status in (Lookup.EMPTY, Lookup.FUTURE):
                waiting.append(entry)
            else:
                self._unplaceable(status, t, kind, _samples(entry))
        self._pending = waiting

    def expire(self, now: float) -> None:
        """Give up the readings waiting since ``pending_timeout`` before ``now`` (wall [s])."""
        if not self._pending:
            return
        timeout = self.config.pending_timeout
        keep = deque()
        for entry in self._pending:
            # Waiting is fine while poses keep coming (the odometry queue may lag the
            # sonar's); a reading is given up once they have stopped for the timeout.
            if now - max(entry[3], self._odometry.last_pose_wall) > timeout:
                self._drops.drop(NO_POSE, _samples(entry), f"no pose came after t="
                                 f"{entry[0]:.6f} s for {timeout:g} s")
            else:
                keep.append(entry)
        self._pending = keep

    def abandon(self, keep: Callable[[float, str], bool]) -> int:
        """Drop the waiting readings for which ``keep(t, kind)`` is false; their samples."""
        kept = [keep(entry[0], entry[1]) for entry in self._pending]
        abandoned = sum(_samples(e) for e, k in zip(self._pending, kept) if not k)
        self._pending = deque(e for e, k in zip(self._pending, kept) if k)
        return abandoned

    def _lookup(self, t: float) -> tuple[Lookup, PlacedPose | None]:
        """The vehicle's pose at ``t``: the odometry's, its attitude and depth replaced by
        the enabled sensors'."""
        status, pose = self._odometry.poses.lookup(t)
        if status is Lookup.PLACED and self._attitude_depth.streams:
            return self._attitude_depth.place(t, pose)
        return status, pose

    def _unplaceable(self, status: Lookup, t: float, kind: str, samples: int) -> bool:
        if status is Lookup.GAP:
            return self._drops.drop(POSE_GAP, samples, f"{kind} at t={t:.6f} s lies between "
                                    f"poses more than {self.config.max_pose_gap:g} s apart")
        oldest = self._odometry.poses.oldest_time
        return self._drops.drop(STALE_STAMP, samples, f"{kind} at t={t:.6f} s is older than "
                                f"the pose history (from t={oldest:.6f} s)")

    def _add(self, t: float, kind: str, payload, pose: PlacedPose) -> None:
        """The reading's samples (see the module docstring's geometry) to the batcher."""
        dx, dy = self._fixes.at(t)
        pose = pose._replace(x=pose.x + dx, y=pose.y + dy)
        if kind == RANGE:
            points = np.array([[pose.x, pose.y, pose.z - payload]])
        elif kind != SWATH:  # a channel's reading: its value in its column
            self.channel_placed[kind[len(CHANNEL):]] += 1
            points = np.full((1, 3 + len(self._columns)), np.nan)
            points[0, :2] = pose.x, pose.y
            points[0, self._columns[kind]] = payload
        else:  # position + R_vehicle (t_mount + R_mount p), row vectors
            config = self.config
            mounted = config.sonar_mount_xyz + payload @ rotation_matrix(
                *config.sonar_mount_rpy).T
            points = (np.array([pose.x, pose.y, pose.z])
                      + mounted @ rotation_matrix(pose.roll, pose.pitch, pose.yaw).T)
        self._batcher.add(t, kind, points)


def _samples(entry) -> int:
    """Samples a pending entry (t, kind, payload, ...) stands for."""
    return len(entry[2]) if entry[1] == SWATH else 1
