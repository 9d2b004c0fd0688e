"""The mission and the vehicle's link, without ROS: a lost link pauses a moving mission with
its reason, a link back resumes nothing, an explicit start does (not while still lost)."""

from __future__ import annotations

import pytest

from poam_ros.planners.mission_control import (
    ABORTED,
    ADAPTIVE,
    DONE,
    IDLE,
    LINK_LOST_REASON,
    PAUSED,
    PILOT,
    RETURNING,
    MissionControlConfig,
    MissionController,
)


def moving(state: str) -> MissionController:
    control = MissionController(MissionControlConfig(max_samples=0, home=[0.0, 0.0]))
    assert control.start() is None
    if state == ADAPTIVE:
        assert control.planning_started()
    elif state == RETURNING:
        assert control.return_home() is None
    assert control.state == state
    return control


@pytest.mark.parametrize("state", [PILOT, ADAPTIVE, RETURNING])
def test_link_loss_pauses_and_only_a_start_resumes(state):
    control = moving(state)
    assert control.observe_vehicle_link(lost=True)
    assert (control.state, control.reason) == (PAUSED, LINK_LOST_REASON)
    assert not control.observe_vehicle_link(lost=True)  # already paused: no change
    assert control.start() == f"{LINK_LOST_REASON}: resume once the vehicle bridge has its link"
    assert control.pause(False) is not None and control.state == PAUSED
    assert not control.observe_vehicle_link(lost=False)  # the link back resumes nothing
    assert control.state == PAUSED
    assert control.start() is None
    assert (control.state, control.reason) == (state, "resumed by start")


@pytest.mark.parametrize("make", [
    lambda: MissionController(MissionControlConfig(max_samples=0)),  # idle
    lambda: _ended(DONE), lambda: _ended(ABORTED)])
def test_link_loss_leaves_a_mission_that_is_not_moving_as_it_is(make):
    control = make()
    state = control.state
    assert not control.observe_vehicle_link(lost=True) and control.state == state


def test_an_idle_mission_does_not_start_while_the_link_is_lost():
    control = MissionController(MissionControlConfig(max_samples=0))
    control.observe_vehicle_link(lost=True)
    assert control.start() == LINK_LOST_REASON and control.state == IDLE
    control.observe_vehicle_link(lost=False)
    assert control.start() is None and control.state == PILOT


def test_a_request_pause_keeps_its_reason_and_resumes_by_request():
    control = moving(PILOT)
    assert control.pause(True) is None and control.reason == "paused by request"
    assert control.pause(False) is None
    assert (control.state, control.reason) == (PILOT, "resumed by request")


def _ended(state: str) -> MissionController:
    control = moving(RETURNING)
    if state == DONE:
        assert control.home_reached()
    else:
        control.abort()
    return control
