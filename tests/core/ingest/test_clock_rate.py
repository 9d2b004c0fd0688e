"""The clock rule on a fast clock: a stream's forward bound scales with its measured rate
(stamp seconds per wall second), so a skipped run of a 400 x simulator's messages is no jump,
while a jump back and a far glitch are still found (:mod:`poam_ros.ingest.clock_jumps`)."""

import math

import numpy as np
import pytest

from poam_ros.ingest.clock_jumps import RATE_WINDOW, ClockJumps, Verdict

THRESHOLD, COUNT = 10.0, 5
SCALE = 400.0  # stamp s per wall s
STEP = 1.0  # stamp s between messages (1 Hz odometry)


def fast_stream(seconds: float = 2.0) -> tuple[ClockJumps, float, float]:
    """A stream fed ``seconds`` of wall time at :data:`SCALE`: (its rule, last stamp, wall)."""
    clock = ClockJumps()
    t = 0.0
    for _ in range(int(seconds * SCALE / STEP)):
        t += STEP
        assert clock.judge(t, None, THRESHOLD, COUNT, now=t / SCALE).verdict is Verdict.ACCEPT
    return clock, t, t / SCALE


def test_the_rate_is_measured_from_stamps_and_arrival_times():
    clock, _, _ = fast_stream()
    assert clock.rate == pytest.approx(SCALE, rel=0.01)


@pytest.mark.parametrize("stall", [0.05, 1.0])  # wall s without a message, then a leap
def test_messages_skipped_by_a_stalled_subscriber_are_no_jump(stall):
    clock, t, wall = fast_stream()
    leap = t + stall * SCALE  # what the simulator stamped meanwhile, beyond 10 s
    for k in range(COUNT + 1):
        judgement = clock.judge(leap + k, None, THRESHOLD, COUNT, now=wall + stall)
        assert judgement.verdict is Verdict.ACCEPT and not judgement.outliers


def test_without_arrival_times_the_same_leap_is_a_suspect():
    clock = ClockJumps()
    for t in range(1, 801):
        clock.judge(float(t), None, THRESHOLD, COUNT)
    assert clock.rate == 1.0
    assert clock.judge(800.0 + 20.0, None, THRESHOLD, COUNT).verdict is Verdict.HELD


def test_a_jump_back_is_a_reset_however_fast_the_clock_ran():
    clock, t, wall = fast_stream()
    verdicts = [clock.judge(t - 20.0 + k, None, THRESHOLD, COUNT, now=wall + k / SCALE).verdict
                for k in range(COUNT)]
    assert verdicts == [Verdict.HELD] * (COUNT - 1) + [Verdict.RESET]
    assert clock.clock == t - 20.0 + COUNT - 1


def test_a_glitch_beyond_what_the_clock_runs_in_the_threshold_is_dropped():
    clock, t, wall = fast_stream()
    far = t + 2 * THRESHOLD * SCALE
    assert clock.judge(far, "glitch", THRESHOLD, COUNT, now=wall).verdict is Verdict.HELD
    judgement = clock.judge(t + STEP, None, THRESHOLD, COUNT, now=wall + RATE_WINDOW / 10)
    assert judgement.verdict is Verdict.ACCEPT and judgement.outliers == [(far, "glitch")]


def test_a_real_time_stream_keeps_the_plain_bound():
    clock = ClockJumps()
    for t in range(1, 101):  # 1 s of stamps per wall second
        clock.judge(float(t), None, THRESHOLD, COUNT, now=float(t))
    assert clock.rate == pytest.approx(1.0)
    assert clock.judge(100.0 + 1.5 * THRESHOLD, None, THRESHOLD, COUNT,
                       now=101.0).verdict is Verdict.HELD


@pytest.mark.parametrize("period", [2 * THRESHOLD, 6 * THRESHOLD])  # 0.05 Hz, one a minute
def test_a_slow_sensor_in_real_time_is_no_jump(period):
    clock = ClockJumps()
    for k in range(20):  # its stamps as far apart as the wall times they came at
        t = 1000.0 + k * period
        judgement = clock.judge(t, None, THRESHOLD, COUNT, now=t + 0.3)
        assert judgement.verdict is Verdict.ACCEPT and not judgement.outliers


def test_a_slow_sensors_glitch_and_clock_change_are_still_found():
    period = 2 * THRESHOLD
    clock = ClockJumps()
    for k in range(5):
        clock.judge(k * period, None, THRESHOLD, COUNT, now=k * period)
    wall = 4 * period
    # A glitch an hour ahead that came a moment after the last reading: held, then dropped.
    assert clock.judge(wall + 3600.0, "glitch", THRESHOLD, COUNT,
                       now=wall + 1.0).verdict is Verdict.HELD
    judgement = clock.judge(wall + period, None, THRESHOLD, COUNT, now=wall + period)
    assert judgement.verdict is Verdict.ACCEPT and judgement.outliers == [(wall + 3600.0,
                                                                           "glitch")]
    # The clock restarting at 0, readings still 20 s apart: a reset after COUNT of them.
    wall += period
    verdicts = [clock.judge(k * period, None, THRESHOLD, COUNT,
                            now=wall + (k + 1) * period).verdict for k in range(COUNT)]
    assert verdicts == [Verdict.HELD] * (COUNT - 1) + [Verdict.RESET]


def test_a_slow_sensor_on_a_fast_clock_is_due_one_period_on():
    period = 2 * THRESHOLD  # a sounding every 20 s, at 400 x: 0.05 wall s apart
    clock = ClockJumps()
    for k in range(20):  # from the first stamp, before its rate is measured
        t = k * period
        judgement = clock.judge(t, None, THRESHOLD, COUNT, now=t / SCALE, period=period)
        assert judgement.verdict is Verdict.ACCEPT
    assert ClockJumps().judge(0.0, None, THRESHOLD, COUNT, now=0.0).verdict is Verdict.ACCEPT
    unknown = ClockJumps()  # without its period the second stamp looks like a jump
    unknown.judge(0.0, None, THRESHOLD, COUNT, now=0.0)
    assert unknown.judge(period, None, THRESHOLD, COUNT,
                         now=period / SCALE).verdict is Verdict.HELD


def test_the_ingest_places_every_sounding_of_a_slow_sonar_on_a_fast_clock():
    from poam_ros.ingest import Ingest, IngestConfig

    ingest = Ingest(IngestConfig(sonar_rate=0.05, goal_radius=1.0))
    ingest.set_plan(np.array([[400.0, 0.0]]), 0.0, 0.0)
    for t in range(0, 401):  # 1 Hz odometry along x at 1 m/s, 400 x faster than real time
        ingest.add_pose(float(t), float(t), 0.0, -10.0, 0.0, t / SCALE)
        if t % 20 == 0 and t < 399:  # the arrival (within 1 m of the goal) is at 399 s
            ingest.add_range(float(t), 30.0, 1.0, 100.0, t / SCALE)
    ingest.poll(math.inf)
    batches = ingest.take_batches()
    assert sum(len(batch) for batch in batches) == 20
    assert sum(ingest.drops.counts.values()) == 0
