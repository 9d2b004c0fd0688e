"""The vehicle_bridge as a managed node, and a lost vehicle link pausing the planner: real
rclpy over DDS, the simulated autopilot over real UDP on loopback."""

from __future__ import annotations

import math
import socket
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from graph_helpers import call  # noqa: E402
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.geo import GeoReference  # noqa: E402
from poam_ros.planners.mission_control import LINK_LOST_REASON, PAUSED, PILOT  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.ros.vehicle_bridge_node import VehicleBridgeNode  # noqa: E402
from poam_ros.sim import SurveySimulator, VehicleConfig, default_terrain  # noqa: E402
from poam_ros.vehicle import SimulatedAutopilot  # noqa: E402
from poam_ros.vehicle.bridge import HOLDING, IDLE, LINK_LOST  # noqa: E402

DEPTH = 30.0
LINK_TIMEOUT = 2.0  # s, the bridge's
MARGIN = 3.0  # s: the bridge's tick, the diagnostics period, DDS on a shared machine
ANCHOR = {"geo.anchor": "latlon", "geo.origin_latitude": 47.0, "geo.origin_longitude": 8.0}
PLANNER = {"seed": 7, "workspace.vertices": [-30.0, -30.0, 30.0, -30.0, 30.0, 30.0, -30.0, 30.0],
           "pilot.num_waypoints": 4, "mission.max_samples": 0}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_free(port: int) -> bool:
    """Whether nothing holds the bridge's UDP port (its link is closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Vehicle:
    """A bridge node on a free port, the simulated autopilot sending to it, and a user node
    that keeps what comes; :meth:`spin` steps the autopilot on the wall clock as it spins."""

    def __init__(self, start_node, make_node, spin_until, **bridge):
        self.port = free_udp_port()
        self.node = start_node(VehicleBridgeNode, connection=f"udpin:127.0.0.1:{self.port}",
                               **ANCHOR, **bridge)
        simulator = SurveySimulator(default_terrain((-31.0, 31.0, -31.0, 31.0)),
                                    VehicleConfig(vertical_mode="depth", depth=DEPTH),
                                    start_pose=(20.0, -20.0, math.pi))
        self.autopilot = SimulatedAutopilot(simulator, GeoReference.local(47.0, 8.0),
                                            f"udpout:127.0.0.1:{self.port}")
        self.user = make_node("vehicle_user")
        self.odometry, self.states = [], []
        self.user.create_subscription(Odometry, "odom", self.odometry.append, 100)
        self.user.create_subscription(DiagnosticStatus, "vehicle/state", self.states.append,
                                      qos.LATCHED)
        self.nodes = [self.node, self.user]
        self._spin_until = spin_until

    def spin(self, condition, timeout: float) -> bool:
        def stepped() -> bool:
            self.autopilot.step(time.monotonic())
            return bool(condition())
        return self._spin_until(stepped, *self.nodes, timeout=timeout)

    def call(self, service_type, name: str, request):
        client = self.user.create_client(service_type, name)
        assert self.spin(client.service_is_ready, timeout=10.0), name
        future = client.call_async(request)
        assert self.spin(future.done, timeout=10.0), name
        return future.result()

    def transition(self, transition: int) -> bool:
        request = ChangeState.Request(transition=Transition(id=transition))
        return self.call(ChangeState, "/vehicle_bridge/change_state", request).success

    def start(self, name: str = "/vehicle_bridge/start"):
        return self.call(Trigger, name, Trigger.Request())

    def state(self) -> str | None:
        """The bridge's state as vehicle/state last said."""
        return self.states[-1].message if self.states else None

    def close(self) -> None:
        self.autopilot.link.close()


@pytest.fixture
def vehicle(start_node, make_node, spin_until):
    made = []

    def make(**bridge) -> Vehicle:
        made.append(Vehicle(start_node, make_node, spin_until, **bridge))
        return made[-1]

    yield make
    for item in made:
        item.close()


