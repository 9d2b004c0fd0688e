"""Ingest core: decision-point batches equal SurveySimulator.follow, whatever the delivery order;
every kind of bad input is dropped under its own counted reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.ingest import Ingest, IngestConfig, SequenceGaps
from poam_ros.ingest import reasons as ig
from poam_ros.params import ConfigError
from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.simulated_auv import Odom, SimulatedAuv, Sounding
from poam_ros.sim.simulator import SurveySimulator
from poam_ros.workspace import Workspace

TERRAIN = default_terrain((-31.0, 31.0, -31.0, 31.0))
START = (30.0, -30.0, math.pi)
PLANE_Z = 300.0
PLANS = [np.array([[-20.0, -25.0], [0.0, 10.0], [10.0, -5.0]]), np.array([[5.0, 5.0]]),
         np.array([[5.0, 5.0]]), np.array([[-10.0, 20.0]])]
LIMITS = (1.0, 2000.0)  # the simulated sonar's Range.min_range, max_range


def feed(ingest, events, now=0.0):
    for event in events:
        if isinstance(event, Odom):
            ingest.add_pose(event.t, event.x, event.y, PLANE_Z, event.yaw, now)
        else:
            ingest.add_range(event.t, event.range, *LIMITS, now)


def legs(plans=PLANS, seed=3):
    """(events of each plan from SimulatedAuv, follow() log of each plan)."""
    auv = SimulatedAuv(SurveySimulator(TERRAIN, seed=seed, start_pose=START))
    reference = SurveySimulator(TERRAIN, seed=seed, start_pose=START)
    out = []
    for plan in plans:
        auv.set_plan(plan)
        events = []
        while not auv.holding:
            events += auv.advance(auv.time + 10.0)
        out.append((events, reference.follow(plan)))
    return out


def assert_batch_is_log(batch, log):
    assert batch.reason == "arrival" and len(batch) == len(log)
    assert batch.stamp == log.pose_times[-1]
    np.testing.assert_allclose(batch.points[:, :2], log.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(batch.points[:, 2], log.elevations, rtol=0, atol=1e-9)


def odoms_first(events):
    """Every pose of the leg, then every sounding: the arrival pose long before the last."""
    return ([e for e in events if isinstance(e, Odom)]
            + [e for e in events if isinstance(e, Sounding)])


def soundings_first(events):
    return ([e for e in events if isinstance(e, Sounding)]
            + [e for e in events if isinstance(e, Odom)])


def shuffled_within(events, rng, window=30):
    """Each topic in order, the two topics interleaved at random (as DDS may deliver)."""
    odoms = [e for e in events if isinstance(e, Odom)]
    soundings = [e for e in events if isinstance(e, Sounding)]
    out = []
    while odoms or soundings:
        take = odoms if not soundings or (odoms and rng.random() < 0.75) else soundings
        for _ in range(int(rng.integers(1, window))):
            if take:
                out.append(take.pop(0))
    return out


# ------------------------------------------------------------------ exactness

@pytest.mark.parametrize("order", ["time", "odoms_first", "soundings_first", "shuffled"])
def test_decision_point_batches_are_follow_whatever_the_order(order):
    ingest = Ingest(IngestConfig())
    rng = np.random.default_rng(0)
    arrange = {"time": list, "odoms_first": odoms_first, "soundings_first": soundings_first,
               "shuffled": lambda events: shuffled_within(events, rng)}[order]
    for plan, (events, log) in zip(PLANS, legs()):
        ingest.set_plan(plan, 0.0, now=0.0)
        feed(ingest, arrange(events))
        batches = ingest.take_batches()
        assert len(batches) == 1
        assert_batch_is_log(batches[0], log)
    assert not ingest.drops.counts and ingest.batcher.flushes_on_grace == 0


def test_the_arrival_batch_waits_for_soundings_in_flight():
    (events, log), = legs(PLANS[:1])
    ingest = Ingest(IngestConfig())
    ingest.set_plan(PLANS[0], 0.0, now=0.0)
    ordered = odoms_first(events)
    feed(ingest, ordered[:-1])  # every pose, the arrival among them, all but one sounding
    assert ingest.take_batches() == []
    feed(ingest, ordered[-1:])
    assert_batch_is_log(ingest.take_batches()[0], log)


def test_a_lost_sounding_ends_the_wait_after_the_grace_and_is_late_if_it_comes():
    (events, log), = legs(PLANS[:1])
    ingest = Ingest(IngestConfig(flush_grace=0.5))
    ingest.set_plan(PLANS[0], 0.0, now=0.0)
    ordered = odoms_first(events)
    feed(ingest, ordered[:-1], now=10.0)
    ingest.poll(now=10.4)
    assert ingest.take_batches() == []
    ingest.poll(now=10.6)
    batch, = ingest.take_batches()
    assert len(batch) == len(log) - 1 and ingest.batcher.flushes_on_grace == 1
    feed(ingest, ordered[-1:], now=11.0)
    assert ingest.drops.counts == {ig.LATE: 1}


def test_the_plan_may_come_after_the_first_poses_of_its_leg():
    (first, _), (second, log) = legs(PLANS[:2])
    ingest = Ingest(IngestConfig())
    ingest.set_plan(PLANS[0], 0.0, now=0.0)
    feed(ingest, first)
    ingest.take_batches()
    feed(ingest, second[:40])  # the vehicle started before the ingest heard of the plan
    ingest.set_plan(PLANS[1], 0.0, now=0.0)
    feed(ingest, second[40:])
    assert_batch_is_log(ingest.take_batches()[0], log)


def test_a_plan_already_reached_gives_an_empty_batch_at_once():
    (first, _), (second, _), (third, log) = legs(PLANS[:3])
    assert third == [] and len(log) == 0
    ingest = Ingest(IngestConfig())
    for plan, events in zip(PLANS, (first, second)):
        ingest.set_plan(plan, 0.0, now=0.0)
        feed(ingest, events)
    ingest.take_batches()
    ingest.set_plan(PLANS[2], 0.0, now=0.0)
    batch, = ingest.take_batches()
    assert len(batch) == 0 and batch.stamp == log.pose_times[-1]


def test_continuous_surveys_cut_batches_on_size_and_age():
    (events, log), = legs(PLANS[:1])
    ingest = Ingest(IngestConfig(max_batch_size=100))
    feed(ingest, events)  # no plan: no decision point
    batches = ingest.take_batches()
    assert [len(b) for b in batches] == [100] * (len(log) // 100)
    assert {b.reason for b in batches} == {"size"}
    ingest = Ingest(IngestConfig(max_batch_size=0, max_batch_age=20.0))
    feed(ingest, events)
    batches = ingest.take_batches()
    assert {b.reason for b in batches} == {"age"} and len(batches) >= 2
    assert all(len(b) == 61 for b in batches)  # 20 s at 3 Hz, both ends
    assert sum(map(len, batches)) + ingest.batcher.size == len(log)


# ------------------------------------------------------------------- bad input

@pytest.fixture
def placed():
    """An ingest with poses every 0.1 s from t = 0 to 10 s along +x at z = 300."""
    ingest = Ingest(IngestConfig(), Workspace.from_extent(-30, 30, -30, 30))
    for i in range(101):
        ingest.add_pose(i * 0.1, -5.0 + 0.1 * i, 0.0, PLANE_Z, 0.0, 0.0)
    return ingest


def flush(ingest):
    ingest.set_plan([[5.0, 0.0]], 0.0, now=0.0)  # reached at t = 10 s
    ingest.poll(now=100.0)
    batch, = ingest.take_batches()
    return batch


@pytest.mark.parametrize("distance, reason", [
    (float("nan"), ig.NONFINITE_RANGE), (float("-inf"), ig.NONFINITE_RANGE),
    (float("inf"), ig.NO_RETURN),
    (-3.0, ig.NEGATIVE_RANGE), (0.5, ig.RANGE_OUT_OF_LIMITS), (2500.0, ig.RANGE_OUT_OF_LIMITS)])
def test_bad_ranges_are_dropped(placed, distance, reason):
    assert not placed.add_range(5.0, distance, *LIMITS, now=0.0)
    assert placed.add_range(5.1, 310.0, *LIMITS, now=0.0)
    assert placed.drops.counts == {reason: 1}
    batch = flush(placed)
    np.testing.assert_allclose(batch.points, [[0.1, 0.0, -10.0]], atol=1e-12)


def test_stamps_without_a_pose_within_tolerance(placed):
    placed.add_range(-3.0, 300.0, *LIMITS, now=0.0)           # before the history
    placed.odometry.poses.max_gap = 0.05                        # poses 0.1 s apart: too far
    placed.add_range(2.05, 300.0, *LIMITS, now=0.0)
    placed.odometry.poses.max_gap = 1.0
    placed.add_range(11.0, 300.0, *LIMITS, now=0.0)            # future: waits for a pose ...
    assert placed.placement.pending == 1
    placed.poll(now=1.0)
    assert placed.placement.pending == 1
    placed.poll(now=2.5)                                        # ... which never comes
    assert placed.drops.counts == {ig.STALE_STAMP: 1, ig.POSE_GAP: 1, ig.NO_POSE: 1}
    assert placed.placement.pending == 0 and len(flush(placed)) == 0


def test_a_reading_ahead_of_the_poses_is_placed_when_they_catch_up(placed):
    placed.add_range(10.05, 300.0, *LIMITS, now=0.0)
    assert placed.placement.pending == 1 and placed.batcher.size == 0
    placed.add_pose(10.1, 5.1, 0.0, PLANE_Z, 0.0, now=0.5)
    assert placed.placement.pending == 0 and placed.batcher.size == 1


def test_out_of_order_and_duplicated_readings(placed):
    assert placed.add_range(5.0, 300.0, *LIMITS, now=0.0)
    assert not placed.add_range(5.0, 300.0, *LIMITS, now=0.0)
    assert not placed.add_range(4.0, 300.0, *LIMITS, now=0.0)
    assert placed.drops.counts == {ig.DUPLICATE: 1, ig.OUT_OF_ORDER: 1}
    assert len(flush(placed)) == 1


def test_bad_poses_are_dropped(placed):
    assert not placed.add_pose(10.0, 5.0, 0.0, PLANE_Z, 0.0, 0.0)         # heard again: no fault
    assert not placed.drops.counts
    assert not placed.add_pose(10.0, 5.02, 0.0, PLANE_Z, 0.0, 0.0)        # duplicate
    assert not placed.add_pose(9.0, 4.0, 0.0, PLANE_Z, 0.0, 0.0)          # out of order
    assert not placed.add_pose(10.1, 50.0, 0.0, PLANE_Z, 0.0, 0.0)        # 45 m in 0.1 s
    assert not placed.add_pose(10.1, float("nan"), 0.0, PLANE_Z, 0.0, 0.0)
    assert not placed.add_pose(10.1, 5.1, 0.0, PLANE_Z, 0.0, 0.0, "odom", "base_link")
    assert not placed.add_pose(10.1, 5.1, 0.0, PLANE_Z, 0.0, 0.0, "map", "imu")
    assert placed.add_pose(10.1, 5.1, 0.0, PLANE_Z, 0.0, 0.0, "map", "base_link")
    assert placed.drops.counts == {ig.POSE_DUPLICATE: 1, ig.POSE_OUT_OF_ORDER: 1, ig.POSE_JUMP: 1,
                              ig.POSE_NONFINITE: 1, ig.POSE_WRONG_FRAME: 2}
    # The jump did not enter the history: a reading there is placed on the true path.
    placed.add_range(10.05, 300.0, *LIMITS, now=0.0)
    np.testing.assert_allclose(placed.batcher.chunks[-1][2], [[5.05, 0.0, 0.0]])


NORTH = (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))  # (x, y, z, w): yaw pi/2


@pytest.mark.parametrize("orientation", [(0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.01),
                                         (float("nan"), 0.0, 0.0, 1.0),
                                         (0.0, 0.0, float("inf"), 1.0)])
def test_a_pose_whose_orientation_is_not_a_rotation_is_refused(orientation):
    ingest = Ingest(IngestConfig(voxel_size=0.0, outlier_neighbors=0))
    ingest.add_pose(0.0, 10.0, 5.0, PLANE_Z, math.pi / 2, 0.0, orientation=NORTH)
    # The yaw read from such a quaternion is made up (atan2(0, 1) = 0 for the zero one).
    assert not ingest.add_pose(0.5, 10.0, 5.5, PLANE_Z, 0.0, 0.0, orientation=orientation)
    ingest.add_pose(1.0, 10.0, 6.0, PLANE_Z, math.pi / 2, 0.0, orientation=NORTH)
    ingest.add_swath(0.5, [[1.0, 2.0, -290.0]], now=0.0)
    assert ingest.drops.counts == {ig.POSE_INVALID_ORIENTATION: 1}
    ingest.flush_tail()
    batch, = ingest.take_batches()  # placed between the two rotations, facing north
    np.testing.assert_allclose(batch.points, [[8.0, 6.5, 10.0]], atol=1e-12)


def test_wrong_frames_are_dropped(placed):
    assert not placed.add_range(5.0, 300.0, *LIMITS, now=0.0, frame_id="base_link")
    assert not placed.add_swath(5.0, np.zeros((4, 3)) + [0, 0, -300], now=0.0,
                                frame_id="camera")
    assert placed.add_range(5.0, 300.0, *LIMITS, now=0.0, frame_id="sonar_link")
    assert placed.drops.counts == {ig.WRONG_FRAME: 5}


def test_samples_outside_the_workspace_are_dropped():
    ingest = Ingest(IngestConfig(), Workspace.from_extent(0, 30, -30, 30))
    for i in range(101):
        ingest.add_pose(i * 0.1, -5.0 + 0.1 * i, 0.0, PLANE_Z, 0.0, 0.0)
    for t in (2.0, 8.0):  # at x = -3 (outside) and x = 3
        ingest.add_range(t, 310.0, *LIMITS, now=0.0)
    batch = flush(ingest)
    np.testing.assert_allclose(batch.points[:, 0], [3.0])
    assert ingest.drops.counts == {ig.OUTSIDE_WORKSPACE: 1} and batch.dropped == ingest.drops.counts


def test_a_flood_overflows_the_pending_queue_not_the_memory():
    ingest = Ingest(IngestConfig(max_pending=50))
    for i in range(5000):  # no pose at all: everything waits
        ingest.add_range(i * 0.001, 300.0, *LIMITS, now=0.0)
    assert ingest.placement.pending == 50 and ingest.drops.counts == {ig.QUEUE_OVERFLOW: 4950}
    ingest.add_pose(0.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_pose(5.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)  # 0 m in 5 s, but a 5 s gap
    assert ingest.placement.pending == 0 and ingest.drops.counts[ig.POSE_GAP] == 50


def test_malformed_swaths_and_nonfinite_points(placed):
    assert not placed.add_swath(5.0, np.zeros((4, 2)), now=0.0)
    points = np.array([[0.0, 1.0, -300.0], [np.nan, 0.0, -300.0], [0.0, 0.0, -20000.0]])
    assert placed.add_swath(5.0, points, now=0.0)
    assert placed.drops.counts == {ig.MALFORMED: 1, ig.NONFINITE_POINT: 1,
                              ig.RANGE_OUT_OF_LIMITS: 1}
    assert placed.batcher.size == 1


# ---------------------------------------------------------------------- swaths

def test_swath_points_are_rotated_and_moved_by_the_pose():
    ingest = Ingest(IngestConfig(voxel_size=0.0, outlier_neighbors=0))
    ingest.add_pose(0.0, 10.0, 5.0, PLANE_Z, math.pi / 2, 0.0)   # facing north
    ingest.add_pose(1.0, 10.0, 6.0, PLANE_Z, math.pi / 2, 0.0)
    # 2 m to port (west, when facing north) and 1 m forward, 290 m down; at t = 0.5 s.
    ingest.add_swath(0.5, [[1.0, 2.0, -290.0], [0.0, -2.0, -295.0]], now=0.0)
    ingest.set_plan([[10.0, 6.0]], 0.0, now=0.0)
    ingest.poll(now=100.0)
    batch, = ingest.take_batches()
    np.testing.assert_allclose(batch.points, [[8.0, 6.5, 10.0], [12.0, 5.5, 5.0]],
                               atol=1e-12)


def test_config_is_validated():
    with pytest.raises(ConfigError, match="outlier_neighbors"):
        IngestConfig(outlier_neighbors=1)
    with pytest.raises(ConfigError, match="swath_max_range"):
        IngestConfig(swath_min_range=5.0, swath_max_range=5.0)
    with pytest.raises(ConfigError, match="filter_backend"):
        IngestConfig(filter_backend="pcl")


def test_sequence_gaps_count_messages_lost_per_publisher():
    gaps = SequenceGaps()
    assert [gaps.saw("a", n) for n in (1, 2, 5, 6)] == [0, 0, 2, 0]
    assert gaps.saw("b", 10) == 0 and gaps.saw("b", 12) == 1
    assert gaps.saw("a", 1) == 0 and gaps.saw("a", 2) == 0  # a restarted publisher
    assert gaps.saw("c", None) == 0 and gaps.lost == 3


@pytest.mark.parametrize("runs", [[[1, 2, 5], [6, 9]], [[3], [4, 5, 6]], [[7, 8, 2, 4], [1, 3]],
                                  [[5, 9], [9, 10]], [[None, None]], [[]]])
def test_a_run_of_sequence_numbers_counts_as_one_at_a_time(runs):
    one, run = SequenceGaps(), SequenceGaps()
    for numbers in runs:
        assert run.saw_run("a", numbers) == sum(one.saw("a", n) for n in numbers)
    assert run.lost == one.lost


def test_a_reading_waits_while_poses_keep_coming(placed):
    placed.add_range(12.0, 300.0, *LIMITS, now=0.0)  # ahead of the poses (up to 10 s)
    for i, now in enumerate((1.5, 3.0, 4.5)):        # a lagging odometry queue catches up
        placed.add_pose(10.5 + 0.5 * i, 5.5 + 0.5 * i, 0.0, PLANE_Z, 0.0, now)
        placed.poll(now=now + 1.0)
    assert placed.placement.pending == 1 and not placed.drops.counts
    placed.add_pose(12.5, 7.5, 0.0, PLANE_Z, 0.0, now=5.0)
    assert placed.placement.pending == 0 and placed.batcher.size == 1


def test_a_reconfiguration_reaches_every_part_and_keeps_what_they_hold(placed):
    placed.add_range(5.0, 300.0, *LIMITS, now=0.0)
    placed.configure(IngestConfig(max_batch_size=2, pending_timeout=1.0, fix_max_std=5.0))
    assert len(placed.odometry.poses) == 101 and placed.batcher.size == 1
    placed.add_range(6.0, 300.0, *LIMITS, now=0.0)
    raw, = placed.batcher.take_raw_batches()
    assert raw.reason == "size" and len(raw.ranges) == 2
    placed.add_range(12.0, 300.0, *LIMITS, now=0.0)  # ahead of the poses: waits
    placed.poll(now=1.5)
    assert placed.drops.counts == {ig.NO_POSE: 1}
    assert placed.position_fixes.config.fix_max_std == 5.0
