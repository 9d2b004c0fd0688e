"""The streams on their own: frames and stamps admitted, the clock rule's outliers and
resets counted for every stream, a reset resolved across the streams within its bound,
order and lateness judged, completeness by rate or shortest interval."""

from __future__ import annotations

import math

import pytest

from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.attitude_depth import DEPTH, IMU
from poam_ros.ingest.channels import CHANNEL
from poam_ros.ingest.reasons import Drops
from poam_ros.ingest.streams import FIX, ODOM, RANGE, SWATH, Streams

CONFIG = IngestConfig(channels=["temperature"], sonar_rate=0.0)
K = CONFIG.stamp_reset_count
GLITCH = 1000.0  # s, far beyond CONFIG.stamp_jump_threshold


def streams(config=CONFIG):
    """Streams whose resets restart only their order (and are recorded), the tally, the
    resets, and the published batches' stamp (settable)."""
    drops, resets, published = Drops(), [], [-math.inf]

    def reset(stream, old, stamps):
        resets.append((stream, old, stamps))
        judge.restart(stream)
        return "order restarted"

    judge = Streams(config, drops, reset, lambda: published[0])
    return judge, drops, resets, published


def kept(judge, stream, t, now=0.0):
    """Whether a message of ``stream`` stamped ``t`` passes the rules (and is used now)."""
    return judge.judge(stream, t, 1, now, lambda: True)


def test_frames_and_stamps_are_admitted_before_the_clock_rule():
    judge, drops, *_ = streams()
    assert judge.admit(RANGE, 1.0, None, 1) and judge.admit(RANGE, 1.0, "sonar_link", 1)
    assert not judge.admit(SWATH, 1.0, "camera", 4)
    assert not judge.admit(RANGE, math.nan, None, 1)
    assert judge.admit(CHANNEL + "temperature", 1.0, "base_link", 1, "base_link")
    assert drops.counts == {ig.WRONG_FRAME: 4, ig.STALE_STAMP: 1}


def test_a_glitch_is_an_outlier_and_a_run_that_agrees_is_a_reset():
    judge, drops, resets, _ = streams()
    used = []
    assert judge.judge(ODOM, 100.0, 1, 0.0, lambda: used.append(100.0) or True)
    assert not judge.judge(ODOM, 1e4, 1, 0.0, lambda: used.append(1e4) or True)
    assert judge.held == judge.held_of(ODOM) == 1 and judge.held_of(RANGE) == 0
    assert judge.judge(ODOM, 100.1, 1, 0.0, lambda: used.append(100.1) or True)
    assert drops.counts == {ig.POSE_STAMP_OUTLIER: 1} and judge.held == 0
    for k in range(K):  # time restarts at 0; no other stream has a clock: resolved at once
        kept_ = judge.judge(ODOM, 0.1 * k, 1, 0.0, lambda k=k: used.append(0.1 * k) or True)
    assert kept_ and resets == [(ODOM, 100.1, [0.1 * k for k in range(K)])]
    assert used == [100.0, 100.1] + [0.1 * k for k in range(K)]
    assert judge.clock_resets == {ODOM: 1} and "order restarted" in judge.reset_details[ODOM]


def test_a_reset_holds_the_new_clock_until_every_active_stream_has_reset():
    """The sonar's clock restarts first: its new readings are held (not judged against the
    odometry's old clock) until the odometry's restarts too, then used in the order they
    came, after the resets (the odometry's first)."""
    judge, drops, resets, _ = streams()
    used = []
    assert kept(judge, ODOM, 100.0) and kept(judge, RANGE, 100.0)
    for k in range(K + 2):  # the sonar's new clock: K suspects, a reset, two more
        assert not judge.judge(RANGE, 0.1 * k, 1, 0.0, lambda k=k: used.append(("r", k)))
    assert judge.clock_resets == {RANGE: 1} and not resets and not used
    assert judge.held == judge.held_of(RANGE) == K + 2
    assert kept(judge, ODOM, 100.1)  # the odometry goes on on its old clock meanwhile
    for k in range(K):
        judge.judge(ODOM, 0.1 * k, 1, 0.0, lambda k=k: used.append(("o", k)) or True)
    assert [stream for stream, *_ in resets] == [ODOM, RANGE]
    assert used == [("r", k) for k in range(K + 2)] + [("o", k) for k in range(K)]
    assert judge.held == 0 and not drops.counts