def test_transitions_keep_the_link_and_deactivate_holds(vehicle):
    car = vehicle(autostart=False)
    autopilot = car.autopilot
    assert port_free(car.port)  # unconfigured: no link
    assert car.transition(Transition.TRANSITION_CONFIGURE)
    assert not port_free(car.port)
    # Inactive: heartbeats both ways, the state reported, nothing published, no start.
    assert car.spin(lambda: autopilot.received["HEARTBEAT"] >= 2 and car.node.bridge.origin
                    and car.state() == IDLE, timeout=15.0)
    assert msg.status_record(car.states[-1]).lifecycle_state == "inactive"
    assert not car.odometry
    refused = car.start()
    assert not refused.success and "not active" in refused.message

    assert car.transition(Transition.TRANSITION_ACTIVATE)
    assert car.spin(lambda: car.odometry, timeout=10.0)
    autopilot.operator_mode("GUIDED")
    autopilot.operator_arm()
    assert car.start().success
    plans = car.user.create_publisher(Path, "plan", qos.LATCHED)
    plans.publish(cv.path_from_waypoints(
        Header(frame_id="map", stamp=car.user.get_clock().now().to_msg()),
        np.array([[-10.0, -20.0]]), z=-DEPTH))
    assert car.spin(lambda: autopilot.targets, timeout=10.0)
    assert math.hypot(autopilot.targets[-1][1] + 10.0, autopilot.targets[-1][2] + 20.0) < 0.05

    assert car.transition(Transition.TRANSITION_DEACTIVATE)  # a hold where the vehicle is
    bridge = car.node.bridge
    assert (bridge.state, bridge.reason) == (HOLDING, "deactivated: holding")
    held = len(autopilot.targets)
    assert car.spin(lambda: len(autopilot.targets) > held, timeout=5.0)
    x, y, _ = autopilot.simulator.pose
    assert math.hypot(autopilot.targets[-1][1] - x, autopilot.targets[-1][2] - y) < 1.0
    assert car.spin(lambda: car.state() == HOLDING, timeout=5.0)
    heard = autopilot.received["HEARTBEAT"]
    assert car.spin(lambda: autopilot.received["HEARTBEAT"] > heard, timeout=5.0)  # link kept

    assert car.transition(Transition.TRANSITION_ACTIVATE)  # still holding until a start
    car.spin(lambda: False, timeout=1.5)
    assert bridge.state == HOLDING
    assert all(math.hypot(target[1] + 10.0, target[2] + 20.0) > 1.0
               for target in autopilot.targets[held:])
    assert car.transition(Transition.TRANSITION_DEACTIVATE)
    assert car.transition(Transition.TRANSITION_CLEANUP)
    assert port_free(car.port) and car.node.bridge is None  # the link closed


def test_a_lost_link_pauses_the_planner_and_only_a_start_resumes(vehicle, start_node):
    car = vehicle(link_timeout=LINK_TIMEOUT)
    planner = start_node(PlannerNode, **PLANNER)
    car.nodes.append(planner)
    missions = []
    car.user.create_subscription(DiagnosticStatus, "mission/state", missions.append,
                                 qos.LATCHED)

    def mission() -> tuple[str, str]:
        record = msg.status_record(missions[-1]) if missions else None
        return (missions[-1].message, record.reason) if record else ("", "")

    assert car.spin(lambda: car.node.bridge.link_up(car.node._now())
                    and mission()[0] == PILOT, timeout=15.0)
    car.autopilot.silent = True  # the cable cut
    assert car.spin(lambda: mission()[0] == PAUSED, timeout=LINK_TIMEOUT + MARGIN), mission()
    last_heartbeat = car.node.bridge.autopilot.t  # s, the node's clock
    assert car.node._now() - last_heartbeat >= LINK_TIMEOUT  # not before the timeout
    assert mission() == (PAUSED, LINK_LOST_REASON) and car.state() == LINK_LOST
    refused = car.start("/planner/start")
    assert not refused.success and LINK_LOST_REASON in refused.message

    car.autopilot.silent = False  # heartbeats again: nothing resumes by itself
    assert car.spin(lambda: car.state() == IDLE, timeout=10.0)
    car.spin(lambda: False, timeout=1.5)
    assert mission()[0] == PAUSED and car.node.bridge.state == IDLE
    assert car.start("/planner/start").success
    assert car.spin(lambda: mission() == (PILOT, "resumed by start"), timeout=5.0)
    assert car.start().success  # and the bridge's own start


def test_configure_fails_without_an_anchor_until_one_is_set(start_node, make_node,
                                                            spin_until):
    port = free_udp_port()
    node = start_node(VehicleBridgeNode, autostart=False,
                      connection=f"udpin:127.0.0.1:{port}")
    supervisor = make_node("bridge_supervisor")
    change = supervisor.create_client(ChangeState, "/vehicle_bridge/change_state")

    def configure() -> bool:
        request = ChangeState.Request(transition=Transition(
            id=Transition.TRANSITION_CONFIGURE))
        return call(change, request, spin_until, node, supervisor).success

    assert not configure()
    assert node.lifecycle_state == "unconfigured" and port_free(port)  # alive, no link
    assert all(result.successful for result in node.set_parameters(
        [Parameter(name, value=value) for name, value in ANCHOR.items()]))
    assert configure() and node.lifecycle_state == "inactive" and not port_free(port)
