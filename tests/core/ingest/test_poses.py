"""The odometry on its own: frames, values and orientation checked, the map <- odom
transform applied, poses judged against the history."""

from __future__ import annotations

import math

import pytest

from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.poses import Odometry, Pose
from poam_ros.ingest.reasons import Drops

CONFIG = IngestConfig(odom_frame="odom", map_from_odom=[10.0, 0.0, 0.0, math.pi / 2])


def odometry(config=CONFIG):
    drops = Drops()
    return Odometry(config, drops), drops


def test_poses_are_judged_against_the_history():
    odom, drops = odometry()
    level = (0.0, 0.0)
    assert odom.add(0.0, Pose(0.0, 0.0, -5.0, 0.0, *level), now=1.0)
    assert not odom.add(0.0, Pose(0.1, 0.0, -5.0, 0.0, *level), now=1.0)
    assert not odom.add(-1.0, Pose(0.0, 0.0, -5.0, 0.0, *level), now=1.0)
    assert not odom.add(1.0, Pose(500.0, 0.0, -5.0, 0.0, *level), now=1.0)
    assert odom.add(1.0, Pose(1.0, 0.0, -5.0, 0.0, *level), now=2.0)
    assert drops.counts == {ig.POSE_DUPLICATE: 1, ig.POSE_OUT_OF_ORDER: 1, ig.POSE_JUMP: 1}
    assert len(odom.poses) == 2 and odom.last_pose_wall == 2.0


def test_poses_are_checked_and_placed_in_the_world_frame():
    odom, drops = odometry()
    checked = odom.check(0.0, 1.0, 0.0, -5.0, 0.0, "odom", "base_link")
    assert checked == pytest.approx(Pose(10.0, 1.0, -5.0, math.pi / 2, 0.0, 0.0))
    assert odom.check(0.0, 1.0, 0.0, -5.0, 0.0, "map", "base_link").x == 1.0
    assert odom.check(0.0, 1.0, 0.0, -5.0, 0.0, "sonar_link", "base_link") is None
    assert odom.check(0.0, math.nan, 0.0, -5.0, 0.0) is None
    assert odom.check(0.0, 1.0, 0.0, -5.0, 0.0, orientation=(0.0, 0.0, 0.0, 0.0)) is None
    assert drops.counts == {ig.POSE_WRONG_FRAME: 1, ig.POSE_NONFINITE: 1,
                            ig.POSE_INVALID_ORIENTATION: 1}
    assert not odom.poses.latest  # checking keeps nothing


def test_a_configuration_that_is_no_transform_changes_nothing():
    odom, _ = odometry()
    with pytest.raises(ValueError):
        odom.configure(IngestConfig(odom_frame="odom", map_from_odom=[0.0, 0.0, 0.0, 2.0,
                                                                      0.0, 0.0, 0.0]))
    assert odom.config is CONFIG


def test_the_newest_pose_heard_again_is_no_duplicate():
    """A vehicle held in lockstep repeats its arrival pose: nothing new, no drop."""
    odom, drops = odometry()
    pose = Pose(1.0, 2.0, -5.0, 0.3, 0.01, 0.02)
    assert odom.add(4.0, pose, now=1.0)
    assert not odom.add(4.0, pose, now=2.0)
    assert not odom.add(4.0, pose._replace(yaw=0.4), now=3.0)  # another pose, same stamp
    assert drops.counts == {ig.POSE_DUPLICATE: 1}
    assert len(odom.poses) == 1 and odom.last_pose_wall == 1.0
