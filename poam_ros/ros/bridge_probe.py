"""The ROS and MAVLink sides of ``poam-ros bench bridge``
(:mod:`poam_ros.benchmark.bridge_latency`): a test node that publishes plans and receives
odometry, and the simulated autopilot on a thread of its own that wakes the moment a message
arrives. Needs rclpy; imported when the benchmark runs.
"""

from __future__ import annotations

import math
import select
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry, Path
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from poam_ros import messages as msg
from poam_ros.geo import GeoReference
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.sim import SurveySimulator, VehicleConfig, default_terrain
from poam_ros.vehicle import SimulatedAutopilot

DEPTH = 30.0  # m, the vehicle's
START = (20.0, -20.0, math.pi)  # x, y (m), yaw (rad) in the map


class AutopilotThread:
    """The simulated autopilot on ``port``, stepped on ``time.perf_counter`` as soon as a
    message arrives or telemetry is due; ``sent`` lists each GLOBAL_POSITION_INT as
    (boot s, perf s) and ``autopilot.targets`` each target with its arrival (perf s)."""

    def __init__(self, anchor: GeoReference, port: int, rate: float) -> None:
        simulator = SurveySimulator(default_terrain((-31.0, 31.0, -31.0, 31.0)),
                                    VehicleConfig(vertical_mode="depth", depth=DEPTH),
                                    start_pose=START)
        self.autopilot = SimulatedAutopilot(simulator, anchor, f"udpout:127.0.0.1:{port}",
                                            telemetry_rate=rate)
        self.sent: list[tuple[float, float]] = []
        send = self.autopilot.link.send

        def recorded(message) -> None:
            if message.get_type() == "GLOBAL_POSITION_INT":
                self.sent.append((message.time_boot_ms / 1000.0, time.perf_counter()))
            send(message)

        self.autopilot.link.send = recorded
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="autopilot", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        link, period = self.autopilot.link, self.autopilot.telemetry_period
        while not self._done.is_set():
            self.autopilot.step(time.perf_counter())
            select.select([link.fileno()], [], [], period / 10.0)

    def close(self) -> None:
        self._done.set()
        self._thread.join(5.0)
        self.autopilot.link.close()


class BridgeProbe:
    """A node in ``context`` that publishes plans to the bridge, calls its start and keeps
    each odometry's stamp (s) with its arrival (perf s) and each clock offset the bridge
    reports on ``vehicle/state`` (perf s, offset s); spun on a thread of its own."""

    def __init__(self, context) -> None:
        self.node = Node("bridge_bench", context=context)
        self.odometry: list[tuple[float, float]] = []
        self.offsets: list[tuple[float, float]] = []
        self.node.create_subscription(Odometry, "odom", self._on_odometry, qos.SENSORS)
        self.node.create_subscription(DiagnosticStatus, "vehicle/state", self._on_state,
                                      qos.LATCHED)
        self._plans = self.node.create_publisher(Path, "plan", qos.LATCHED)
        self._start = self.node.create_client(Trigger, "/vehicle_bridge/start")
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="bench_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._done.is_set():
            self._executor.spin_once(timeout_sec=0.05)

    def _on_odometry(self, odometry: Odometry) -> None:
        self.odometry.append((msg.time_to_seconds(odometry.header.stamp), time.perf_counter()))

    def _on_state(self, status: DiagnosticStatus) -> None:
        offset = msg.status_record(status).clock_offset
        if offset is not None:
            self.offsets.append((time.perf_counter(), offset))

    def start(self, timeout: float) -> str:
        """Wait for the bridge's plan subscription, then call its ~/start until it succeeds
        (it waits for the link and the origin); returns its last answer."""
        deadline, answer = time.monotonic() + timeout, "no answer"
        while time.monotonic() < deadline and not self._plans.get_subscription_count():
            time.sleep(0.1)  # a plan is measured from a publisher the bridge has matched
        while time.monotonic() < deadline:
            if self._start.wait_for_service(timeout_sec=1.0):
                future = self._start.call_async(Trigger.Request())
                end = time.monotonic() + 5.0
                while not future.done() and time.monotonic() < end:
                    time.sleep(0.01)
                if future.done():
                    answer = future.result().message
                    if future.result().success:
                        return answer
            time.sleep(0.5)
        return answer

    def publish_plan(self, goal) -> float:
        """A one-pose plan to ``goal`` (x, y) at the vehicle's depth; returns when (perf s)."""
        stamp = self.node.get_clock().now().to_msg()
        path = cv.path_from_waypoints(Header(frame_id="map", stamp=stamp),
                                      np.array([goal], dtype=float), z=-DEPTH)
        sent = time.perf_counter()
        self._plans.publish(path)
        return sent

    def close(self) -> None:
        self._done.set()
        self._thread.join(5.0)
        self._executor.shutdown()
        self.node.destroy_node()
