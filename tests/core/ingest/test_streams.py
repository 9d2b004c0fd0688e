"""The streams on their own: frames and stamps admitted, the clock rule's outliers and
resets counted, order and lateness judged, completeness by rate or shortest interval."""

from __future__ import annotations

import math

import pytest

from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.reasons import Drops
from poam_ros.ingest.streams import CHANNEL, ODOM, RANGE, SWATH, Streams

CONFIG = IngestConfig(channels=["temperature"], sonar_rate=0.0)
K = CONFIG.stamp_reset_count


def streams(config=CONFIG):
    drops, resets = Drops(), []
    return Streams(config, drops, lambda *reset: resets.append(reset)), drops, resets


def test_frames_and_stamps_are_admitted_before_the_clock_rule():
    judge, drops, _ = streams()
    assert judge.admit(RANGE, 1.0, None, 1) and judge.admit(RANGE, 1.0, "sonar_link", 1)
    assert not judge.admit(SWATH, 1.0, "camera", 4)
    assert not judge.admit(RANGE, math.nan, None, 1)
    assert judge.admit(CHANNEL + "temperature", 1.0, "base_link", 1, "base_link")
    assert drops.counts == {ig.WRONG_FRAME: 4, ig.STALE_STAMP: 1}


def test_a_glitch_is_an_outlier_and_a_run_that_agrees_is_a_reset():
    judge, drops, resets = streams()
    used = []
    assert judge.judge(ODOM, 100.0, 1, lambda: used.append(100.0) or True)
    assert not judge.judge(ODOM, 1e4, 1, lambda: used.append(1e4) or True)
    assert judge.held == judge.held_of(ODOM) == 1 and judge.held_of(RANGE) == 0
    assert judge.judge(ODOM, 100.1, 1, lambda: used.append(100.1) or True)
    assert drops.counts == {ig.POSE_STAMP_OUTLIER: 1} and judge.held == 0
    for k in range(K):  # time restarts at 0
        kept = judge.judge(ODOM, 0.1 * k, 1, lambda k=k: used.append(0.1 * k) or True)
    assert kept and resets == [(ODOM, 100.1, [0.1 * k for k in range(K)])]
    assert used == [100.0, 100.1] + [0.1 * k for k in range(K)]
    assert not judge.clock_resets  # the caller counts it, once it restarted its state
    judge.count_reset(ODOM, 100.1, [0.0, 0.4], 3, "pose history")
    assert judge.clock_resets == {ODOM: 1} and "3 waiting samples" in judge.reset_details[ODOM]


def test_order_duplicates_and_lateness():
    judge, drops, _ = streams()
    assert judge.in_order(RANGE, 1.0, 1, -math.inf)
    assert not judge.in_order(RANGE, 1.0, 1, -math.inf)
    assert not judge.in_order(RANGE, 0.5, 1, -math.inf)
    assert not judge.in_order(RANGE, 2.0, 1, published_until=2.0)
    assert drops.counts == {ig.DUPLICATE: 1, ig.OUT_OF_ORDER: 1, ig.LATE: 1}
    judge.restart(RANGE)
    assert judge.in_order(RANGE, 0.5, 1, -math.inf)


@pytest.mark.parametrize("rate, stamps, complete", [
    (0.0, [], True),                 # never seen, no rate: not waited for
    (1.0, [], False),                # a configured rate: always waited for
    (1.0, [9.5], True),              # its next reading is due after 10 s
    (0.0, [9.0, 9.6], True),         # the shortest interval seen stands for its period
    (0.0, [8.0, 9.0], False),        # the next due at 10 s is not after it
    (0.2, [8.0, 9.5], True),         # a rate slower than seen: the shorter period counts
    (0.0, [9.0, 10.5], True),        # a reading after 10 s has come
])
def test_a_stream_is_complete_up_to_a_stamp(rate, stamps, complete):
    judge, _, _ = streams(CONFIG.replace(sonar_rate=rate))
    for t in stamps:
        judge.in_order(RANGE, t, 1, -math.inf)
    assert judge.complete_until(10.0, horizon=0.0) is complete


def test_a_drop_is_counted_with_its_latest_detail():
    drops = Drops()
    assert drops.drop(ig.LATE, 2, "first") is False
    drops.drop(ig.LATE, 1, "second")
    assert drops.counts == {ig.LATE: 3} and drops.details == {ig.LATE: "second"}
    assert len(set(ig.REASONS)) == len(ig.REASONS) and set(ig.FIX_REASONS) <= set(ig.REASONS)
