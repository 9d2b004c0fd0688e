"""Navigation inputs of the ingest core: odometry in ``odom`` placed by the declared static
transform before the pose checks, and position fixes as resets of the horizontal position
(samples before a fix stay, samples from its stamp on move; no pose is lost as a jump);
every bad fix is dropped under its own counted reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.geo.georeference import GeoReference
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.navigation import HorizontalResets, StaticTransform
from poam_ros.params import ConfigError

ANCHOR = GeoReference.local(59.0, 10.0)
LIMITS = (1.0, 2000.0)
Z = 300.0


def x_at(t):
    """The odometry track: along +x at 1 m/s from x = -5 m, y = 0."""
    return -5.0 + t


def drive(ingest, start, stop, now=0.0, frame_id=None):
    """Odometry every 0.1 s from ``start`` to ``stop`` s, and a range of 310 m (a sample at
    elevation -10 m) 0.025 s after each pose before ``stop``, the one before ``start`` too
    (a drive continued)."""
    first, last = round(start * 10), round(stop * 10)
    for i in range(first, last + 1):
        assert ingest.add_pose(i / 10, x_at(i / 10), 0.0, Z, 0.0, now, frame_id,
                               None if frame_id is None else "base_link")
    for i in range(first - (first > 0), last):
        ingest.add_range(i / 10 + 0.025, 310.0, *LIMITS, now)


def fix_at(t, x, y):
    """(t, latitude, longitude) of map position (x, y)."""
    lon, lat = ANCHOR.to_lonlat(x, y)
    return t, float(lat), float(lon)


def all_samples(ingest):
    ingest.flush_tail()
    return np.concatenate([batch.points for batch in ingest.take_batches()])


# ------------------------------------------------------------------ the static transform

def test_a_static_transform_rotates_about_z_then_translates():
    transform = StaticTransform.from_values([10.0, 20.0, -5.0, math.pi / 2], 1e-3)
    np.testing.assert_allclose(transform.apply(1.0, 2.0, 3.0, 0.25),
                               [10.0 - 2.0, 20.0 + 1.0, -2.0, math.pi / 2 + 0.25], atol=1e-12)
    half = math.pi / 4  # the same rotation as a quaternion (0, 0, sin(yaw/2), cos(yaw/2))
    as_quaternion = StaticTransform.from_values(
        [10.0, 20.0, -5.0, 0.0, 0.0, math.sin(half), math.cos(half)], 1e-3)
    np.testing.assert_allclose(as_quaternion, transform, atol=1e-12)


@pytest.mark.parametrize("values, problem", [
    ([1.0, 2.0, 3.0], "x, y, z, yaw"), ([0.0, 0.0, 0.0, float("nan")], "finite"),
    ([0, 0, 0, 0.0, 0.0, 0.0, 0.5], "not a rotation"),
    ([0, 0, 0, 0.1, 0.0, 0.0, math.sqrt(0.99)], "about z")])
def test_bad_static_transforms_are_refused_by_the_config(values, problem):
    with pytest.raises(ConfigError, match=problem):
        IngestConfig(odom_frame="odom", map_from_odom=values)


def test_the_odom_frame_must_not_be_the_world_frame():
    with pytest.raises(ConfigError, match="odom_frame"):
        IngestConfig(odom_frame="map")


def test_odometry_in_odom_is_placed_in_map_before_the_pose_checks():
    config = IngestConfig(odom_frame="odom", map_from_odom=[100.0, 50.0, -20.0, math.pi / 2])
    ingest = Ingest(config)
    # In map, x_at(0) = -5 in odom is (100, 45); a pose there in map is no jump.
    assert ingest.add_pose(-0.1, 100.0, 45.0 - 0.1, Z - 20.0, math.pi / 2, 0.0, "map",
                           "base_link")
    drive(ingest, 0.0, 2.0, frame_id="odom")
    assert not ingest.drops.counts
    points = all_samples(ingest)
    t = np.arange(20) / 10 + 0.025
    expected = np.column_stack([np.full(20, 100.0), 50.0 + x_at(t), np.full(20, -30.0)])
    np.testing.assert_allclose(points, expected, atol=1e-9)
    assert ingest.odometry.poses.latest[4] == pytest.approx(math.pi / 2)


def test_odometry_in_odom_without_an_odom_frame_is_the_wrong_frame():
    ingest = Ingest(IngestConfig())
    assert not ingest.add_pose(0.0, 0.0, 0.0, Z, 0.0, 0.0, "odom", "base_link")
    assert ingest.drops.counts == {ig.POSE_WRONG_FRAME: 1}


# ------------------------------------------------------------------------ fixes

@pytest.mark.parametrize("latency", [0.0, 3.0])
def test_a_100_m_fix_resets_the_position_from_its_stamp_on_and_drops_no_pose(latency):
    """A USBL fix 100 m north of the odometry at t = 10 s, heard ``latency`` s later:
    samples stamped before 10 s stay on the odometry's track, those after move 100 m north
    (also those placed while the fix was in flight), and every pose is kept (as odometry
    that jumped 100 m, the speed limit of 5 m/s would drop about 20 s of poses)."""
    ingest = Ingest(IngestConfig(), georeference=ANCHOR)
    drive(ingest, 0.0, 10.0 + latency)
    assert ingest.add_fix(*fix_at(10.0, x_at(10.0), 100.0), now=0.0)
    drive(ingest, 10.1 + latency, 30.0)
    assert not ingest.drops.counts and len(ingest.odometry.poses) == 301
    fixes = ingest.position_fixes
    assert fixes.applied == 1 and fixes.last_correction == pytest.approx(100.0, abs=1e-6)
    points = all_samples(ingest)
    t = np.arange(300) / 10 + 0.025
    expected = np.column_stack([x_at(t), np.where(t >= 10.0, 100.0, 0.0), np.full(300, -10.0)])
    np.testing.assert_allclose(points, expected, atol=1e-6)


def test_the_same_correction_as_an_odometry_jump_costs_20_s_of_poses():
    """Without the fix as its own input, a navigation that applies it itself jumps 100 m
    north, and the speed limit (max_speed 5 m/s, jump_tolerance 1 m) drops every pose
    until hypot(d, 100) <= 5 d + 1 for the time d since the last kept one:
    24 d² + 10 d - 9999 >= 0, d >= 20.2 s."""
    ingest = Ingest(IngestConfig())
    drive(ingest, 0.0, 10.0)
    for i in range(101, 401):
        t = i / 10
        ingest.add_pose(t, x_at(t), 100.0, Z, 0.0, 0.0)
    d = (-10.0 + math.sqrt(100.0 + 4 * 24 * 9999)) / 48
    assert d == pytest.approx(20.2, abs=0.01)
    assert ingest.drops.counts == {ig.POSE_JUMP: math.floor(10 * d)}  # poses at 10.1 ... 30.2 s
    assert len(ingest.odometry.poses) == 101 + 300 - math.floor(10 * d)


def test_later_fixes_replace_the_correction_and_the_plan_is_judged_corrected():
    ingest = Ingest(IngestConfig(goal_radius=0.05), georeference=ANCHOR)
    drive(ingest, 0.0, 5.0)
    ingest.add_fix(*fix_at(5.0, x_at(5.0) + 3.0, -4.0), now=0.0)     # 3 m east, 4 m south
    ingest.add_fix(*fix_at(8.0, x_at(8.0) - 1.0, 2.0), now=0.0)      # waits for a pose
    assert ingest.position_fixes.applied == 1
    # The plan's goal is where the corrected track is at t = 12 s.
    ingest.set_plan([[x_at(12.0) - 1.0, 2.0]], 0.0, now=0.0)
    drive(ingest, 5.1, 14.0)
    fixes = ingest.position_fixes
    assert fixes.applied == 2 and fixes.last_correction == pytest.approx(math.hypot(4.0, 6.0),
                                                                         abs=1e-6)
    batch = ingest.take_batches()[0]
    assert batch.reason == "arrival" and batch.stamp == pytest.approx(12.0)
    t = np.arange(120) / 10 + 0.025
    late = (t >= 8.0)[:, None]
    shift = np.where(late, [-1.0, 2.0], np.where((t >= 5.0)[:, None], [3.0, -4.0], 0.0))
    np.testing.assert_allclose(batch.points[:, :2],
                               np.column_stack([x_at(t), np.zeros(120)]) + shift, atol=1e-6)


def test_a_fix_ahead_of_every_pose_waits_then_is_given_up():
    ingest = Ingest(IngestConfig(pending_timeout=2.0), georeference=ANCHOR)
    drive(ingest, 0.0, 1.0)
    assert ingest.add_fix(*fix_at(5.0, 0.0, 0.0), now=10.0)
    ingest.poll(now=11.9)
    assert not ingest.drops.counts
    ingest.poll(now=12.1)
    assert ingest.drops.counts == {ig.FIX_NO_POSE: 1} and ingest.position_fixes.applied == 0


@pytest.mark.parametrize("fix, reason", [
    (dict(status=-1), ig.FIX_NO_FIX),            # NavSatStatus.STATUS_NO_FIX
    (dict(status=-2), ig.FIX_NO_FIX),            # STATUS_UNKNOWN: never set
    (dict(latitude=float("nan")), ig.FIX_NONFINITE),
    (dict(longitude=float("inf")), ig.FIX_NONFINITE),
    (dict(t=float("nan")), ig.FIX_NONFINITE),
    (dict(latitude=90.5), ig.FIX_OUT_OF_RANGE),
    (dict(longitude=-180.5), ig.FIX_OUT_OF_RANGE),
    # 90° from a transverse Mercator's meridian on the equator: no place in its map
    (dict(latitude=0.0, longitude=100.0, anchor=GeoReference.local(0.0, 10.0)),
     ig.FIX_OUT_OF_RANGE),
    (dict(horizontal_std=5.1), ig.FIX_IMPRECISE),
    (dict(t=3.0), ig.FIX_OUT_OF_ORDER),          # a fix stamped 3 s came first
    (dict(t=-1.0), ig.FIX_OUT_OF_ORDER),
    (dict(t=-1.0, anchor=None), ig.FIX_NO_ANCHOR),
])
def test_bad_fixes_are_dropped_by_reason_and_move_nothing(fix, reason):
    ingest = Ingest(IngestConfig(fix_max_std=5.0), georeference=fix.pop("anchor", ANCHOR))
    drive(ingest, 0.0, 10.0)
    if reason == ig.FIX_OUT_OF_ORDER:
        ingest.add_fix(*fix_at(3.0, x_at(3.0), 0.0), now=0.0)        # a fix on the track
    arguments = dict(zip(("t", "latitude", "longitude"), fix_at(6.0, 0.0, 50.0)),
                     now=0.0, horizontal_std=5.0)
    assert not ingest.add_fix(**{**arguments, **fix})
    assert ingest.drops.counts == {reason: 1} and reason in ig.REASONS
    assert ingest.drops.details[reason]
    np.testing.assert_allclose(all_samples(ingest)[:, 1], 0.0, atol=1e-6)


@pytest.mark.parametrize("stamp", [-5.0, 4.95])
def test_a_fix_with_no_odometry_at_its_stamp_is_dropped(stamp):
    """Older than the pose history, or between poses further apart than max_pose_gap."""
    ingest = Ingest(IngestConfig(max_pose_gap=0.05), georeference=ANCHOR)
    for t in (0.0, 4.9, 5.0):  # 4.9 s, then 0.1 s apart: both over the gap
        ingest.add_pose(t, x_at(t), 0.0, Z, 0.0, 0.0)
    assert ingest.add_fix(*fix_at(stamp, 0.0, 50.0), now=0.0)
    assert ingest.drops.counts == {ig.FIX_NO_POSE: 1} and ingest.position_fixes.applied == 0


def test_corrections_are_looked_up_by_stamp_and_old_ones_forgotten():
    resets = HorizontalResets()
    resets.reset(1.0, 1.0, 0.0)
    resets.reset(2.0, 2.0, 0.0)
    resets.reset(3.0, 3.0, 0.0)
    assert [resets.at(t)[0] for t in (0.5, 1.0, 1.5, 2.0, 3.5)] == [0.0, 1.0, 1.0, 2.0, 3.0]
    resets.forget_before(2.5)
    assert [resets.at(t)[0] for t in (-10.0, 2.5, 3.0)] == [2.0, 2.0, 3.0]
    resets.restart()
    assert resets.at(-1e9) == (3.0, 0.0) and resets.latest_stamp == -math.inf
    resets.reset(5.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        resets.reset(4.0, 0.0, 0.0)
