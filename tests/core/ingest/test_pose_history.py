"""PoseHistory: linear interpolation, yaw on the circle, stale/future/gap, bounded memory."""

import math

import pytest

from poam_ros.ingest.pose_history import Lookup, PoseHistory


def history(*poses, horizon=10.0, max_gap=1.0):
    h = PoseHistory(horizon, max_gap)
    for pose in poses:
        h.append(*pose)
    return h


def test_position_and_height_interpolate_linearly():
    h = history((0.0, 0.0, 0.0, 300.0, 0.0), (0.5, 1.0, -2.0, 302.0, 0.0))
    status, pose = h.lookup(0.125)
    assert status is Lookup.PLACED
    assert pose.x == pytest.approx(0.25) and pose.y == pytest.approx(-0.5)
    assert pose.z == pytest.approx(300.5)


@pytest.mark.parametrize("yaw0, yaw1, expected", [
    (3.0, -3.0, math.pi),                 # across +-pi: through pi, not through 0
    (-3.0, 3.0, math.pi),
    (0.1, -0.1, 0.0),
    (math.pi / 2, math.pi, 3 * math.pi / 4),
])
def test_yaw_interpolates_along_the_shorter_arc(yaw0, yaw1, expected):
    h = history((0.0, 0, 0, 0, yaw0), (1.0, 0, 0, 0, yaw1))
    _, pose = h.lookup(0.5)
    assert math.isclose(abs(pose.yaw), abs(expected), abs_tol=1e-12)


def test_exact_stamps_return_the_stored_pose():
    h = history((0.0, 1.0, 2.0, 3.0, 0.5), (0.1, 1.1, 2.0, 3.0, 0.5))
    assert h.lookup(0.1)[1].x == 1.1 and h.lookup(0.0)[1].x == 1.0
    assert h.lookup(0.1 + 1e-9)[1].x == 1.1  # within the stamp tolerance


def test_readings_it_cannot_place():
    assert PoseHistory(10.0, 1.0).lookup(0.0)[0] is Lookup.EMPTY
    h = history((10.0, 0, 0, 0, 0), (10.1, 0, 0, 0, 0), (15.0, 0, 0, 0, 0))
    assert h.lookup(15.2)[0] is Lookup.FUTURE
    assert h.lookup(9.0)[0] is Lookup.STALE
    assert h.lookup(12.0)[0] is Lookup.GAP
    assert h.lookup(10.05)[0] is Lookup.PLACED


def test_old_poses_are_forgotten_and_memory_stays_bounded():
    h = PoseHistory(horizon=5.0, max_gap=1.0)
    for i in range(10_000):
        h.append(i * 0.1, float(i), 0.0, 0.0, 0.0)
    assert len(h) == 51  # 5 s at 10 Hz, both ends
    assert len(h._times) < 2_200  # the dropped prefix is compacted away
    assert h.lookup(999.0 - 5.5)[0] is Lookup.STALE
    assert h.oldest_time == pytest.approx(999.9 - 5.0)
    assert [p[0] for p in h.poses_since(999.75)] == pytest.approx([999.7, 999.8, 999.9])
    assert len(h.poses_since(-math.inf)) == 51
