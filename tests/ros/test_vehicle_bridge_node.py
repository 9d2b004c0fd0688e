"""The vehicle_bridge node over real DDS, against the simulated autopilot over real UDP."""

from __future__ import annotations

import math
import socket
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import FluidPressure, Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.attitude import GRAVITY  # noqa: E402
from poam_ros.geo import GeoReference  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.vehicle_bridge_node import VehicleBridgeNode  # noqa: E402
from poam_ros.sim import SurveySimulator, VehicleConfig, default_terrain  # noqa: E402
from poam_ros.vehicle import SimulatedAutopilot  # noqa: E402
from poam_ros.vehicle.link import mavlink  # noqa: E402

DEPTH = 30.0
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture
def vehicle(start_node, make_node):
    """(bridge node, simulated autopilot, a test node keeping what the bridge publishes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bridge = start_node(VehicleBridgeNode, connection=f"udpin:127.0.0.1:{port}",
                        **{"geo.anchor": "latlon", "geo.origin_latitude": 47.0,
                           "geo.origin_longitude": 8.0})
    simulator = SurveySimulator(default_terrain((-31.0, 31.0, -31.0, 31.0)),
                                VehicleConfig(vertical_mode="depth", depth=DEPTH),
                                start_pose=(20.0, -20.0, math.pi))
    autopilot = SimulatedAutopilot(simulator, GeoReference.local(47.0, 8.0),
                                   f"udpout:127.0.0.1:{port}")
    user = make_node("vehicle_user")
    user.kept = {"odom": [], "depth": [], "altimeter": [], "/diagnostics": []}
    for kind, topic in ((Odometry, "odom"), (FluidPressure, "depth"), (Range, "altimeter"),
                        (DiagnosticArray, "/diagnostics")):
        user.create_subscription(kind, topic, user.kept[topic].append, RELIABLE)
    yield bridge, autopilot, user
    autopilot.link.close()


def _call(spin_until, nodes, autopilot, service: str):
    client = nodes[1].create_client(Trigger, service)
    future = client.call_async(Trigger.Request())
    assert spin_until(lambda: _stepped(autopilot, future.done()), *nodes, timeout=10.0)
    return future.result()


def _stepped(autopilot, condition) -> bool:
    """Step the autopilot on the wall clock, then report ``condition`` (spin_until's test)."""
    autopilot.step(time.monotonic())
    return bool(condition() if callable(condition) else condition)


def test_state_out_plan_in_abort_and_never_an_arm_command(vehicle, spin_until):
    bridge, autopilot, user = vehicle
    nodes = (bridge, user)
    assert spin_until(lambda: _stepped(autopilot, lambda: user.kept["odom"] and
                                       bridge.bridge.origin is not None), *nodes, timeout=15.0)
    odometry = user.kept["odom"][-1]
    assert (odometry.header.frame_id, odometry.child_frame_id) == ("map", "base_link")
    x, y, yaw = autopilot.simulator.pose
    position = odometry.pose.pose.position
    assert math.hypot(position.x - x, position.y - y) < 0.012 and position.z == -DEPTH
    assert spin_until(lambda: _stepped(autopilot, lambda: user.kept["depth"] and
                                       user.kept["altimeter"]), *nodes, timeout=5.0)
    assert user.kept["depth"][-1].fluid_pressure == pytest.approx(DEPTH * 1025.0 * GRAVITY)
    elevation = float(autopilot.simulator.terrain.elevation([[x, y]])[0])
    assert user.kept["altimeter"][-1].range == pytest.approx(-DEPTH - elevation, abs=0.01)

    autopilot.operator_mode("GUIDED")
    autopilot.operator_arm()
    assert _call(spin_until, nodes, autopilot, "/vehicle_bridge/start").success
    plans = user.create_publisher(Path, "plan", LATCHED)
    stamp = user.get_clock().now().to_msg()
    plans.publish(cv.path_from_waypoints(Header(frame_id="map", stamp=stamp),
                                         np.array([[10.0, -20.0]]), z=-DEPTH))
    assert spin_until(lambda: _stepped(autopilot, lambda: autopilot.targets), *nodes,
                      timeout=10.0)
    _, target_x, target_y, alt = autopilot.targets[0]
    assert math.hypot(target_x - 10.0, target_y + 20.0) < 0.012 and alt == -DEPTH

    response = _call(spin_until, nodes, autopilot, "/vehicle_bridge/abort")
    assert response.success and "holding" in response.message
    aborted = len(autopilot.targets)
    assert spin_until(lambda: _stepped(autopilot, lambda: len(autopilot.targets) > aborted + 1),
                      *nodes, timeout=5.0)
    hold = autopilot.targets[-1]
    assert math.hypot(hold[1] - 10.0, hold[2] + 20.0) > 1.0  # where it was, not the goal
    assert mavlink.MAV_CMD_COMPONENT_ARM_DISARM not in {c for c, _ in autopilot.commands}
    assert mavlink.MAV_CMD_DO_SET_MODE not in {c for c, _ in autopilot.commands}

    def holding() -> bool:
        statuses = [msg.status_record(array.status[0]) for array in user.kept["/diagnostics"]]
        return any(status.state == "holding" and status.link_up for status in statuses)

    assert spin_until(lambda: _stepped(autopilot, holding), *nodes, timeout=5.0)
