"""Why the ingest drops an input: every reason, defined once, and the tally that counts them.

Counted in samples (one per range or reading, one per swath point), except the ``pose_*``,
``fix_*``, ``imu_*``, ``pressure_invalid``, ``depth_out_of_limits`` and
``malformed_message`` reasons, which count messages. The ``value_``, ``depth_`` and
``imu_rate_out_of_limits`` reasons are the declared plausibility limits'
(:class:`~poam_ros.ingest.config.LimitsConfig`). The ingest
node publishes each as ``dropped.<reason>`` (:data:`REASONS`); the mission, the remap and
the planner's input check name them from here.
"""

from __future__ import annotations

from collections import Counter

from poam_ros.diagnostics import LOST_IN_TRANSPORT, IngestStatus

WRONG_FRAME = "wrong_frame"
NO_RETURN = "no_return"  # a range of +inf: the sonar detected nothing (REP-117)
NONFINITE_RANGE = "nonfinite_range"
NEGATIVE_RANGE = "negative_range"
RANGE_OUT_OF_LIMITS = "range_out_of_limits"
VALUE_OUT_OF_LIMITS = "value_out_of_limits"  # a channel's reading beyond its type's limits
NONFINITE_POINT = "nonfinite_point"
MALFORMED = "malformed_message"
OUT_OF_ORDER = "out_of_order"
STALE_STAMP = "stale_stamp"
POSE_GAP = "pose_gap"
NO_POSE = "no_pose"
QUEUE_OVERFLOW = "queue_overflow"
LATE = "late"
OUTSIDE_WORKSPACE = "outside_workspace"
VOXEL_MERGED = "voxel_merged"
STATISTICAL_OUTLIER = "statistical_outlier"
POSE_WRONG_FRAME = "pose_wrong_frame"
POSE_NONFINITE = "pose_nonfinite"
POSE_DUPLICATE = "pose_duplicate"
POSE_OUT_OF_ORDER = "pose_out_of_order"
POSE_JUMP = "pose_jump"
POSE_INVALID_ORIENTATION = "pose_invalid_orientation"  # the quaternion is not a rotation
POSE_STAMP_OUTLIER = "pose_stamp_outlier"  # a glitched stamp, far from the odometry's clock
STAMP_OUTLIER = "stamp_outlier"            # the same for a range or swath
CLOCK_RESET = "clock_reset"  # a reading waiting for a pose of a clock that a reset abandoned
DUPLICATE = "duplicate"  # a second message of a stream with the same stamp
# Position fixes (fixes.py).
FIX_NO_ANCHOR = "fix_no_anchor"
FIX_NO_FIX = "fix_no_fix"
FIX_NONFINITE = "fix_nonfinite"
FIX_OUT_OF_RANGE = "fix_out_of_range"
FIX_IMPRECISE = "fix_imprecise"
FIX_OUT_OF_ORDER = "fix_out_of_order"
FIX_NO_POSE = "fix_no_pose"
FIX_IMPLAUSIBLE_COVARIANCE = "fix_implausible_covariance"
FIX_OUTLIER = "fix_outlier"  # a correction beyond the navigation's stated uncertainty
# Attitude and depth sensors (attitude_depth.py).
IMU_INVALID = "imu_invalid"            # no orientation, or one that is not a rotation
PRESSURE_INVALID = "pressure_invalid"  # a non-finite pressure
DEPTH_OUT_OF_LIMITS = "depth_out_of_limits"  # the pressure's depth beyond the limits
IMU_RATE_OUT_OF_LIMITS = "imu_rate_out_of_limits"  # a turn faster than attitude_rate_max
FIX_REASONS = (FIX_NO_ANCHOR, FIX_NO_FIX, FIX_NONFINITE, FIX_OUT_OF_RANGE,
               FIX_IMPLAUSIBLE_COVARIANCE, FIX_IMPRECISE, FIX_OUT_OF_ORDER, FIX_NO_POSE,
               FIX_OUTLIER)
REASONS = (WRONG_FRAME, NO_RETURN, NONFINITE_RANGE, NEGATIVE_RANGE, RANGE_OUT_OF_LIMITS,
           NONFINITE_POINT, MALFORMED, DUPLICATE, OUT_OF_ORDER, STALE_STAMP, STAMP_OUTLIER,
           CLOCK_RESET, POSE_GAP, NO_POSE, QUEUE_OVERFLOW, LATE, OUTSIDE_WORKSPACE,
           VOXEL_MERGED, STATISTICAL_OUTLIER, POSE_WRONG_FRAME, POSE_NONFINITE,
           POSE_INVALID_ORIENTATION, POSE_DUPLICATE, POSE_OUT_OF_ORDER, POSE_STAMP_OUTLIER,
           POSE_JUMP, VALUE_OUT_OF_LIMITS, IMU_INVALID, IMU_RATE_OUT_OF_LIMITS,
           PRESSURE_INVALID, DEPTH_OUT_OF_LIMITS, *FIX_REASONS)


class Drops:
    """The ingest's drops: ``counts`` per reason (the unit above) and ``details``, the latest
    case of each reason in words. One tally, shared by the ingest's parts."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.details: dict[str, str] = {}

    def drop(self, reason: str, count: int, detail: str) -> bool:
        """Count ``count`` under ``reason``; False, for callers that return whether they kept
        the input."""
        self.counts[reason] += count
        self.details[reason] = detail
        return False


#: the ingest node's drops that depend on its wall clock and DDS, not on its data
TIMING_DEPENDENT_DROPS = (LATE, NO_POSE, QUEUE_OVERFLOW, LOST_IN_TRANSPORT)


def timing_dependent(status: IngestStatus) -> dict[str, int]:
    """The ingest node's decisions that depended on its timing, not on its data: flushes on
    the grace period, and readings dropped late, without a pose, on a full queue or in
    transport. Where any is non-zero a run is not reproducible from its sensor data."""
    return {"flushes on grace": status.flushes_on_grace,
            **{f"dropped {reason}": status.dropped.get(reason, 0)
               for reason in TIMING_DEPENDENT_DROPS}}
