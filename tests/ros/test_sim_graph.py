"""``poam-ros sim`` over real DDS, as a user sees it: the command runs the whole graph (one
process per node) on the embedded map in accelerated lockstep to a small sample budget,
while an independent subscriber in this process checks what the graph publishes: samples
placed on the terrain, maps with their declared fields whose uncertainty falls where the
vehicle went, goals in the workspace, diagnostics that count; then the command's own
summary, records and figure. A node that dies ends the command with a clear error.
"""

from __future__ import annotations

import json
import os
import pathlib
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import ROOT, RUN_LIMIT, Probe, finish, poam_ros_sim  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.bags import BagReader, MessageTypes  # noqa: E402
from poam_ros.diagnostics import LOST_IN_TRANSPORT  # noqa: E402
from poam_ros.ingest.reasons import LATE, OUTSIDE_WORKSPACE  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402
from poam_ros.setup.sim_launch import sim_nodes  # noqa: E402
from poam_ros.setup.terrain import terrain_from_config  # noqa: E402
from poam_ros.view import topics  # noqa: E402
from poam_ros.workspace import Workspace  # noqa: E402
from tests.core.view.foxglove_client import grid_values  # noqa: E402

BUDGET = 650  # samples: the pilot survey (484) and a few goals
SEED = 5
NODES = ("sensor_ingest", "mapper", "planner", "simulated_auv")


@pytest.fixture(scope="module")
def mission(ros_context, tmp_path_factory, small_parameter_file, live_view):
    """The command's run, what an independent probe heard meanwhile, and the setup."""
    from rclpy.node import Node

    folder = tmp_path_factory.mktemp("sim")
    params = small_parameter_file()
    setup = MissionSetup.from_file(params)
    node = Node("user_probe", context=ros_context)
    probe = Probe(node)
    samples: list[PointCloud2] = []
    node.create_subscription(PointCloud2, "samples", samples.append, qos.SAMPLES)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    try:
        # The file's time scale (20): as fast as possible would lose readings on a busy
        # machine (the ingest reports them), which is not what this test is about.
        process = poam_ros_sim(["--params", str(params), "--max-samples", str(BUDGET),
                                "--seed", str(SEED), "--record", str(folder / "bag"),
                                "--view", "--view-port", str(live_view[1])], folder / "out")
        code, out, err = finish(process, executor, time.monotonic() + RUN_LIMIT)
        # What is still in flight (the last diagnostics) arrives within a moment.
        settle = time.monotonic() + 1.0
        while time.monotonic() < settle:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
    assert code == 0, f"poam-ros sim exited with {code}:\n{out}\n{err}"
    return setup, folder / "out", probe, samples, out, params, folder / "bag"


def test_the_command_reports_every_epoch_and_writes_its_records(mission):
    setup, out, probe, samples, printed, _, _ = mission
    summary = json.loads((out / "sim.json").read_text())
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert summary["outcome"] == "budget" and summary["final"] == epochs[-1]
    assert epochs[-1]["num_samples"] >= BUDGET > epochs[-2]["num_samples"]
    assert [e["epoch"] for e in epochs] == list(range(len(epochs)))
    assert all(np.isfinite([e["smse"], e["msll"], e["update_time"]]).all() for e in epochs)
    unclean = {name: code for name, code in summary["exit_codes"].items() if code != 0}
    assert summary["exit_codes"].keys() == {*NODES, "recorder", "viewer"} and not unclean, \
        "\n".join(
        f"{name} ({code}):\n{(out / 'logs' / f'{name}.log').read_text()[-2000:]}"
        for name, code in unclean.items())
    assert (out / "sim.png").stat().st_size > 0
    assert (out / "logs" / "mapper.log").is_file()
    assert f"{summary['final']['smse']:.4f}" in printed  # the final summary was printed
    # One line per epoch, with its sample count.
    for epoch in epochs:
        assert f"{epoch['epoch']:>5} {epoch['num_samples']:>7}" in printed


