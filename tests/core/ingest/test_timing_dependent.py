"""Which of the ingest node's counts say its timing, not its data, decided part of a run: a
lockstep run whose ingest fell behind the simulated clock shows it here (``poam-ros sim``
reports it; ``remap`` will not call such a run's live batches reproducible)."""

from poam_ros.diagnostics import LOST_IN_TRANSPORT, IngestStatus
from poam_ros.ingest.reasons import timing_dependent


def status(flushes: int, dropped: dict[str, int]) -> IngestStatus:
    return IngestStatus(
        samples_accepted=5255, samples_published=5098, batches_published=7, batch_size=0,
        pending_readings=0, poses_kept=301, latest_pose_time=67350.0, plan_waypoints_reached=0,
        plan_waypoints=0, flushes_on_grace=flushes, stamps_held=0, fixes_applied=0,
        last_fix_correction=0.0, dropped=dropped, clock_resets={}, channel_received={},
        channel_placed={}, channel_dropped={})


def test_the_data_s_own_drops_are_not_timing():
    quiet = status(0, {"stale_stamp": 37, "outside_workspace": 157, "pose_gap": 1444})
    assert not any(timing_dependent(quiet).values())


def test_flushes_and_drops_on_the_clock_or_in_transport_are():
    behind = status(2, {LOST_IN_TRANSPORT: 14993, "late": 3, "pose_gap": 1444})
    assert timing_dependent(behind) == {
        "flushes on grace": 2, "dropped late": 3, "dropped no_pose": 0,
        "dropped queue_overflow": 0, f"dropped {LOST_IN_TRANSPORT}": 14993}
