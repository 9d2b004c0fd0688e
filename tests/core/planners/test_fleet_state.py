"""A fleet's mission ends when every vehicle's has, aborted if any was; its figures are the
vehicle's that counted the most samples."""

from poam_ros.diagnostics import MissionStatus
from poam_ros.planners.fleet_state import fleet_mission, fleet_state


def status(samples: int) -> MissionStatus:
    return MissionStatus(reason=f"{samples}", samples_used=samples, samples_limit=10,
                         time_s_used=0.0, time_s_limit=0.0, distance_m_used=0.0,
                         distance_m_limit=0.0, std_m_used=None, std_m_limit=0.0, ended_by=None)


def test_the_fleet_ends_with_its_last_vehicle():
    assert fleet_state({}) == "idle"
    assert fleet_state({"/auv0": "", "/auv1": ""}) == "idle"
    assert fleet_state({"/auv0": "done", "/auv1": ""}) == "idle"  # /auv1 not heard yet
    assert fleet_state({"/auv0": "done", "/auv1": "adaptive"}) == "adaptive"
    assert fleet_state({"/auv0": "pilot", "/auv1": "adaptive"}) == "pilot"
    assert fleet_state({"/auv0": "done", "/auv1": "done"}) == "done"
    assert fleet_state({"/auv0": "aborted", "/auv1": "done"}) == "aborted"


def test_a_vehicle_that_left_is_not_waited_for():
    running = {"/auv0": "done", "/auv1": "adaptive"}
    assert fleet_state(running, left={"/auv1"}) == "done"
    assert fleet_state({"/auv0": "adaptive", "/auv1": "adaptive"}, {"/auv0"}) == "adaptive"
    assert fleet_state({"/auv0": "done", "/auv1": "aborted"}, {"/auv1"}) == "done"
    assert fleet_state(running, left={"/auv0", "/auv1"}) == "aborted"  # nobody to end it
    assert fleet_state(running, left=()) == "adaptive"  # back: waited for again


def test_the_fleet_s_figures_are_the_vehicle_s_that_counted_most():
    assert fleet_mission({"/auv0": None}) is None
    assert fleet_mission({"/auv0": status(3), "/auv1": None, "/auv2": status(7)}).reason == "7"
