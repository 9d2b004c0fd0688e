"""A fleet's mission ends when every vehicle's has, aborted if any was; its figures are the
vehicle's that counted the most samples; a vehicle's last statuses count its last batch."""

from dataclasses import replace

from poam_ros.diagnostics import FleetLinkStatus, IngestStatus, MissionStatus
from poam_ros.planners.fleet_state import fleet_mission, fleet_state, own_counts_current


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


def ingest(published: int) -> IngestStatus:
    return IngestStatus(
        samples_accepted=published, samples_published=published, batches_published=3,
        batch_size=0, pending_readings=0, poses_kept=10, latest_pose_time=1.0,
        plan_waypoints_reached=0, plan_waypoints=0, flushes_on_grace=0, stamps_held=0,
        fixes_applied=0, last_fix_correction=0.0, dropped={}, clock_resets={},
        channel_received={}, channel_placed={}, channel_dropped={})


def link(sent: int, waiting: int, pool_dropped: int = 0, refused: int = 0) -> FleetLinkStatus:
    return FleetLinkStatus(vehicle_id=1, waiting=waiting, soundings_sent=sent,
                           soundings_received=0, packets_sent=1, bytes_sent=100,
                           peak_window_bytes=100, pool_dropped=pool_dropped,
                           refused={"non_finite": refused}, dropped={})


def test_a_vehicles_last_batch_must_be_in_its_ingests_and_links_counts():
    """The fleet's /auv1 of a four-vehicle run ended on a batch of 961 soundings, 5,627 own
    counted, while its last ingest status said 4,666 published and its link's 4,666 sent, none
    waiting: the summary must wait for statuses that hold that batch."""
    spent = replace(status(5627), reason="samples budget spent: 5627 of 5000; holding")
    assert not own_counts_current(ingest(4666), spent, link(4666, 0))
    assert not own_counts_current(ingest(5627), spent, link(4666, 0))  # the link's is old
    assert own_counts_current(ingest(5627), spent, link(4666, 961))
    assert own_counts_current(ingest(5630), spent, link(5000, 620, pool_dropped=5, refused=5))
    assert own_counts_current(ingest(10), None, link(10, 0))  # no mission state heard yet
    assert not own_counts_current(None, spent, link(5627, 0))
    assert not own_counts_current(ingest(5627), spent, None)
