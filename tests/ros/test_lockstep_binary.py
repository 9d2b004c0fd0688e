"""A lockstep ``poam-ros sim`` with depth and the seabed class (a binary channel, ``poam-mt``
with a Bernoulli channel, the joint acquisition with the class's Bernoulli entropy) makes the
ROS-free Mission's decisions epoch for epoch and scores the class as it does; the bag it
records re-maps to the live mapper's last map, the class's probability layer included
(small: the default survey, M = 20, a 565-sample pilot and legs to 800 samples).

As in tests/ros/test_lockstep_channels.py, the graph is not bit-identical to the ROS-free
loop (float32 ranges, poses interpolated at nanosecond stamps), so the decisions (the sample
count and sim time of every epoch) must be equal and the metrics close.
"""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import sim_then_mission  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.bags import BagReader, MessageTypes  # noqa: E402
from poam_ros.bags.remap import remap_bag  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402

SEED, BUDGET = 2, 800


@pytest.fixture(scope="module")
def runs(ros_domain_id, small_parameter_file, tmp_path_factory):
    """(the command's sim.json, its epoch records, its bag, the ROS-free result, the setup)."""
    params = small_parameter_file(
        simulated_auv={"seabed_class": {"enabled": True}},
        sensor_ingest={"channels": ["seabed_class"], "channel_rates": [0.5]},
        mapper={"mapping": {"method": "poam-mt", "channel_min_samples": 10,
                            "channel_likelihoods": ["gaussian", "bernoulli"]}},
        planner={"max_entropy": {"acquisition": "joint"}})
    out = tmp_path_factory.mktemp("binary")
    setup = MissionSetup.from_file(params)
    setup.mission = setup.mission.replace(seed=SEED)
    setup.mission_control = setup.mission_control.replace(max_samples=BUDGET)
    bag = out / "bag"
    summary, records, result = sim_then_mission(
        ["--params", str(params), "--seed", str(SEED), "--max-samples", str(BUDGET),
         "--record", str(bag)], out, setup)
    return summary, records, bag, result, setup


def test_the_graph_makes_the_missions_decisions(runs):
    summary, records, _, result, _ = runs
    assert summary["outcome"] == "budget"
    assert len(result.records) >= 3  # the pilot and at least two planned legs
    assert [r["num_samples"] for r in records] == [r.num_samples for r in result.records]
    assert [r["sim_time"] for r in records] == pytest.approx(
        [r.sim_time for r in result.records], abs=1e-6)


def test_the_class_is_scored_as_the_mission_scores_it(runs):
    _, records, _, result, _ = runs
    labels = result.samples_y[:, 1]
    assert set(labels[np.isfinite(labels)]) == {0.0, 1.0}
    for graph, mission in zip(records, result.records):
        for metric in ("nlpd", "msll", "smse"):
            key = f"{metric}_seabed_class"
            assert np.isfinite(mission.extra[key])
            assert graph["extra"][key] == pytest.approx(mission.extra[key], rel=0.02, abs=2e-3)


def test_the_recorded_bag_remaps_to_the_live_map(runs):
    _, _, bag, _, setup = runs
    result = remap_bag(bag, setup)
    assert result.comparison is not None, result.notes
    assert result.comparison.same_cells and result.comparison.mean_diff == 0.0
    types = MessageTypes()
    [*_, last] = BagReader(bag).messages(["/map"])
    live = msg.cloud_to_arrays(types.deserialize(last.data, last.msgtype))
    remapped = result.layers.channel_means[0].astype(np.float32).astype(float).ravel()
    np.testing.assert_array_equal(live["mean_seabed_class"], remapped)
    assert np.nanmin(remapped) >= 0.0 and np.nanmax(remapped) <= 1.0
