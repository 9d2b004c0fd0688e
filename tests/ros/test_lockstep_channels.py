"""A lockstep ``poam-ros sim`` with the temperature channel makes the ROS-free Mission's
decisions epoch for epoch and scores each channel as it does (small: the default survey,
M = 20, a 565-sample pilot and five legs to 900 samples, the joint acquisition over both
channels). Measured: every channel's SMSE and MSLL equal to 5 decimals.

As in tests/ros/test_lockstep_equivalence.py, the graph is not bit-identical to the ROS-free
loop (float32 ranges, poses interpolated at nanosecond stamps), so the decisions (the sample
count and sim time of every epoch) must be equal and the per-channel metrics close.
"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import sim_then_mission  # noqa: E402

from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402

SEED, BUDGET = 2, 900
CHANNELS = ("depth", "temperature")


@pytest.fixture(scope="module")
def runs(ros_domain_id, small_parameter_file, tmp_path_factory):
    """(the command's sim.json, its epoch records, its folder, the ROS-free result)."""
    params = small_parameter_file(
        simulated_auv={"temperature": {"enabled": True}},
        sensor_ingest={"channels": ["temperature"], "channel_rates": [0.5]},
        mapper={"mapping": {"method": "poam-mt", "channel_min_samples": 10}},
        planner={"max_entropy": {"acquisition": "joint"}})
    out = tmp_path_factory.mktemp("channels")
    setup = MissionSetup.from_file(params)
    setup.mission = setup.mission.replace(seed=SEED)
    setup.mission_control = setup.mission_control.replace(max_samples=BUDGET)
    summary, records, result = sim_then_mission(
        ["--params", str(params), "--seed", str(SEED), "--max-samples", str(BUDGET),
         "--compare"], out, setup)
    return summary, records, out, result


def test_the_graph_makes_the_missions_decisions(runs):
    summary, records, _, result = runs
    assert summary["outcome"] == "budget"
    assert len(result.records) >= 3  # the pilot and at least two planned legs
    assert [r["num_samples"] for r in records] == [r.num_samples for r in result.records]
    assert [r["sim_time"] for r in records] == pytest.approx(
        [r.sim_time for r in result.records], abs=1e-6)


def test_each_channel_is_scored_as_the_mission_scores_it(runs):
    _, records, _, result = runs
    for graph, mission in zip(records, result.records):
        for channel in CHANNELS:
            assert graph["extra"][f"smse_{channel}"] == pytest.approx(
                mission.extra[f"smse_{channel}"], rel=0.02, abs=1e-3)
            assert graph["extra"][f"msll_{channel}"] == pytest.approx(
                mission.extra[f"msll_{channel}"], abs=0.02)
        assert graph["smse"] == graph["extra"]["smse_depth"]
        for figure in ("noise_0", "noise_std_1", "correlation_0_1", "active_channels"):
            assert graph["extra"][figure] == pytest.approx(mission.extra[figure], rel=0.05)


def test_compare_reports_each_channel_of_the_ros_free_mission(runs):
    summary, _, _, result = runs
    reported = summary["ros_free"]["final"]["extra"]
    for channel in CHANNELS:
        for metric in ("smse", "msll"):
            key = f"{metric}_{channel}"
            assert reported[key] == result.final.extra[key]


def test_a_figure_per_channel(runs):
    _, _, out, _ = runs
    assert (out / "sim.png").stat().st_size > 0
    assert (out / "sim_temperature.png").stat().st_size > 0
