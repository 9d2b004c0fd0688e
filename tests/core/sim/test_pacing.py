"""Lockstep's back-pressure (:mod:`poam_ros.sim.pacing`): the clock makes no more steps than
leave every reporting consumer fewer than ``max_backlog`` messages of a topic still to take,
and when a consumer reports."""

import math

import pytest

from poam_ros.sim.pacing import HEARTBEAT, ClockPacing, TakenStamps


def sent(pacing: ClockPacing, topic: str, stamps) -> None:
    for stamp in stamps:
        pacing.sent(topic, float(stamp))


def test_the_steps_left_are_the_least_room_of_any_topic_of_any_consumer():
    pacing = ClockPacing(max_backlog=4)
    sent(pacing, "/odom", range(1, 11))  # 1..10 s
    sent(pacing, "/sonar/range", [2, 5, 8])
    pacing.heard("ingest", {"/odom": 7.0, "/sonar/range": 8.0}, now=0.0)  # 3 odom to take
    pacing.heard("recorder", {"/odom": 9.0}, now=0.0)
    assert pacing.room(now=1.0) == {"ingest": 1, "recorder": 3}
    assert pacing.steps(20, now=1.0, elapsed=0.1) == 1
    pacing.heard("ingest", {"/odom": 6.0, "/sonar/range": 8.0}, now=1.0)  # 4 to take
    assert pacing.steps(20, now=1.0, elapsed=0.1) == 0
    assert pacing.holding == ["ingest"] and pacing.held_for == pytest.approx(0.1)
    pacing.heard("ingest", {"/odom": 10.0, "/sonar/range": 8.0}, now=1.0)
    assert pacing.steps(20, now=1.0, elapsed=0.1) == 3  # the recorder's room
    assert pacing.holding == [] and pacing.held_for == pytest.approx(0.1)


def test_a_consumer_before_its_first_message_owes_what_was_sent_since_it_reported():
    taken = TakenStamps(["/odom", "/fix"])
    pacing = ClockPacing(max_backlog=2)
    pacing.heard("ingest", taken.report(now=0.0), now=0.0)
    sent(pacing, "/odom", [0.0, 1.0])
    pacing.heard("ingest", taken.report(now=0.1), now=0.1)  # nothing taken yet: all owed
    assert pacing.steps(20, now=0.1, elapsed=0.0) == 0
    taken.take("/odom", 0.0)
    pacing.heard("ingest", taken.report(now=0.2), now=0.2)
    assert pacing.steps(20, now=0.2, elapsed=0.0) == 1


def test_a_restarted_consumer_does_not_owe_its_predecessors_backlog():
    """What went out before a consumer subscribed never reaches it: an ingest restarted in
    the middle of a mission (a fleet vehicle rejoining) owes only what comes after, or the
    clock would stand for ever."""
    pacing = ClockPacing(max_backlog=500)
    sent(pacing, "/auv1/sonar/range", range(1, 901))
    pacing.heard("/auv1/sensor_ingest", {"/auv1/sonar/range": 200.0}, now=0.0)
    assert pacing.room(now=0.0) == {"/auv1/sensor_ingest": 0}  # the old one, far behind
    pacing.heard("/auv1/sensor_ingest", {"/auv1/sonar/range": -math.inf}, now=1.0)
    assert pacing.room(now=1.0) == {"/auv1/sensor_ingest": 500}
    sent(pacing, "/auv1/sonar/range", range(901, 911))
    pacing.heard("/auv1/sensor_ingest", {"/auv1/sonar/range": -math.inf}, now=2.0)
    assert pacing.room(now=2.0) == {"/auv1/sensor_ingest": 490}  # the new ones are owed
    pacing.heard("/auv1/sensor_ingest", {"/auv1/sonar/range": 905.0}, now=3.0)
    assert pacing.room(now=3.0) == {"/auv1/sensor_ingest": 495}


def test_stamps_older_than_those_kept_count_as_a_full_backlog():
    pacing = ClockPacing(max_backlog=3)
    sent(pacing, "/odom", range(100))
    pacing.heard("ingest", {"/odom": 1.0}, now=0.0)
    assert pacing.room(now=0.0) == {"ingest": 0}


def test_topics_it_does_not_report_or_has_caught_up_with_hold_nothing():
    pacing = ClockPacing(max_backlog=2)
    sent(pacing, "/temperature", [1, 2, 3])
    sent(pacing, "/auv1/odom", [1, 2, 3])  # a vehicle whose mission is done sends no more
    pacing.heard("ingest", {"/fix": -math.inf, "/auv1/odom": 3.0}, now=0.0)
    assert pacing.steps(20, now=0.0, elapsed=1.0) == 2 and pacing.held_for == 0.0


def test_a_silent_or_forgotten_consumer_no_longer_holds_the_clock():
    pacing = ClockPacing(max_backlog=1, stale_after=5.0)
    sent(pacing, "/odom", [10.0])
    pacing.heard("ingest", {"/odom": 2.0}, now=100.0)
    assert pacing.steps(20, now=104.0, elapsed=1.0) == 0
    assert pacing.steps(20, now=105.0, elapsed=1.0) == 20
    pacing.heard("ingest", {"/odom": 2.0}, now=105.0)
    assert pacing.steps(20, now=105.0, elapsed=1.0) == 0
    pacing.forget("ingest")
    assert pacing.consumers == [] and pacing.steps(20, now=105.0, elapsed=1.0) == 20
    assert pacing.held_for == 2.0


def test_no_backlog_never_holds():
    pacing = ClockPacing(max_backlog=0)
    sent(pacing, "/odom", [1, 2, 3])
    pacing.heard("ingest", {"/odom": 0.0}, now=0.0)
    assert pacing.steps(20, now=0.0, elapsed=1.0) == 20 and pacing.held_for == 0.0


def test_a_report_is_due_when_anything_moved_or_a_heartbeat_is():
    taken = TakenStamps(["/odom"])
    assert taken.due(now=0.0)
    assert taken.report(now=0.0) == {"/odom": -math.inf}
    assert not taken.due(now=0.01)
    taken.take("/odom", 1.0)
    assert taken.due(now=0.02)
    taken.report(now=0.02)
    assert not taken.due(now=0.03)
    assert taken.due(now=0.02 + HEARTBEAT)
