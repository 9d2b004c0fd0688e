"""Ingest core under stamp glitches and clock changes: a glitched pose or range stamp costs
only its own message, a clock that jumps and stays (forwards or backwards) is a reset after
``stamp_reset_count`` agreeing stamps and samples flow again, the odometry's and the
sonar's resets resolved together whichever comes first, and ordinary reordering is dropped
as before."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.streams import ODOM, RANGE
from poam_ros.params import ConfigError

PLANE_Z = 300.0
LIMITS = (1.0, 2000.0)
DEPTH = 310.0  # every range: samples at elevation -10
CONFIG = IngestConfig(goal_radius=0.01)  # poses 0.1 m apart: a goal is reached at one
K = CONFIG.stamp_reset_count
GLITCH = 1000.0  # s, far beyond CONFIG.stamp_jump_threshold


def leg(t0, x0=-5.0, seconds=10):
    """A leg in stamp order along +x at 1 m/s from ``x0`` at ``t0``: a pose every 0.1 s
    (both ends) and a range every 0.5 s between them, ``("pose", t, x)``/``("range", t)``."""
    events = []
    for i in range(10 * seconds + 1):
        events.append(("pose", t0 + i / 10, x0 + i / 10))
        if i % 5 == 2 and i < 10 * seconds:
            events.append(("range", t0 + i / 10 + 0.05))
    return events


def feed(ingest, events, now=0.0):
    for kind, t, *x in events:
        if kind == "pose":
            ingest.add_pose(t, x[0], 0.0, PLANE_Z, 0.0, now)
        else:
            ingest.add_range(t, DEPTH, *LIMITS, now)


def after(events, kind, t):
    """The index just after the event of ``kind`` stamped ``t``."""
    return 1 + next(i for i, event in enumerate(events)
                    if event[0] == kind and abs(event[1] - t) < 1e-9)


def ranges(events):
    return sum(kind == "range" for kind, *_ in events)


def test_a_single_future_pose_stamp_costs_only_itself():
    ingest = Ingest(CONFIG)
    ingest.set_plan([[5.0, 0.0]], 0.0, now=0.0)
    events = leg(0.0)
    glitch = after(events, "pose", 5.0)
    events.insert(glitch, ("pose", 5.0 + GLITCH, 0.0))  # a GPS time jump, once
    feed(ingest, events)
    batch, = ingest.take_batches()
    assert batch.reason == "arrival" and batch.stamp == 10.0
    assert len(batch) == ranges(events) == 20
    assert ingest.drops.counts == {ig.POSE_STAMP_OUTLIER: 1} and not ingest.streams.clock_resets


def test_a_single_future_range_stamp_costs_only_itself():
    ingest = Ingest(CONFIG)
    ingest.set_plan([[5.0, 0.0]], 0.0, now=0.0)
    events = leg(0.0)
    glitch = after(events, "range", 5.25)
    events.insert(glitch, ("range", 5.25 + GLITCH))
    feed(ingest, events)
    ingest.poll(now=100.0)
    batch, = ingest.take_batches()
    assert len(batch) == ranges(events) - 1 == 20
    np.testing.assert_allclose(batch.points[:, 2], -10.0)
    assert ingest.drops.counts == {ig.STAMP_OUTLIER: 1} and not ingest.streams.clock_resets


def test_a_persistent_forward_jump_is_a_reset_after_k_stamps_and_samples_flow_again(caplog):
    ingest = Ingest(CONFIG)
    ingest.set_plan([[15.0, 0.0]], 0.0, now=0.0)
    before = leg(0.0)[:-1]                      # 0 .. 9.9 s, x -5 .. 4.9 m
    jumped = leg(10.0 + GLITCH, x0=5.0)         # the clock jumped GLITCH s forwards, for good
    feed(ingest, before)
    kth = [i for i, event in enumerate(jumped) if event[0] == "pose"][K - 1]
    feed(ingest, jumped[:kth])                  # K - 1 poses of the new clock: held
    assert not ingest.streams.clock_resets and ingest.streams.held >= K - 1
    with caplog.at_level(logging.WARNING, logger="poam_ros.ingest.streams"):
        feed(ingest, jumped[kth:kth + 1])       # the K-th: the clock changed
    assert ingest.streams.clock_resets == {ODOM: 1} and "odom clock reset" in caplog.text
    feed(ingest, jumped[kth + 1:])
    ingest.poll(now=100.0)
    old, new = ingest.take_batches()
    # What was placed on the old clock goes out as it was placed; the new clock's samples
    # make the arrival batch: none lost, none waiting.
    assert (old.reason, len(old)) == ("reset", ranges(before))
    assert (new.reason, new.stamp, len(new)) == ("arrival", 20.0 + GLITCH, ranges(jumped))
    np.testing.assert_allclose(new.points[:, 0], [t - GLITCH - 5.0 for kind, t, *_ in jumped
                                                  if kind == "range"], atol=1e-9)
    assert ingest.streams.clock_resets == {ODOM: 1, RANGE: 1}
    assert not ingest.drops.counts and ingest.placement.pending == 0 and ingest.streams.held == 0


def test_time_restarting_is_a_reset_and_samples_flow_again(caplog):
    """Sim time restarts (or a bag loops) while the survey goes on: every later stamp is
    older than every stamp before."""
    ingest = Ingest(CONFIG)
    ingest.set_plan([[5.0, 0.0]], 0.0, now=0.0)
    first = leg(100.0)
    feed(ingest, first)
    batch, = ingest.take_batches()
    assert (batch.stamp, len(batch)) == (110.0, ranges(first))
    ingest.set_plan([[15.0, 0.0]], 0.0, now=0.0)
    again = leg(0.0, x0=5.0)
    with caplog.at_level(logging.WARNING, logger="poam_ros.ingest.streams"):
        feed(ingest, again)
    ingest.poll(now=100.0)
    batch, = ingest.take_batches()
    assert (batch.reason, batch.stamp, len(batch)) == ("arrival", 10.0, ranges(again))
    assert ingest.streams.clock_resets == {ODOM: 1, RANGE: 1}
    assert "odom clock reset" in caplog.text and "range clock reset" in caplog.text
    assert not ingest.drops.counts


def test_ordinary_out_of_order_messages_are_dropped_as_before():
    """Slightly late messages, within the threshold, however many in a row, are out of
    order as they always were: neither suspects nor a reset."""
    ingest = Ingest(CONFIG)
    ingest.set_plan([[5.0, 0.0]], 0.0, now=0.0)
    events = leg(0.0)
    late = after(events, "pose", 6.0)
    events[late:late] = [("pose", 5.5, 0.5)] * (K + 1) + [("range", 5.25)] * (K + 1)
    feed(ingest, events)
    batch, = ingest.take_batches()
    assert len(batch) == 20
    assert ingest.drops.counts == {ig.POSE_OUT_OF_ORDER: K + 1, ig.OUT_OF_ORDER: K + 1}
    assert not ingest.streams.clock_resets and ingest.streams.held == 0


@pytest.mark.parametrize("changes, match", [
    ({"stamp_jump_threshold": 0.5}, "stamp_jump_threshold"),  # below max_pose_gap (1 s)
    ({"stamp_reset_count": 1}, "stamp_reset_count"),          # a glitch would be a reset
    ({"orientation_tolerance": -1e-3}, "orientation_tolerance")])
def test_the_rules_parameters_are_validated(changes, match):
    with pytest.raises(ConfigError, match=match):
        IngestConfig(**changes)


def test_a_reset_keeps_the_waypoints_reached():
    """Waypoints reached are places, which a clock change does not move: after a forward
    reset mid-plan the vehicle need not go back to the waypoint it passed on the old clock,
    and reaching the plan's end on the new clock is its arrival."""
    ingest = Ingest(CONFIG)
    ingest.set_plan([[2.0, 0.0], [15.0, 0.0]], 0.0, now=0.0)
    feed(ingest, leg(0.0)[:-1])                      # passes x = 2 on the old clock
    assert ingest.batcher.plan_progress == (1, 2)
    jumped = leg(10.0 + GLITCH, x0=5.0)
    feed(ingest, jumped)
    assert ingest.streams.clock_resets[ODOM] == 1
    ingest.poll(now=100.0)
    old, new = ingest.take_batches()
    assert (old.reason, new.reason, new.stamp) == ("reset", "arrival", 20.0 + GLITCH)