def test_a_round_waits_no_longer_than_its_bound():
    judge, _, resets, _ = streams()
    bound = CONFIG.stamp_jump_threshold
    assert kept(judge, ODOM, 100.0) and kept(judge, RANGE, 100.0)
    for k in range(K):
        kept(judge, RANGE, 0.1 * k, now=1.0)
    assert kept(judge, ODOM, 100.1, now=1.0 + bound)  # active, on its old clock
    assert not resets and judge.held == K
    judge.expire(1.0 + bound + 0.1)  # the odometry never followed: the sonar's reset alone
    assert [stream for stream, *_ in resets] == [RANGE] and judge.held == 0


def test_a_clock_that_comes_to_agree_with_the_others_waits_for_none():
    """A sonar whose clock was wrong from its start is corrected to the odometry's: the
    odometry is on the new clock already, so the reset is resolved at once."""
    judge, drops, resets, _ = streams()
    assert kept(judge, ODOM, 100.0) and kept(judge, RANGE, 5000.0)
    for k in range(K):
        kept_ = kept(judge, RANGE, 100.0 + 0.1 * k)
    assert kept_ and [stream for stream, *_ in resets] == [RANGE] and judge.held == 0


def test_every_stream_passes_the_rules_and_an_unknown_one_is_refused():
    config = CONFIG.replace(imu_attitude=True, depth_from_pressure=True)
    judge, drops, *_ = streams(config)
    assert set(judge.names) == {ODOM, RANGE, SWATH, FIX, IMU, DEPTH, CHANNEL + "temperature"}
    for name in judge.names:
        assert kept(judge, name, 1.0)
        assert not kept(judge, name, 1.0 + GLITCH) and kept(judge, name, 1.1)
    with pytest.raises(KeyError):
        kept(judge, "camera", 1.0)
    assert drops.counts == {ig.POSE_STAMP_OUTLIER: 1, ig.STAMP_OUTLIER: len(judge.names) - 1}


def test_order_duplicates_and_lateness():
    judge, drops, _, published = streams()
    assert kept(judge, RANGE, 1.0)
    assert not kept(judge, RANGE, 1.0)
    assert not kept(judge, RANGE, 0.5)
    published[0] = 2.0
    assert not kept(judge, RANGE, 2.0)
    assert kept(judge, FIX, 2.0) and not kept(judge, FIX, 2.0) and not kept(judge, FIX, 1.0)
    assert drops.counts == {ig.DUPLICATE: 1, ig.OUT_OF_ORDER: 1, ig.LATE: 1,
                            ig.FIX_OUT_OF_ORDER: 2}
    judge.restart(RANGE)
    published[0] = -math.inf
    assert kept(judge, RANGE, 0.5)


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
    judge, *_ = streams(CONFIG.replace(sonar_rate=rate))
    for t in stamps:
        kept(judge, RANGE, t)
    assert judge.complete_until(10.0, horizon=0.0) is complete


def test_a_drop_is_counted_with_its_latest_detail():
    drops = Drops()
    assert drops.drop(ig.LATE, 2, "first") is False
    drops.drop(ig.LATE, 1, "second")
    assert drops.counts == {ig.LATE: 3} and drops.details == {ig.LATE: "second"}
    assert len(set(ig.REASONS)) == len(ig.REASONS) and set(ig.FIX_REASONS) <= set(ig.REASONS)
