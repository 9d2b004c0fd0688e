"""InputCheck: a planner's bad inputs are refused whole and counted by reason."""

import math

import numpy as np
import pytest

from poam_ros.ingest.reasons import (
    POSE_INVALID_ORIENTATION,
    POSE_NONFINITE,
    POSE_STAMP_OUTLIER,
    POSE_WRONG_FRAME,
)
from poam_ros.params import ConfigError
from poam_ros.planners import InputCheck, InputCheckConfig
from poam_ros.planners.input_check import MAP_WRONG_FRAME, REASONS

IDENTITY = (0.0, 0.0, 0.0, 1.0)
NAN = math.nan


@pytest.mark.parametrize(("frame", "position", "orientation", "reason"), [
    ("odom", (1.0, 2.0, 0.0), IDENTITY, POSE_WRONG_FRAME),
    ("map", (NAN, 2.0, 0.0), IDENTITY, POSE_NONFINITE),
    ("map", (1.0, 2.0, math.inf), IDENTITY, POSE_NONFINITE),
    ("map", (1.0, 2.0, 0.0), (0.0, 0.0, NAN, 1.0), POSE_NONFINITE),
    ("map", (1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 0.0), POSE_INVALID_ORIENTATION),
    ("map", (1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.01), POSE_INVALID_ORIENTATION),
])
def test_a_bad_pose_is_refused_and_counted(frame, position, orientation, reason):
    check = InputCheck("map")
    assert check.position(frame, position, orientation) is None
    assert check.dropped == {reason: 1} and check.last == reason and check.total == 1
    assert check.details[reason]


def test_a_good_pose_gives_its_planar_position():
    check = InputCheck("map", InputCheckConfig(orientation_tolerance=0.02))
    half = math.sqrt(0.5)
    for orientation in (IDENTITY, (0.0, 0.0, half, half), (0.0, 0.0, 0.0, 1.01)):
        np.testing.assert_array_equal(check.position("map", (1.0, 2.0, -5.0), orientation),
                                      [1.0, 2.0])
    assert check.total == 0


def test_maps_in_another_frame_are_counted():
    check = InputCheck("map")
    assert check.map_frame("map")
    assert not check.map_frame("odom")
    assert check.dropped == {MAP_WRONG_FRAME: 1}
    assert set(check.dropped) <= set(REASONS)


def test_the_tolerance_is_validated():
    with pytest.raises(ConfigError, match="orientation_tolerance"):
        InputCheckConfig(orientation_tolerance=-1.0)


def stamps(check, times):
    """Positions (x = the stamp's index) the check gives for poses stamped ``times`` [s]."""
    return [check.position("map", (float(i), 0.0, 0.0), IDENTITY, t)
            for i, t in enumerate(times)]


def test_a_glitched_odometry_stamp_costs_only_itself():
    check = InputCheck("map")
    given = stamps(check, [0.0, 0.1, 1000.2, 0.3, 0.4])
    assert given[2] is None and all(p is not None for i, p in enumerate(given) if i != 2)
    assert check.dropped == {POSE_STAMP_OUTLIER: 1} and check.clock_resets == 0


def test_a_clock_change_is_a_reset_after_the_count_of_agreeing_stamps():
    config = InputCheckConfig(stamp_jump_threshold=10.0, stamp_reset_count=3)
    check = InputCheck("map", config)
    given = stamps(check, [100.0, 100.1, 0.0, 0.1, 0.2, 0.3])  # sim time restarted
    assert [p is None for p in given] == [False, False, True, True, False, False]
    np.testing.assert_array_equal(given[4], [4.0, 0.0])  # the newest of the run
    assert check.clock_resets == 1 and check.total == 0
    assert stamps(check, [0.25])[0] is not None  # ordinary reordering: still a position