def survey_across_a_reset(lead, new_clock, restart=6.0, seconds=12.0):
    """Poses every 0.1 s and a range every 0.5 s (a quarter-tick off) of a vehicle at
    x = τ - 5 m; the clock changes at τ = ``restart`` s to ``new_clock(τ)``. Each event is
    (arrival [s], kind, stamp [s], x [m]); the sonar's arrive ``lead`` s before the
    odometry's (negative: after)."""
    events = []
    for kind, tau, *x in leg(0.0, seconds=round(seconds)):
        stamp = 100.0 + tau if tau < restart - 1e-9 else new_clock(tau)
        lag = max(0.0, lead) if kind == "pose" else max(0.0, -lead)
        events.append((tau + lag, kind, stamp, x[0] if x else tau - 5.0))
    return sorted(events, key=lambda event: event[0])


@pytest.mark.parametrize("lead", [-3.0, -1.0, -0.2, 0.2, 1.0, 3.0])
@pytest.mark.parametrize("new_clock", [lambda tau: tau - 6.0, lambda tau: tau + GLITCH],
                         ids=["time restarts", "jumps forwards"])
def test_odometry_and_sonar_resetting_in_either_order_lose_no_reading(lead, new_clock):
    """The two clocks change at the same moment, but either stream's messages come up to
    3 s ahead of the other's: the one that resets first is held until the other has, and
    every range is placed at the vehicle's position at its own stamp."""
    ingest = Ingest(CONFIG)
    events = survey_across_a_reset(lead, new_clock)
    for now, kind, t, x in events:
        if kind == "pose":
            ingest.add_pose(t, x, 0.0, PLANE_Z, 0.0, now)
        else:
            ingest.add_range(t, DEPTH, *LIMITS, now)
    ingest.poll(events[-1][0])
    ingest.flush_tail()
    points = np.concatenate([batch.points for batch in ingest.take_batches()])
    expected = sorted(x for _, kind, _, x in events if kind == "range")
    assert not ingest.drops.counts and ingest.streams.clock_resets == {ODOM: 1, RANGE: 1}
    np.testing.assert_allclose(sorted(points[:, 0]), expected, atol=1e-9)
    assert ingest.placement.pending == 0 and ingest.streams.held == 0
