"""Lockstep's back-pressure (:mod:`poam_ros.sim.pacing`): the clock's bound from consumers'
reports, and when a consumer reports."""

import math

import pytest

from poam_ros.sim.pacing import HEARTBEAT, REPORT_STEP, ClockPacing, TakenStamps


def test_the_clock_runs_no_further_than_the_slowest_topic_of_the_slowest_consumer():
    pacing = ClockPacing(max_lead=2.0)
    pacing.sent("/odom", 10.0)
    pacing.sent("/sonar/range", 9.5)
    pacing.heard("ingest", {"/odom": 8.0, "/sonar/range": 6.0}, now=0.0)
    pacing.heard("recorder", {"/odom": 9.0}, now=0.0)
    assert pacing.bounds(clock=10.0, now=1.0) == {"ingest": 8.0, "recorder": 11.0}
    assert pacing.clamp(20.0, clock=10.0, now=1.0, elapsed=0.1) == 10.0  # it stands
    assert pacing.holding == ["ingest"] and pacing.held_for == pytest.approx(0.1)
    assert pacing.clamp(20.0, clock=7.0, now=1.0, elapsed=0.1) == 8.0
    assert pacing.holding == [] and pacing.held_for == pytest.approx(0.1)


def test_topics_it_does_not_report_or_the_simulator_never_sent_hold_nothing():
    pacing = ClockPacing(max_lead=1.0)
    pacing.sent("/odom", 5.0)
    pacing.heard("ingest", {"/fix": 0.0, "/temperature": 0.0}, now=0.0)
    assert pacing.bounds(clock=5.0, now=0.0) == {}
    pacing.heard("ingest", {"/fix": 0.0, "/odom": 4.5}, now=0.0)
    assert pacing.bounds(clock=5.0, now=0.0) == {"ingest": 5.5}


def test_a_clock_within_its_bound_runs_and_counts_no_hold():
    pacing = ClockPacing(max_lead=3.0)
    pacing.sent("/odom", 10.0)
    pacing.heard("ingest", {"/odom": 9.0}, now=0.0)
    assert pacing.clamp(11.0, clock=10.0, now=0.0, elapsed=0.5) == 11.0
    assert pacing.clamp(15.0, clock=10.0, now=0.0, elapsed=0.5) == 12.0
    assert pacing.holding == [] and pacing.held_for == 0.0


def test_a_silent_or_forgotten_consumer_no_longer_holds_the_clock():
    pacing = ClockPacing(max_lead=1.0, stale_after=5.0)
    pacing.sent("/odom", 10.0)
    pacing.heard("ingest", {"/odom": 2.0}, now=100.0)
    assert pacing.clamp(11.0, clock=10.0, now=104.0, elapsed=1.0) == 10.0
    assert pacing.clamp(11.0, clock=10.0, now=105.0, elapsed=1.0) == 11.0
    pacing.heard("ingest", {"/odom": 2.0}, now=105.0)
    assert pacing.clamp(11.0, clock=10.0, now=105.0, elapsed=1.0) == 10.0
    pacing.forget("ingest")
    assert pacing.clamp(11.0, clock=10.0, now=105.0, elapsed=1.0) == 11.0
    assert pacing.held_for == 2.0


def test_no_lead_never_holds():
    pacing = ClockPacing(max_lead=0.0)
    pacing.sent("/odom", 10.0)
    pacing.heard("ingest", {"/odom": 0.0}, now=0.0)
    assert pacing.clamp(math.inf, clock=10.0, now=0.0, elapsed=1.0) == math.inf
    assert pacing.held_for == 0.0


def test_a_report_is_due_after_a_step_of_sim_time_or_from_the_poll():
    taken = TakenStamps()
    assert taken.take("/odom", 1.0)  # the first message of a topic
    assert taken.report(now=0.0) == {"/odom": 1.0}
    assert not taken.take("/odom", 1.0 + REPORT_STEP / 2)
    assert taken.due(now=0.01)  # moved since the last report
    taken.report(now=0.01)
    assert not taken.due(now=0.02)
    assert taken.due(now=0.01 + HEARTBEAT)
    assert taken.take("/odom", 1.0 + REPORT_STEP * 1.5)
    assert taken.take("/odom", 0.0)  # back in time: a clock reset is news too


def test_a_subscribed_topic_holds_the_clock_until_its_first_message_is_taken():
    taken = TakenStamps(["/odom", "/fix"])
    pacing = ClockPacing(max_lead=1.0)
    pacing.sent("/odom", 0.0)
    pacing.heard("ingest", taken.report(now=0.0), now=0.0)
    assert pacing.clamp(5.0, clock=0.0, now=0.0, elapsed=0.1) == 0.0  # never behind the clock
    assert pacing.holding == ["ingest"]
    assert taken.take("/odom", 0.0)
    pacing.heard("ingest", taken.report(now=0.1), now=0.1)
    assert pacing.clamp(5.0, clock=0.0, now=0.1, elapsed=0.1) == 1.0  # caught up: 1 s on
    pacing.sent("/odom", 0.5)
    assert pacing.clamp(5.0, clock=0.5, now=0.1, elapsed=0.1) == 1.0


def test_a_topic_caught_up_with_holds_nothing_though_it_fell_silent():
    pacing = ClockPacing(max_lead=1.0)
    pacing.sent("/auv1/odom", 5.0)  # a vehicle whose mission is done sends no more
    pacing.heard("/auv1/sensor_ingest", {"/auv1/odom": 5.0}, now=0.0)
    pacing.sent("/auv0/odom", 50.0)
    pacing.heard("/auv0/sensor_ingest", {"/auv0/odom": 49.5}, now=0.0)
    assert pacing.bounds(clock=50.0, now=0.0) == {"/auv1/sensor_ingest": 51.0,
                                                  "/auv0/sensor_ingest": 50.5}
    assert pacing.clamp(60.0, clock=50.0, now=0.0, elapsed=0.1) == 50.5
