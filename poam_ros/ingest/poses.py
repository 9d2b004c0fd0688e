"""The odometry stream: its checks and the pose history it fills (no ROS).

An odometry pose (x, y, z [m], yaw [rad], and the orientation quaternion the yaw was read
from, when it came as one) passes, in this order:

* its frames, when given: ``world_frame`` (or ``odom_frame``, when declared) → ``base_frame``,
  else ``pose_wrong_frame``. A pose in ``odom_frame`` is placed in the world frame by the
  declared static transform ``map_from_odom`` (:mod:`~poam_ros.ingest.navigation`) before
  any other check;
* finite values, else ``pose_nonfinite``;
* an orientation that is a rotation (finite, its norm within ``orientation_tolerance`` of 1),
  else ``pose_invalid_orientation``: the atan2 of a zero quaternion's yaw is a made-up
  heading of 0. Its roll and pitch place the swath points; without one the vehicle counts
  as level;
* the clock rule of every stream (:mod:`~poam_ros.ingest.streams`);
* order against the history: the newest pose again, unchanged, is a repeat (a vehicle held
  in lockstep repeats its arrival pose, in case it was lost), ignored; another pose stamped
  within ``STAMP_TOLERANCE`` of the newest is a ``pose_duplicate``, an older one
  ``pose_out_of_order``, and a move farther than ``max_speed`` · Δt + ``jump_tolerance`` from
  the newest a ``pose_jump``.

A pose kept joins the :class:`~poam_ros.ingest.pose_history.PoseHistory` the readings are
placed on (:mod:`~poam_ros.ingest.placement`), and its wall time of arrival times out the
readings and fixes that wait for a pose.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from poam_ros.attitude import roll_pitch_from_quaternion
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.navigation import StaticTransform
from poam_ros.ingest.pose_history import STAMP_TOLERANCE, PoseHistory, not_a_rotation
from poam_ros.ingest.reasons import (
    POSE_DUPLICATE,
    POSE_INVALID_ORIENTATION,
    POSE_JUMP,
    POSE_NONFINITE,
    POSE_OUT_OF_ORDER,
    POSE_WRONG_FRAME,
    Drops,
)


class Pose(NamedTuple):
    """An odometry pose in the world frame: m and rad."""

    x: float
    y: float
    z: float
    yaw: float
    roll: float
    pitch: float


class Odometry:
    """The odometry's frames (``map_from_odom``), its checks and its pose history
    (:attr:`poses`); drops are counted in ``drops``. ``ValueError`` where ``map_from_odom``
    is no transform."""

    def __init__(self, config: IngestConfig, drops: Drops) -> None:
        self._drops = drops
        self.poses = PoseHistory(config.pose_history, config.max_pose_gap)
        self.last_pose_wall = -math.inf  # wall time of the newest pose kept
        self.configure(config)

    def configure(self, config: IngestConfig) -> None:
        """A new configuration (``ValueError``, with nothing changed, where its
        ``map_from_odom`` is no transform); the history keeps what it holds."""
        self._map_from_odom = StaticTransform.from_values(config.map_from_odom,
                                                          config.orientation_tolerance)
        self.config = config
        self.poses.horizon, self.poses.max_gap = config.pose_history, config.max_pose_gap

    def check(self, t: float, x: float, y: float, z: float, yaw: float,
              frame_id: str | None = None, child_frame_id: str | None = None,
              orientation: tuple[float, float, float, float] | None = None) -> Pose | None:
        """The pose in the world frame, or None when it is dropped (frames, values and
        orientation; see the module docstring)."""
        config, drop = self.config, self._drops.drop
        frames = (config.world_frame, config.odom_frame) if config.odom_frame else \
            (config.world_frame,)
        if frame_id is not None and (frame_id not in frames
                                     or child_frame_id != config.base_frame):
            drop(POSE_WRONG_FRAME, 1, f"odometry in {frame_id!r} -> {child_frame_id!r}, "
                 f"expected {' or '.join(map(repr, frames))} -> {config.base_frame!r}")
            return None
        if frame_id is not None and frame_id == config.odom_frame:
            x, y, z, yaw = self._map_from_odom.apply(x, y, z, yaw)
        if not all(math.isfinite(v) for v in (t, x, y, z, yaw)):
            drop(POSE_NONFINITE, 1, f"odometry at t={t} has non-finite values")
            return None
        problem = (None if orientation is None
                   else not_a_rotation(orientation, config.orientation_tolerance))
        if problem is not None:
            drop(POSE_INVALID_ORIENTATION, 1, f"odometry at t={t:.6f} s with {problem}")
            return None
        roll, pitch = (0.0, 0.0) if orientation is None else \
            roll_pitch_from_quaternion(orientation)
        return Pose(x, y, z, yaw, roll, pitch)

    def add(self, t: float, pose: Pose, now: float) -> bool:
        """Order, duplicates and jumps of a checked ``pose`` stamped ``t`` s against the
        history; then it is kept (True), received at wall time ``now`` [s]."""
        config = self.config
        latest = self.poses.latest
        drop = self._drops.drop
        if latest is not None:
            t_last, x_last, y_last = latest[:3]
            if abs(t - t_last) <= STAMP_TOLERANCE:
                if tuple(latest[1:]) == tuple(pose):  # heard again: nothing new, no fault
                    return False
                return drop(POSE_DUPLICATE, 1, f"second odometry stamped {t:.9f} s")
            if t < t_last:
                return drop(POSE_OUT_OF_ORDER, 1, f"odometry stamped {t:.6f} s after one "
                            f"stamped {t_last:.6f} s")
            distance = math.hypot(pose.x - x_last, pose.y - y_last)
            if distance > config.max_speed * (t - t_last) + config.jump_tolerance:
                return drop(POSE_JUMP, 1, f"odometry jumped {distance:.3g} m in "
                            f"{t - t_last:.3g} s (max_speed {config.max_speed:g} m/s)")
        self.poses.append(t, *pose)
        self.last_pose_wall = now
        return True
