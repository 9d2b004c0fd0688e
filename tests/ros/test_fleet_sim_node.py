"""The fleet_sim node over real DDS: each vehicle publishes under its own namespace from its
own start, the lockstep clock holds while a vehicle that is not done waits for its plan, and
runs again once that vehicle's planner says its mission is done, or once its planner has gone
from its plan topic (the vehicle left the fleet); a planner back on the topic brings it back."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.planners.fleet_state import LEFT  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.fleet_sim_node import FleetSimNode  # noqa: E402

STARTS = [20.0, -20.0, 3.1, -20.0, 20.0, 0.0]  # /auv0, /auv1: x, y, yaw


def test_the_clock_holds_for_a_vehicle_without_a_plan_until_its_mission_is_done(
        start_node, make_node, spin_until):
    fleet = start_node(FleetSimNode, **{"fleet.vehicles": 2, "fleet.start_poses": STARTS,
                                        "time_scale": 50.0, "seed": 4,
                                        "hold_for": ["fleet_probe"]})
    probe = make_node("fleet_probe")
    odom: dict[str, list] = {"/auv0": [], "/auv1": []}
    clock: list[float] = []
    for namespace, store in odom.items():  # the clock holds until the probe hears all
        probe.create_subscription(Odometry, f"{namespace}/odom", store.append, qos.ODOMETRY)
        probe.create_subscription(Range, f"{namespace}/sonar/range", lambda m: None,
                                  qos.SENSORS)
    probe.create_subscription(Clock, "/clock", lambda m: clock.append(
        m.clock.sec + 1e-9 * m.clock.nanosec), qos.CLOCK)
    plan = probe.create_publisher(Path, "/auv0/plan", qos.LATCHED)
    state = probe.create_publisher(DiagnosticStatus, "/auv1/mission/state", qos.LATCHED)
    plan.publish(cv.path_from_waypoints(Header(frame_id="map"), np.array([[20.0, 10.0]])))
    assert spin_until(lambda: clock and not fleet.waiting_for and fleet.fleet.auvs[0].progress[1],
                      fleet, probe, timeout=20.0)  # every sensor heard, /auv0's plan taken
    # /auv1 has no plan and is not done: the clock stands at 0, nothing moves
    assert not spin_until(lambda: any(t > 0 for t in clock), fleet, probe, timeout=3.0)
    assert clock and not odom["/auv0"] and not odom["/auv1"]
    state.publish(DiagnosticStatus(message="done"))
    assert spin_until(lambda: len(odom["/auv0"]) > 20, fleet, probe, timeout=20.0)
    assert max(clock) > 0 and not odom["/auv1"]  # a done vehicle stays where it is, silent
    first = odom["/auv0"][0].pose.pose.position
    assert (first.x, first.y) == pytest.approx(STARTS[:2])
    assert fleet.fleet.auvs[1].pose == pytest.approx(STARTS[3:])
    # /auv0 at its plan's end waits for the next: the clock stands, and its arrival pose
    # comes again (stamp and all) for an ingest or a planner that lost it.
    assert spin_until(lambda: len(odom["/auv0"]) > 1 and odom["/auv0"][-1] == odom["/auv0"][-2],
                      fleet, probe, timeout=30.0)
    assert fleet.fleet.auvs[0].holding and not odom["/auv1"]


def test_a_vehicle_whose_planner_is_gone_stops_holding_the_clock_until_it_is_back(
        start_node, make_node, spin_until):
    fleet = start_node(FleetSimNode, **{"fleet.vehicles": 2, "fleet.start_poses": STARTS,
                                        "fleet.leave_timeout": 1.0, "time_scale": 20.0,
                                        "seed": 4, "hold_for": ["fleet_probe"]})
    probe = make_node("fleet_probe")
    clock: list[float] = []
    statuses: dict[str, DiagnosticStatus] = {}
    for namespace in ("/auv0", "/auv1"):  # the clock holds until the probe hears all
        probe.create_subscription(Odometry, f"{namespace}/odom", lambda m: None, qos.ODOMETRY)
        probe.create_subscription(Range, f"{namespace}/sonar/range", lambda m: None,
                                  qos.SENSORS)
    probe.create_subscription(Clock, "/clock", lambda m: clock.append(
        m.clock.sec + 1e-9 * m.clock.nanosec), qos.CLOCK)
    probe.create_subscription(DiagnosticArray, "/diagnostics", lambda m: statuses.update(
        {status.name: status for status in m.status}), qos.DIAGNOSTICS)
    header = Header(frame_id="map")
    plan0 = probe.create_publisher(Path, "/auv0/plan", qos.LATCHED)
    # /auv0 flies on for the whole test: back and forth, 800 m at 1 m/s
    plan0.publish(cv.path_from_waypoints(header, np.array([[-20.0, -20.0], [20.0, -20.0]] * 10)))
    plan1 = probe.create_publisher(Path, "/auv1/plan", qos.LATCHED)
    plan1.publish(cv.path_from_waypoints(header, np.array([[-20.0, 19.0]])))  # 1 m: over soon
    assert spin_until(lambda: fleet.fleet.waiting() == [1] and clock, fleet, probe,
                      timeout=30.0)  # /auv1 reached its goal and waits for its planner
    held = fleet.fleet.time
    assert not spin_until(lambda: max(clock) > held, fleet, probe, timeout=2.0)
    probe.destroy_publisher(plan1)  # its planner is gone: after leave_timeout, it left
    assert spin_until(lambda: max(clock) > held + 2.0, fleet, probe, timeout=30.0)
    assert fleet.fleet.left == [False, True] and fleet.fleet.waiting() == []
    name = "fleet_sim/auv1: vehicle"
    assert spin_until(lambda: name in statuses and statuses[name].message.startswith(LEFT),
                      fleet, probe, timeout=10.0)
    x, y, _ = fleet.fleet.auvs[1].pose  # it holds position on the fleet's clock
    assert fleet.fleet.auvs[1].time == fleet.fleet.time and np.hypot(x + 20.0, y - 19.0) < 1.5
    plan1 = probe.create_publisher(Path, "/auv1/plan", qos.LATCHED)  # its planner is back
    plan1.publish(cv.path_from_waypoints(header, np.array([[-20.0, 0.0]])))
    assert spin_until(lambda: not fleet.fleet.left[1] and fleet.fleet.auvs[1].pose[1] < y - 2.0,
                      fleet, probe, timeout=30.0)
    assert fleet.fleet.auvs[1].time == fleet.fleet.time
