"""The batcher: placed samples cut at decision points (once every stream is complete, or
after the grace), on size and age and on request; swath filters in the checked batch;
batches recorded in the order they were cut."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.batcher import Batcher
from poam_ros.ingest.reasons import Drops
from poam_ros.ingest.streams import RANGE, Streams
from poam_ros.workspace import Workspace

PLANE_Z = 300.0
LIMITS = (1.0, 2000.0)


def batcher(config=None, workspace=None):
    """A batcher on its own, the streams it waits on and the tally; resets never come."""
    config = config or IngestConfig()
    drops = Drops()
    streams = Streams(config, drops, lambda *_: pytest.fail("no clock reset expected"),
                      lambda: cut.published_until)
    cut = Batcher(config, streams, drops, workspace)
    return cut, streams, drops


def sample(x, y=0.0, z=-10.0):
    return np.array([[x, y, z]])


def test_an_arrival_waits_for_the_streams_then_cuts_what_is_stamped_up_to_it():
    cut, streams, _ = batcher(IngestConfig(sonar_rate=10.0, flush_grace=0.5))
    cut.add(1.0, RANGE, sample(1.0))
    cut.add(2.5, RANGE, sample(2.5))  # after the arrival: the next batch's
    assert cut.set_plan(np.array([[2.0, 0.0]]), 0.0) == -math.inf and cut.following
    cut.progress(1.0, 0.0, 0.0)
    assert cut.plan_progress == (0, 1)
    cut.progress(2.0, 2.0, 0.0)  # reached: an arrival at t = 2 s
    assert not cut.following and cut.plan_progress == (0, 0)
    cut.try_flush(now=0.0)  # the ranges stream has delivered nothing up to 2 s
    assert cut.take_raw_batches() == []
    assert streams.judge(RANGE, 2.05, 1, 0.0, lambda: True)
    cut.try_flush(now=0.1)  # its next reading is due after the arrival: complete
    raw, = cut.take_raw_batches()
    assert (raw.stamp, raw.reason, raw.sequence) == (2.0, "arrival", 1)
    np.testing.assert_array_equal(raw.ranges, sample(1.0))
    assert cut.size == 1 and cut.published_until == 2.0 and cut.flushes_on_grace == 0
    assert cut.set_plan(np.empty((0, 2)), 1.0) == 2.0  # the previous arrival


def test_an_incomplete_stream_is_waited_for_no_longer_than_the_grace():
    cut, _, _ = batcher(IngestConfig(sonar_rate=1.0, flush_grace=0.5))
    cut.add(1.0, RANGE, sample(1.0))
    cut.set_plan(np.array([[0.0, 0.0]]), 0.0)
    cut.progress(2.0, 0.0, 0.0)
    cut.try_flush(now=10.0)
    cut.try_flush(now=10.4)
    assert cut.take_raw_batches() == []
    cut.try_flush(now=10.5)
    raw, = cut.take_raw_batches()
    assert raw.reason == "arrival" and cut.flushes_on_grace == 1


def test_size_and_age_limits_cut_everything_placed():
    cut, _, _ = batcher(IngestConfig(max_batch_size=3))
    for t in range(7):
        cut.add(float(t), RANGE, sample(t))
    assert [(raw.reason, len(raw.ranges)) for raw in cut.take_raw_batches()] == [("size", 3)] * 2
    assert cut.size == 1 and cut.accepted == 7
    cut, _, _ = batcher(IngestConfig(max_batch_size=0, max_batch_age=2.0))
    for t in range(5):
        cut.add(float(t), RANGE, sample(t))
    raws = cut.take_raw_batches()
    assert [(raw.reason, raw.stamp, len(raw.ranges)) for raw in raws] == [("age", 2.0, 3)]


def test_a_fix_shift_moves_the_samples_from_its_stamp_on():
    cut, _, _ = batcher()
    cut.add(1.0, RANGE, sample(1.0))
    cut.add(2.0, RANGE, sample(2.0))
    cut.shift(1.5, np.array([10.0, -1.0]))
    np.testing.assert_array_equal(np.concatenate([c[2] for c in cut.chunks]),
                                  [[1.0, 0.0, -10.0], [12.0, -1.0, -10.0]])


def test_a_restart_sends_the_arrival_then_the_rest_and_forgets_the_old_clock():
    cut, _, _ = batcher(IngestConfig(sonar_rate=1.0))
    cut.add(1.0, RANGE, sample(1.0))
    cut.add(3.0, RANGE, sample(3.0))
    cut.set_plan(np.array([[0.0, 0.0]]), 0.0)
    cut.progress(2.0, 0.0, 0.0)
    cut.restart()
    assert [(raw.reason, raw.stamp) for raw in cut.take_raw_batches()] == [("arrival", 2.0),
                                                                            ("reset", 3.0)]
    assert cut.published_until == -math.inf and cut.size == 0
    assert cut.set_plan(np.array([[0.0, 0.0]]), 0.0) == -math.inf


def test_finish_drops_outside_the_workspace_and_record_counts_in_order():
    cut, _, drops = batcher(workspace=Workspace.from_extent(0, 30, -30, 30))
    cut.add(1.0, RANGE, sample(-3.0))
    cut.add(2.0, RANGE, sample(3.0))
    cut.flush_tail()
    raw, = cut.take_raw_batches()
    batch = cut.finish(raw)
    assert drops.counts == {}  # finish is free of the batcher's state
    np.testing.assert_array_equal(batch.points, sample(3.0))
    cut.record(batch)
    assert drops.counts == {ig.OUTSIDE_WORKSPACE: 1} and cut.published == cut.batches == 1
    with pytest.raises(ValueError, match="order"):
        cut.record(batch)


def test_swath_filters_drop_outliers_and_merge_voxels_but_not_ranges():
    ingest = Ingest(IngestConfig(voxel_size=1.0, outlier_neighbors=8, filter_backend="numpy"))
    ingest.add_pose(0.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_pose(1.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)
    across = np.linspace(-10.0, 10.0, 81)  # 0.25 m apart: 4 per 1 m voxel
    swath = np.column_stack([np.zeros_like(across), across, np.full_like(across, -290.0)])
    swath[40, 2] = -100.0  # a spike far above the seafloor
    ingest.add_swath(0.5, swath, now=0.0)
    ingest.add_range(0.6, 290.0, *LIMITS, now=0.0)
    ingest.add_range(0.7, 290.0, *LIMITS, now=0.0)  # the same sample twice: the model's to
    ingest.set_plan([[0.0, 0.0]], 1.0, now=0.0)  # planned at t = 1 s, where it is
    ingest.poll(now=100.0)
    batch, = ingest.take_batches()
    assert batch.dropped[ig.STATISTICAL_OUTLIER] == 1
    assert batch.dropped[ig.VOXEL_MERGED] == 80 - 21
    assert ig.DUPLICATE not in batch.dropped  # refuse (it knows every sample it holds)
    assert len(batch) == 2 + 21 and np.all(batch.points[:, 2] == 10.0)


def test_the_end_of_the_input_cuts_no_batch_on_time_but_leaves_the_tail():
    """``poll(inf)`` (a leg or a bag is over: nothing more in flight) expires the waits, but
    a batch cut on time needs a time: the tail stays for :meth:`flush_tail` to decide."""
    ingest = Ingest(IngestConfig(batch_timeout=30.0))
    ingest.add_pose(0.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_pose(1.0, 1.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_range(0.5, 290.0, *LIMITS, now=0.0)
    ingest.poll(math.inf)
    assert ingest.batcher.take_raw_batches() == [] and ingest.batcher.size == 1
    ingest.poll(31.0)  # a wall clock is still judged
    [batch] = ingest.batcher.take_raw_batches()
    assert batch.reason == "timeout"


def test_the_tail_is_flushed_on_request_and_batches_are_recorded_in_order():
    ingest = Ingest(IngestConfig())
    ingest.add_pose(0.0, 0.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_pose(1.0, 1.0, 0.0, PLANE_Z, 0.0, 0.0)
    ingest.add_range(0.5, 290.0, *LIMITS, now=0.0)
    assert ingest.batcher.take_raw_batches() == [] and ingest.batcher.size == 1
    ingest.flush_tail()
    ingest.add_range(0.9, 290.0, *LIMITS, now=0.0)
    ingest.flush_tail()
    first, second = ingest.batcher.take_raw_batches()
    assert first.reason == "end" and len(first.ranges) == 1 and ingest.batcher.size == 0
    with pytest.raises(ValueError, match="order"):
        ingest.batcher.record(ingest.batcher.finish(second))
    ingest.batcher.record(ingest.batcher.finish(first))
    ingest.batcher.record(ingest.batcher.finish(second))
    assert ingest.batcher.batches == 2 and ingest.batcher.published == 2


def test_after_lost_odometry_a_pose_at_the_plans_end_is_the_arrival():
    """Waypoints are reached in order; once odometry of the plan was lost (here the poses
    that passed (10, 0)), the vehicle at the last waypoint has arrived all the same."""
    plan = np.array([[10.0, 0.0], [10.0, 10.0], [0.0, 10.0]])
    for lost in (False, True):
        cut, _, _ = batcher(IngestConfig(flush_grace=0.0))
        cut.set_plan(plan, 0.0)
        cut.progress(1.0, 5.0, 0.0)
        if lost:
            cut.odometry_lost()
        cut.progress(4.0, 0.0, 10.0)
        assert cut.following is not lost
        cut.set_plan(plan, 5.0)  # the next plan: its waypoints in order again
        cut.progress(6.0, 0.0, 10.0)
        assert cut.following
