"""The nodes' main() as their console scripts run it: in a process, up, then Ctrl-C."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

import torch  # noqa: E402
from graph_helpers import Probe  # noqa: E402

from poam_ros.models import state_io  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_both_nodes_start_publish_and_stop_cleanly(ros_domain_id, make_node, spin_until):
    # The children inherit the module's domain and localhost-only discovery.
    commands = {"planner": ["poam_ros.ros.planner_node", "--ros-args",
                            "-p", "pilot.num_waypoints:=5"],
                "mapper": ["poam_ros.ros.mapper_node", "--ros-args",
                           "-p", "mapping.num_inducing:=20"]}
    # faulthandler: a child that hangs on SIGINT shows where, once sent SIGABRT.
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    processes = {name: subprocess.Popen([sys.executable, "-m", *command], cwd=ROOT, env=env,
                                        stderr=subprocess.PIPE, text=True)
                 for name, command in commands.items()}
    try:
        probe = Probe(make_node("process_probe"))
        up = spin_until(lambda: probe.plans and "mapper: mapping" in probe.diagnostics,
                        probe.node, timeout=60.0)
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGINT)
        codes = {}
        for name, process in processes.items():
            try:
                codes[name] = process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGABRT)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                codes[name] = "hung"
        errors = {name: process.stderr.read() for name, process in processes.items()}
    assert up, f"nodes not heard from within 60 s: {errors}"
    assert len(probe.plans[0].poses) == 5
    assert codes == {"planner": 0, "mapper": 0}, errors


def corrupt_state(path: Path) -> None:
    """A state file with one byte of its payload flipped."""
    state_io.write_state(path, "poam", {"values": torch.arange(64.0)})
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["empty", "corrupt"])
def test_a_mapper_that_cannot_load_its_state_file_says_one_line(ros_domain_id, tmp_path,
                                                               damage):
    path = tmp_path / f"{damage}.pt"
    if damage == "empty":
        path.write_bytes(b"")
    else:
        corrupt_state(path)
    process = subprocess.run(
        [sys.executable, "-m", "poam_ros.ros.mapper_node", "--ros-args",
         "-p", f"state_file:={path}", "-p", f"save_path:={tmp_path / 'saved.pt'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = process.stderr.strip().splitlines()
    assert process.returncode != 0
    assert "Traceback" not in process.stderr and len(lines) == 1, process.stderr
    assert str(path) in lines[0] and "cannot start" in lines[0]


@pytest.mark.parametrize("node, vertices, message", [
    ("mapper", "[]", "WorkspaceConfig.vertices needs at least 3"),
    ("planner", "[0.0, 0.0, 10.0, 10.0, 10.0, 0.0, 0.0, 10.0]",
     "WorkspaceConfig.vertices is degenerate"),
    ("sensor_ingest", "[0.0, 0.0, 5.0, 0.0, 10.0, 0.0]", "WorkspaceConfig.vertices is degenerate"),
], ids=["empty", "self-intersecting", "collinear"])
def test_a_node_refuses_an_empty_or_degenerate_workspace_in_one_line(ros_domain_id, tmp_path,
                                                                     node, vertices, message):
    """rcl reads ``[]`` as no value: the node must not start on the default square."""
    params = tmp_path / "params.yaml"
    params.write_text(f"{node}:\n  ros__parameters:\n    workspace:\n"
                      f"      vertices: {vertices}\n")
    module = {"sensor_ingest": "ingest_node"}.get(node, f"{node}_node")
    process = subprocess.run(
        [sys.executable, "-m", f"poam_ros.ros.{module}", "--ros-args", "--params-file",
         str(params)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = process.stderr.strip().splitlines()
    assert process.returncode != 0
    assert "Traceback" not in process.stderr and len(lines) == 1, process.stderr
    assert message in lines[0]


def test_a_terrain_s_filled_voids_are_a_warning_in_the_node_s_log(ros_domain_id, tmp_path):
    """The core says it through ``logging``; the node's ROS log carries it at WARN. The
    start pose is off the terrain, so that the node stops right after reading it."""
    grid = np.add.outer(np.linspace(0.0, 50.0, 30), np.linspace(0.0, 30.0, 30))
    grid[10:13, 20:24] = np.nan
    np.save(tmp_path / "voids.npy", grid)
    process = subprocess.run(
        [sys.executable, "-m", "poam_ros.ros.simulated_auv_node", "--ros-args",
         "-p", f"terrain.path:={tmp_path / 'voids.npy'}", "-p", "start_pose:=[5000.0, 0.0, 0.0]"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    [warning] = [line for line in process.stderr.splitlines() if "[WARN]" in line]
    assert "[simulated_auv]" in warning and "voids.npy: filled 12 of 900 cell(s)" in warning
