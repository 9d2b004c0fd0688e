"""Helpers for the node tests: a probe node on the graph's topics, bounded service calls,
and ``poam-ros sim`` as a process."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry, Path
from rclpy.parameter import Parameter
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.processes import wait_or_kill
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN_LIMIT = 300.0  # s of wall time poam-ros sim may take on a loaded machine


def overrides(values: dict) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in values.items()]


class Probe:
    """A test node that records what the mapper and planner publish and can feed them."""

    def __init__(self, node):
        self.node = node
        self.maps, self.std_grids, self.inducing = [], [], []
        self.responses, self.plans, self.goals, self.queries = [], [], [], []
        self.diagnostics: dict[str, list] = {}
        sub = node.create_subscription
        # history on the reader's side: every map and plan kept, however slowly it is read
        sub(PointCloud2, "map", self.maps.append, qos.LATCHED_HISTORY)
        sub(OccupancyGrid, "map/std", self.std_grids.append, qos.LATCHED_HISTORY)
        sub(PointCloud2, "map/inducing", self.inducing.append, qos.LATCHED_HISTORY)
        sub(PointCloud2, "uncertainty/response", self.responses.append, qos.QUERY)
        sub(PointCloud2, "uncertainty/query", self.queries.append, qos.QUERY)
        sub(Path, "plan", self.plans.append, qos.LATCHED_HISTORY)
        sub(PoseStamped, "goal", self.goals.append, qos.LATCHED_HISTORY)
        sub(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.samples_pub = node.create_publisher(PointCloud2, "samples", qos.SAMPLES)
        self.query_pub = node.create_publisher(PointCloud2, "uncertainty/query", qos.QUERY)
        self.response_pub = node.create_publisher(PointCloud2, "uncertainty/response",
                                                  qos.QUERY)
        self.odom_pub = node.create_publisher(Odometry, "odom", qos.ODOMETRY)
        self.map_pub = node.create_publisher(PointCloud2, "map", qos.LATCHED)

    def _on_diagnostics(self, message):
        for status in message.status:
            self.diagnostics.setdefault(status.name, []).append(status)

    def last_status(self, name: str):
        """(level as int, message, its :mod:`poam_ros.diagnostics` record) of the newest
        status called ``name``."""
        status = self.diagnostics[name][-1]
        return status.level[0] if isinstance(status.level, bytes) else status.level, \
            status.message, msg.status_record(status)

    def send_samples(self, xy, z, frame="map", stamp_ns=0, datatype=PointField.FLOAT64):
        header = Header(frame_id=frame, stamp=cv.nanoseconds_to_time(stamp_ns))
        self.samples_pub.publish(cv.samples_to_cloud(header, xy, z, datatype=datatype))

    def send_query(self, xy, stamp_ns, frame="map"):
        header = Header(frame_id=frame, stamp=cv.nanoseconds_to_time(stamp_ns))
        self.query_pub.publish(cv.query_to_cloud(header, xy))

    def response_to(self, stamp_ns):
        for message in self.responses:
            if msg.time_to_nanoseconds(message.header.stamp) == stamp_ns:
                return msg.cloud_to_response(message)
        return None

    def send_odom(self, xy, stamp_ns, frame="map"):
        header = Header(frame_id=frame, stamp=cv.nanoseconds_to_time(stamp_ns))
        self.odom_pub.publish(cv.odometry_from_state(header, "base_link", xy, 0.0))

    def send_map(self, stamp_ns):
        """A one-cell map: the planner only needs to know that (and when) one came."""
        header = Header(frame_id="map", stamp=cv.nanoseconds_to_time(stamp_ns))
        one = np.zeros((1, 1))
        self.map_pub.publish(cv.map_to_cloud(header, one, one, one, one + 1.0))


def call(client, request, spin_until, *nodes, timeout=10.0):
    """Call a service and spin until the answer comes; returns it (fails on timeout)."""
    assert client.wait_for_service(timeout_sec=timeout), f"{client.srv_name} not available"
    future = client.call_async(request)
    assert spin_until(future.done, *nodes, timeout=timeout), f"no answer from {client.srv_name}"
    return future.result()


def poam_ros_sim(args, out: pathlib.Path) -> subprocess.Popen:
    """``python3 -m poam_ros sim`` of this source tree, in this module's ROS domain."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "poam_ros", "sim", *args, "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(process: subprocess.Popen, executor, deadline: float) -> tuple[int, str, str]:
    """Spin ``executor`` until the command exits (SIGINT, then kill, past ``deadline``)."""
    while process.poll() is None and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        wait_or_kill(process, 30)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


def sim_then_mission(args, out: pathlib.Path, setup):
    """Run ``poam-ros sim`` with ``args`` into ``out`` (it must succeed), then the ROS-free
    :class:`~poam_ros.mission.Mission` of ``setup`` on the mapper's torch threads: (the
    command's sim.json, its epoch records, the mission's result)."""
    import json

    import torch

    from poam_ros.mission import Mission

    process = poam_ros_sim(args, out)
    try:
        printed, errors = process.communicate(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, f"{printed}\n{errors}"
    summary = json.loads((out / "sim.json").read_text())
    records = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    threads = torch.get_num_threads()
    torch.set_num_threads(setup.mapper_node.torch_threads)  # as the mapper runs
    try:
        result = Mission(setup).run()
    finally:
        torch.set_num_threads(threads)
    return summary, records, result