def test_the_nodes_are_sim_launch_xmls_with_its_command_lines(mission):
    """poam-ros sim started exactly what ``ros2 launch poam_ros sim.launch.xml
    params_file:=<logs/parameters.yaml> record:=true view:=true`` starts, as launch_ros starts
    it."""
    setup, out, probe, samples, printed, params, _ = mission
    logs = out / "logs"
    effective = logs / "parameters.yaml"
    assert (f"ros2 launch poam_ros sim.launch.xml params_file:={effective} record:=true "
            f"view:=true" in printed)
    nodes = sim_nodes(effective, record=True, view=True)
    assert sorted(node.name for node in nodes) == sorted({*NODES, "recorder", "viewer"})
    for node in nodes:
        command = [sys.executable, "-m", node.module, *node.arguments, "--ros-args",
                   *node.ros_arguments(logs / "launch")]
        first = (logs / f"{node.name}.log").read_text().splitlines()[0]
        assert first == shlex.join(command)
    # The file's seeds are of seed 0; --seed and --max-samples changed the mission.
    assert "mapper: mapping.seed" in printed


def test_samples_lie_on_the_terrain_inside_the_workspace(mission):
    setup, out, probe, samples, printed, _, _ = mission
    terrain = terrain_from_config(setup.terrain)
    workspace = Workspace.from_config(setup.workspace)
    assert len(samples) >= 2
    for cloud in samples:
        assert cloud.header.frame_id == "map"
        xy, z = msg.cloud_to_samples(cloud)
        assert np.isfinite(xy).all() and np.isfinite(z).all()
        assert workspace.contains(xy).all()
        # Elevation = the terrain plus the sonar's noise (1.0 m here): within 5 sigma.
        assert np.abs(z - terrain.elevation(xy)).max() < 5 * setup.sonar.noise_std


def test_maps_carry_their_fields_and_grow_certain_where_the_vehicle_went(mission):
    setup, out, probe, samples, printed, _, _ = mission
    maps = probe.maps
    assert len({msg.time_to_nanoseconds(m.header.stamp) for m in maps}) >= 2
    for cloud in maps:
        assert cloud.header.frame_id == "map" and cloud.height > 1 and cloud.width > 1
        assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean", "std", "lengthscale"]
    first, last = msg.cloud_to_arrays(maps[0]), msg.cloud_to_arrays(maps[-1])
    cells = np.column_stack([last["x"], last["y"]])
    inside = np.isfinite(last["std"])
    assert inside.any() and (last["std"][inside] > 0).all()
    assert (last["lengthscale"][inside] > 0).all()

    def distance_to(points):
        return np.min(np.linalg.norm(cells[:, None, :] - points[None, :, :], axis=2), axis=1)

    stamp = msg.time_to_nanoseconds(maps[0].header.stamp)
    pilot = np.vstack([msg.cloud_to_samples(c)[0] for c in samples
                       if msg.time_to_nanoseconds(c.header.stamp) <= stamp])
    later = np.vstack([msg.cloud_to_samples(c)[0] for c in samples
                       if msg.time_to_nanoseconds(c.header.stamp) > stamp])
    near_path, far = distance_to(np.vstack([pilot, later])) < 1.5, distance_to(
        np.vstack([pilot, later])) > 6.0
    assert (near_path & inside).any() and (far & inside).any()
    # In the final map the std is lower along the path than far from it ...
    assert np.median(last["std"][near_path & inside]) < np.median(last["std"][far & inside])
    # ... and where the vehicle went after the pilot survey it fell more than elsewhere.
    visited = (distance_to(later) < 1.5) & (distance_to(pilot) > 4.0) & inside
    assert visited.any()
    ratio = last["std"] / first["std"]
    assert np.median(ratio[visited]) < np.median(ratio[far & inside])


def test_goals_lie_in_the_workspace(mission):
    setup, out, probe, samples, printed, _, _ = mission
    workspace = Workspace.from_config(setup.workspace)
    epochs = json.loads((out / "sim.json").read_text())["epochs"]
    assert len(probe.goals) >= epochs - 1  # a goal per epoch after the pilot survey
    for goal in probe.goals:
        assert goal.header.frame_id == "map"
        assert workspace.contains(np.array([[goal.pose.position.x, goal.pose.position.y]]))[0]


