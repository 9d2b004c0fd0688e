"""The graph of ``launch/sim.launch.xml``, started from its content, makes the ROS-free
Mission's decisions: a lockstep ``poam-ros sim`` on N17E073 (the paper's Env2), given one
complete parameter file and no other setting, starts exactly the nodes ``ros2 launch poam_ros
sim.launch.xml params_file:=<that file>`` starts with exactly their parameters, and ends with
the SMSE and MSLL of the ROS-free Mission with the same seed, on a reduced budget (a
5-waypoint pilot survey and a few goals, M = 40); ``--compare`` reports that Mission exactly.

The graph is not bit-identical to the ROS-free loop: sonar ranges travel as float32
(sensor_msgs/Range) and the ingest places each sounding at the pose interpolated at its
nanosecond stamp, which moves samples by ~1e-10 m; the model's discrete choices (inducing
inputs by pivoted Cholesky) can turn that into differences of a few tenths of a percent.
So the decisions must be the same (the sample count of every epoch) and the metrics equal
within a small tolerance.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import ROOT, sim_then_mission  # noqa: E402

from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402
from poam_ros.setup.sim_launch import differences, write_effective_file  # noqa: E402
from poam_ros.setup.terrain import TerrainConfig  # noqa: E402

ENV2 = ROOT.parent / "shared" / "data" / "srtm" / "N17E073_360.npz"
SEED, BUDGET = 1, 800
METRICS = ("smse", "msll", "nlpd", "rmse", "mae")


@pytest.fixture(scope="module")
def runs(ros_domain_id, small_parameter_file, tmp_path_factory):
    """(the command's sim.json, its epoch records, the ROS-free Mission's result)."""
    if not ENV2.is_file():
        pytest.skip(f"SRTM test data not found at {ENV2.resolve()}")
    params = small_parameter_file(mapper={"mapping": {"num_inducing": 40, "train_steps": 2}},
                                  planner={"max_entropy": {"num_candidates": 150}},
                                  mission={"mission": {"eval_grid": 50}})
    setup = MissionSetup.from_file(params)
    setup.terrain = TerrainConfig(path=str(ENV2), extent=setup.terrain.extent)
    setup.mission = setup.mission.replace(seed=SEED)
    setup.mission_control = setup.mission_control.replace(max_samples=BUDGET)
    folder = tmp_path_factory.mktemp("equivalence")
    complete = write_effective_file(setup, params, folder / "complete.yaml")
    summary, records, result = sim_then_mission(["--params", str(complete), "--compare"],
                                                folder / "out", setup)
    # what ran is what sim.launch.xml gives the nodes with the complete file alone
    assert differences(complete, folder / "out" / "logs" / "parameters.yaml") == []
    return summary, records, result


def test_the_graph_makes_the_missions_decisions(runs):
    summary, records, result = runs
    assert summary["outcome"] == "budget"
    assert [r["num_samples"] for r in records] == [r.num_samples for r in result.records]
    assert [r["sim_time"] for r in records] == pytest.approx(
        [r.sim_time for r in result.records], abs=1e-6)


def test_the_graph_ends_with_the_missions_smse_and_msll(runs):
    summary, records, result = runs
    final, averages = summary["final"], summary["epoch_averages"]
    # Measured: 0.6 % apart in SMSE, 5e-4 in MSLL.
    assert final["smse"] == pytest.approx(result.final.smse, rel=0.02)
    assert final["msll"] == pytest.approx(result.final.msll, abs=0.01)
    assert averages["smse"] == pytest.approx(result.averages()["smse"], rel=0.02)
    assert averages["msll"] == pytest.approx(result.averages()["msll"], abs=0.01)


def test_compare_reports_the_ros_free_mission(runs):
    summary, records, result = runs
    ros_free = summary["ros_free"]
    expected = asdict(result.final)
    assert {k: ros_free["final"][k] for k in METRICS} == {k: expected[k] for k in METRICS}
    assert ros_free["epochs"] == len(result.records)
    assert ros_free["same_epochs_from_start"] == len(result.records)
