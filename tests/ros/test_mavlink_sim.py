"""``poam-ros sim --vehicle mavlink`` end to end: the planner's plan → vehicle_bridge →
MAVLink over loopback UDP → the simulated autopilot → MAVLink → bridge → odometry → ingest →
mapper, each node its own process, on a small budget (the pilot survey and a goal); the
mission ends
with its samples mapped, the bridge counts the targets it sent and refuses nothing, and
the decisions are the direct (ROS-free) mission's."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)
pytest.importorskip("pymavlink")

from graph_helpers import RUN_LIMIT, poam_ros_sim  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from poam_ros.cli.sim import sim  # noqa: E402
from poam_ros.params import ConfigError  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402

BUDGET = 500  # samples: the pilot survey (484 soundings) and one goal
# Positions cross the link as 1e-7° integers, a centimetre of rounding. At seed 0 the first
# decision is a near tie that this flips: ±1 cm on the pilot's soundings in the ROS-free
# mission chose another goal in 5 of 16 draws (522 samples against 512). At seed 3 none of
# 30 draws of ±1–2 cm changed the goal, so the graph's decisions can be the direct mission's.
SEED = 3
ANCHOR = {"anchor": "latlon", "origin_latitude": 47.0, "origin_longitude": 8.0}
BRIDGE = "vehicle_bridge: vehicle link"


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def run(ros_domain_id, small_parameter_file, tmp_path_factory):
    """The command's printout and its sim.json."""
    params = small_parameter_file(mapper={"geo": ANCHOR})
    out = tmp_path_factory.mktemp("mavsim")
    process = poam_ros_sim(["--params", str(params), "--vehicle", "mavlink", "--mavlink-port",
                            str(free_udp_port()), "--max-samples", str(BUDGET), "--seed",
                            str(SEED), "--compare"], out)
    try:
        printed, errors = process.communicate(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, f"{printed}\n{errors}"
    return printed, json.loads((out / "sim.json").read_text())


def test_the_mission_flies_through_the_bridge(run):
    printed, summary = run
    assert summary["outcome"] == "budget" and "vehicle_bridge" in summary["exit_codes"]
    assert set(summary["exit_codes"].values()) == {0}
    samples = summary["final"]["num_samples"]
    assert samples >= BUDGET
    bridge = summary["diagnostics"][BRIDGE]
    assert int(bridge["sent.SET_POSITION_TARGET_GLOBAL_INT"]) > 0
    assert int(bridge["events.plans_accepted"]) >= 1
    assert not [key for key in bridge if key.startswith(("refused.", "dropped.", "bad_data."))]
    assert "vehicle:=mavlink" in printed  # the launch that the graph is


def test_the_samples_are_the_direct_missions(run):
    _, summary = run
    direct = summary["ros_free"]
    assert summary["epochs"] == direct["epochs"] >= 2
    # Legs end where the vehicle stops, within 1e-7° rounding of its waypoints; an odometry
    # message the bridge stamped twice (docs/vehicle.md) or lost on a loaded machine moves a
    # leg's end to the next pose at its waypoint, a sounding or so on per message.
    ingest = next(values for name, values in summary["diagnostics"].items()
                  if name.startswith("sensor_ingest"))
    faults = sum(int(ingest.get(key, 0)) for key in ("dropped.lost_in_transport",
                                                     "dropped.pose_duplicate"))
    assert abs(summary["final"]["num_samples"] - direct["final"]["num_samples"]) <= 4 + faults
    assert summary["final"]["smse"] == pytest.approx(direct["final"]["smse"], rel=0.05)


def test_no_anchor_is_one_clear_error(small_parameter_file, capsys):
    assert sim(["--params", str(small_parameter_file()), "--vehicle", "mavlink",
                "--out", "/nonexistent/never-written"]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "geodetic anchor" in error[0]


def test_the_endpoint_needs_the_anchor(ros_context):
    with pytest.raises(ConfigError, match="geodetic anchor"):
        SimulatedAuvNode(context=ros_context, parameter_overrides=[
            Parameter("mavlink.connection", value=f"udpout:127.0.0.1:{free_udp_port()}")])