def test_diagnostics_count_samples_inducing_points_and_rejections(mission):
    setup, out, probe, samples, printed, _, _ = mission
    summary = json.loads((out / "sim.json").read_text())
    final = summary["final"]
    # The mapper's status of the final map: its sample count is what the ingest published
    # up to that map, and the inducing points are within M.
    statuses = [msg.status_record(s) for name, found in probe.diagnostics.items()
                if name.endswith(": mapping") for s in found]
    stamps = {status.map_stamp: status for status in statuses}
    last = max(stamp for stamp in stamps if stamps[stamp].samples == final["num_samples"])
    published = sum(len(msg.cloud_to_samples(c)[1]) for c in samples
                    if msg.time_to_nanoseconds(c.header.stamp) <= last)
    assert stamps[last].samples == published == final["num_samples"]
    assert 0 < stamps[last].inducing_points <= setup.mapping.num_inducing
    assert not stamps[last].rejected  # none rejected
    _, _, ingest = probe.last_status("sensor_ingest: samples")
    assert {OUTSIDE_WORKSPACE, LATE, LOST_IN_TRANSPORT} <= set(ingest.dropped)
    assert [reason for reason, count in ingest.dropped.items()
            if reason != OUTSIDE_WORKSPACE and count] == []
    _, _, planner = probe.last_status("planner: planning")
    assert planner.goals_issued >= summary["epochs"] - 1
    # The command's summary holds the same diagnostics.
    assert summary["diagnostics"]["mapper: mapping"]["inducing_points"]


