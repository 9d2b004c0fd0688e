"""InputCheck: a planner's bad inputs are refused whole and counted by reason."""

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.planners import InputCheck, InputCheckConfig
from poam_ros.planners.input_check import (
    MAP_WRONG_FRAME,
    POSE_INVALID_ORIENTATION,
    POSE_NONFINITE,
    POSE_WRONG_FRAME,
    REASONS,
)

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
