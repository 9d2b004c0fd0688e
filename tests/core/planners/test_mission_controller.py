"""The mission controller without ROS: every transition, every budget and its reason, abort
from every state, home or hold."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.planners.mission_control import (
    ABORTED,
    ADAPTIVE,
    DONE,
    IDLE,
    PAUSED,
    PILOT,
    RETURNING,
    STATES,
    MissionControlConfig,
    MissionController,
    OwnSoundings,
    std_statistic,
)


def controller(**config) -> MissionController:
    return MissionController(MissionControlConfig(**{"max_samples": 0, **config}))


def started(**config) -> MissionController:
    control = controller(**config)
    assert control.start() is None
    control.observe_pose(10.0, (5.0, -3.0, -20.0))  # the start pose: home by default
    return control


def in_state(state: str) -> MissionController:
    """A controller brought to ``state`` by requests and observations (max_samples 100)."""
    control = controller(max_samples=100, on_budget="home", home=[0.0, 0.0])
    steps = {PILOT: [control.start], ADAPTIVE: [control.start, control.planning_started],
             RETURNING: [control.start, control.return_home],
             DONE: [control.start, control.return_home, control.home_reached],
             PAUSED: [control.start, lambda: control.pause(True)],
             ABORTED: [control.abort]}
    for step in steps.get(state, []):
        step()
    assert control.state == state
    return control


def test_a_mission_runs_idle_pilot_adaptive_and_ends_with_reasons():
    control = controller(max_samples=100)
    assert (control.state, control.reason) == (IDLE, "waiting for start")
    assert control.start() is None and control.state == PILOT
    assert control.planning_started() and control.state == ADAPTIVE
    assert not control.observe_map(99)
    assert control.observe_map(100)
    assert control.state == DONE and control.ended_by == "samples"
    assert control.reason == "samples budget spent: 100 of 100; holding"
    assert [state for state, _ in control.changes] == [IDLE, PILOT, ADAPTIVE, DONE]


def test_counting_its_own_soundings_a_vehicle_spends_its_share_whatever_its_map_holds():
    # a distributed fleet of two at 2,000 per vehicle: the map holds what the link relayed too
    control = controller(max_samples=2000, samples_counted="own")
    control.start()
    assert not control.observe_map(3500, own=1999)  # the map's count would have ended it
    assert control.state == PILOT and control.status().samples_used == 1999
    assert control.observe_map(3600, own=2000) and control.state == DONE
    assert control.reason == "samples budget spent: 2000 of 2000; holding"
    # its map goes on taking the teammate's soundings: the counts stay the ending map's
    assert not control.observe_map(3900, own=2000)
    status = control.status()
    assert (status.samples_used, status.samples_mapped) == (2000, 3600)
    with pytest.raises(ValueError):
        controller(max_samples=10, samples_counted="own").observe_map(5)


def test_a_maps_own_soundings_are_its_stamped_batches_up_to_its_stamp():
    own = OwnSoundings()
    for stamp, count in ((2_000, 30), (0, 13), (1_000, 20), (0, 13), (3_000, 40)):
        own.add(stamp, count)  # unstamped: relayed by the fleet link; out of order is sorted
    assert [own.until(stamp) for stamp in (500, 1_000, 2_500, 3_000, 9_000)] == \
        [0, 20, 50, 90, 90]


@pytest.mark.parametrize("state", STATES)
def test_abort_works_from_every_state(state):
    control = in_state(state)
    control.abort()
    assert (control.state, control.reason) == (ABORTED, "aborted by request")


@pytest.mark.parametrize("state, request_name, refused", [
    (PILOT, "start", "the mission is pilot, not idle"),
    (IDLE, "pause", "the mission is idle: nothing to pause"),
    (DONE, "pause", "the mission is done: nothing to pause"),
    (PILOT, "resume", "the mission is pilot, not paused"),
    (IDLE, "return_home", "the mission is idle"),
    (RETURNING, "return_home", "the mission is returning"),
])
def test_a_request_out_of_turn_is_refused_with_why_and_changes_nothing(state, request_name,
                                                                       refused):
    control = in_state(state)
    calls = {"start": control.start, "pause": lambda: control.pause(True),
             "resume": lambda: control.pause(False), "return_home": control.return_home}
    assert calls[request_name]() == refused
    assert control.state == state


@pytest.mark.parametrize("state", [PILOT, ADAPTIVE, RETURNING])
def test_pause_and_resume_come_back_to_the_state_paused(state):
    control = in_state(state)
    assert control.pause(True) is None and control.state == PAUSED
    assert control.reason == "paused by request"
    assert control.pause(False) is None
    assert (control.state, control.reason) == (state, "resumed by request")


@pytest.mark.parametrize("state", [PILOT, ADAPTIVE, PAUSED, DONE, ABORTED])
def test_return_home_from_a_started_mission_then_done_at_home(state):
    control = in_state(state)
    assert control.return_home() is None
    assert (control.state, control.reason) == (RETURNING, "return home by request")
    assert control.home_reached()
    assert (control.state, control.reason) == (DONE, "home reached")


def test_home_is_the_first_pose_after_the_start_unless_set():
    control = started()
    np.testing.assert_array_equal(control.home, [5.0, -3.0])
    control.observe_pose(11.0, (50.0, 50.0, -20.0))
    np.testing.assert_array_equal(control.home, [5.0, -3.0])
    np.testing.assert_array_equal(started(home=[1.0, 2.0]).home, [1.0, 2.0])
    assert controller().return_home() == "the mission is idle"
    unknown = controller()
    unknown.start()
    assert unknown.return_home() == "home unknown: no pose since the start and no mission.home"


@pytest.mark.parametrize("on_budget, state, reason", [
    ("home", RETURNING, "samples budget spent: 7 of 5; returning home"),
    ("hold", DONE, "samples budget spent: 7 of 5; holding"),
])
def test_a_spent_budget_goes_home_or_holds_as_configured(on_budget, state, reason):
    control = started(max_samples=5, on_budget=on_budget)
    assert control.observe_map(7)
    assert (control.state, control.reason, control.ended_by) == (state, reason, "samples")
    if state == RETURNING:
        assert control.home_reached()
        assert control.reason == f"home reached; {reason}"


@pytest.mark.parametrize("config, observe, reason", [
    ({"max_samples": 50}, lambda c: c.observe_map(50),
     "samples budget spent: 50 of 50; holding"),
    ({"max_time": 30.0}, lambda c: c.observe_pose(40.0, (5.0, -3.0, -20.0)),
     "time_s budget spent: 30 of 30; holding"),
    ({"max_distance": 12.0}, lambda c: c.observe_pose(11.0, (5.0, -3.0 + 13.0, -20.0)),
     "distance_m budget spent: 13 of 12; holding"),
    ({"std_threshold": 0.5}, lambda c: c.observe_map(10, 0.25),
     "std_m budget spent: 0.25 below 0.5; holding"),
])
def test_each_budget_ends_the_mission_with_its_reason(config, observe, reason):
    control = started(**config)
    assert observe(control)
    assert (control.state, control.reason) == (DONE, reason)


def test_budgets_are_not_spent_before_their_limit():
    control = started(max_samples=50, max_time=30.0, max_distance=12.0, std_threshold=0.5)
    assert not control.observe_map(49, 0.6)
    assert not control.observe_pose(39.0, (5.0, 8.0, -20.0))  # 29 s, 11 m
    assert control.state == PILOT and control.spent() is None
    assert not control.observe_map(49)  # no std: the map-quality stop waits
    assert control.state == PILOT


def test_distance_is_flown_in_three_dimensions_and_time_from_the_first_pose():
    control = started()
    control.observe_pose(12.0, (8.0, 1.0, -20.0))  # 5 m
    control.observe_pose(15.0, (8.0, 1.0, -32.0))  # 12 m down
    assert control.distance_m == pytest.approx(17.0)
    assert control.time_s == pytest.approx(5.0)


def test_budgets_are_not_checked_while_idle_paused_or_returning():
    control = controller(max_samples=5)
    assert not control.observe_map(10) and control.state == IDLE
    control.start()
    control.pause(True)
    assert not control.observe_map(10) and control.state == PAUSED
    control.pause(False)
    assert control.observe_map(10) and control.state == DONE


def test_the_status_record_carries_use_limits_and_reason():
    control = started(max_samples=100, max_time=60.0)
    control.observe_map(40)
    status = control.status()
    assert (status.samples_used, status.samples_limit, status.time_s_limit) == (40, 100, 60.0)
    assert status.std_m_used is None and status.reason == "started"
    assert status.ended_by is None


@pytest.mark.parametrize("statistic, expected", [("mean", 2.5), ("p95", 3.85)])
def test_the_std_statistic_is_over_the_workspace_cells(statistic, expected):
    std = np.array([[1.0, 2.0], [3.0, 4.0], [np.nan, np.nan]])  # NaN: outside the workspace
    assert std_statistic(std, statistic) == pytest.approx(expected)
    assert math.isnan(std_statistic(np.full(3, np.nan), statistic))


@pytest.mark.parametrize("home", [[1.0], [1.0, math.inf]])
def test_a_bad_home_is_refused(home):
    with pytest.raises(ConfigError, match="home must be empty or a finite"):
        MissionControlConfig(home=home)