def test_the_recorded_bag_holds_the_whole_mission_and_remaps_to_its_maps(mission, tmp_path):
    """``--record``: every pose and sounding from the vehicle's first, every batch the probe
    heard, and maps that ``poam-ros remap`` of the bag reproduces from the raw sensors."""
    setup, out, probe, samples, printed, params, bag = mission
    counts = json.loads((out / "sim.json").read_text())["bag"]["messages"]
    assert {"/odom", "/sonar/range", "/samples", "/map", "/plan", "/goal", "/clock",
            "/diagnostics"} <= set(counts)
    assert counts["/samples"] == len(samples)
    reader, types = BagReader(bag), MessageTypes()
    stamps: dict[str, list[float]] = {"/odom": [], "/sonar/range": []}
    for message in reader.messages(stamps):
        header = types.deserialize(message.data, message.msgtype).header
        stamps[message.topic].append(header.stamp.sec + header.stamp.nanosec * 1e-9)
    rates = {"/odom": setup.vehicle.control_rate, "/sonar/range": setup.sonar.rate}
    for topic, rate in rates.items():
        period = 1.0 / rate
        times = np.sort(stamps[topic])
        assert times[0] < period and np.allclose(np.diff(times), period, atol=1e-6), topic
    remap = subprocess.run([sys.executable, "-m", "poam_ros", "remap", str(bag), "--seed",
                            str(SEED), "--params", str(params), "--out", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=RUN_LIMIT)
    assert remap.returncode == 0, remap.stderr
    # The live mapper's thread count (the file's torch_threads, 1): with torch's default of
    # two, the maps differed under load.
    assert "1 torch thread(s)" in remap.stdout.splitlines()[0]
    assert "is equal to the live map (max |Δmean| 0, max |Δstd| 0" in remap.stdout, remap.stdout
    # The graph runs on while it stops, so the bag may hold maps after the scored final one;
    # the remap's update at the final map's data time scores as the live map did.
    final = json.loads((out / "sim.json").read_text())["final"]
    updates = [json.loads(line) for line in (tmp_path / "epochs.jsonl").read_text().splitlines()]
    at_final = [u for u in updates if u["sim_time"] <= final["sim_time"]][-1]
    assert at_final["num_samples"] == final["num_samples"]
    assert f"{at_final['smse']:.4f} {at_final['msll']:.3f}" == \
        f"{final['smse']:.4f} {final['msll']:.3f}"


def child_process(parent: int, name: bytes, timeout: float) -> int | None:
    """The pid of a child of ``parent`` whose command line holds ``name``, within ``timeout``
    s (None if none appears)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for status in pathlib.Path("/proc").glob("[0-9]*/status"):
            try:
                ppid = next(int(line.split()[1]) for line in status.read_text().splitlines()
                            if line.startswith("PPid:"))
                cmdline = (status.parent / "cmdline").read_bytes()
            except (OSError, StopIteration, ValueError):
                continue
            if ppid == parent and name in cmdline:
                return int(status.parent.name)
        time.sleep(0.2)
    return None


def test_a_node_that_dies_ends_the_command_with_its_error(ros_domain_id, small_parameter_file,
                                                          tmp_path):
    """A mapper killed mid-mission (a fault only the node meets, after the command's own
    checks) ends the command: it says so, exits 1, and leaves no node behind."""
    process = poam_ros_sim(["--params", str(small_parameter_file()), "--max-samples",
                            "100000"], tmp_path)
    try:
        mapper = child_process(process.pid, b"mapper", timeout=60.0)
        assert mapper is not None, "no mapper process started"
        time.sleep(2.0)
        os.kill(mapper, signal.SIGKILL)
        out, err = process.communicate(timeout=RUN_LIMIT)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, (out, err)
    assert "mapper exited with status -9" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_stops_every_node_and_keeps_what_was_scored(ros_domain_id, signum,
                                                                  small_parameter_file,
                                                                  tmp_path):
    """Ctrl-C (or a SIGTERM from a supervisor) once a map was scored: every node exits
    cleanly, the command exits 130 and keeps its records."""
    process = poam_ros_sim(["--params", str(small_parameter_file()), "--max-samples",
                            "100000"], tmp_path)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout],
                              daemon=True)
    reader.start()
    printed = []
    try:
        deadline = time.monotonic() + RUN_LIMIT
        # Ctrl-C once the command has printed its first epoch, i.e. scored a map.
        while not any(line.startswith("    0 ") for line in printed):
            assert time.monotonic() < deadline and process.poll() is None, printed
            try:
                printed.append(lines.get(timeout=1.0))
            except queue.Empty:
                pass
        process.send_signal(signum)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    reader.join(timeout=10)
    err = process.stderr.read()
    assert process.returncode == 130, (printed, err)
    summary = json.loads((tmp_path / "sim.json").read_text())
    assert summary["outcome"] == "interrupted" and summary["epochs"] >= 1
    assert summary["exit_codes"] == dict.fromkeys(NODES, 0)


def test_the_live_view_showed_the_mission_as_the_mapper_published_it(mission, live_view):
    """A Foxglove client of ``--view`` saw the advertised channels with their schemas, the
    last map as the mapper published it (mean and std to float32), the vehicle, the plan
    and the mission's state."""
    _, _, probe, _, _, _, _ = mission
    client, _ = live_view
    advertised = {channel["topic"]: channel for channel in client.channels.values()}
    assert advertised[topics.MEAN]["schemaName"] == "foxglove.Grid"
    assert advertised[topics.POSE]["schemaName"] == "foxglove.PoseInFrame"
    assert not client.errors
    published = msg.cloud_to_arrays(probe.maps[-1])
    shape = (probe.maps[-1].height, probe.maps[-1].width)
    for topic, field in ((topics.MEAN, "mean"), (topics.STD, "std")):
        np.testing.assert_array_equal(grid_values(client.received[topic][-1]),
                                      published[field].reshape(shape).astype(np.float32))
    assert client.received[topics.POSE] and client.received[topics.SCENE]
    plans = [entity for update in client.received[topics.SCENE] for entity in update.entities
             if entity.id == "plan"]
    assert plans and plans[-1].lines[0].points
    states = [status.get("state") for status in client.received[topics.STATUS]]
    assert "pilot" in states and states[-1] == "done"
    last = client.received[topics.STATUS][-1]
    assert last["samples"] >= BUDGET and np.isfinite(last["smse"])  # the monitor's scores
    assert last["mission"]["samples_limit"] == str(BUDGET)  # mission/state's budgets
