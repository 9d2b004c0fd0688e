"""The planner's mission control over real DDS: not started publishes nothing, start, pause
and resume, each budget ends the mission with its reason, abort from pilot and adaptive, and
return home flies the simulated AUV home."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from graph_helpers import Probe, call, overrides  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import MapperStatus, MissionStatus, decode  # noqa: E402
from poam_ros.planners import PilotSurveyConfig, pilot_survey  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.workspace import Workspace  # noqa: E402

SEED = 77
VERTICES = [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0]
SMALL = {"seed": SEED, "workspace.vertices": VERTICES, "pilot.num_waypoints": 6,
         "max_entropy.num_candidates": 40, "mission.max_samples": 0,
         "mission.max_time": 1e6, "diagnostics_period": 0.2}
SECOND = 1_000_000_000  # ns


def pilot():
    rng = np.random.default_rng(SEED)
    return pilot_survey(Workspace.from_vertices(VERTICES), rng,
                        PilotSurveyConfig(num_waypoints=6))


class Operator:
    """The probe of the planner's topics, its mission state and its four services."""

    def __init__(self, make_node, planner_name="planner"):
        self.probe = Probe(make_node("operator"))
        node = self.probe.node
        self.states: list[tuple[str, MissionStatus]] = []
        node.create_subscription(DiagnosticStatus, "mission/state", self._on_state,
                                 qos.LATCHED)
        self.clients = {name: node.create_client(kind, f"/{planner_name}/{name}")
                        for name, kind in (("start", Trigger), ("pause", SetBool),
                                           ("abort", Trigger), ("return_home", Trigger))}
        self.status_pub = node.create_publisher(DiagnosticArray, "/diagnostics",
                                                qos.DIAGNOSTICS)

    def _on_state(self, message):
        self.states.append((message.message, decode(
            MissionStatus, ((kv.key, kv.value) for kv in message.values))))

    @property
    def state(self) -> str | None:
        return self.states[-1][0] if self.states else None

    @property
    def reason(self) -> str:
        return self.states[-1][1].reason

    def request(self, name, spin_until, *nodes, data=None):
        request = SetBool.Request(data=data) if name == "pause" else Trigger.Request()
        return call(self.clients[name], request, spin_until, self.probe.node, *nodes)

    def send_map(self, stamp_ns, samples=None, std=1.0):
        """A 2 × 2 map of ``std`` everywhere and, with ``samples``, the mapper's count of it."""
        header = Header(frame_id="map", stamp=cv.nanoseconds_to_time(stamp_ns))
        grid = np.zeros((2, 2))
        self.probe.map_pub.publish(cv.map_to_cloud(header, grid, grid, grid, grid + std))
        if samples is not None:
            status = MapperStatus(
                samples=samples, inducing_points=10, method="poam", device="cpu", updates=1,
                paused=False, buffered_batches=0, buffered_samples=0, queries_answered=0,
                failures=0, last_failure="", map_predict_time=0.0, latency=0.0,
                queue_wait=0.0, node_overhead=0.0, median_latency=0.0, map_stamp=stamp_ns,
                journal="off", autosaves=0, autosave_time=0.0)
            self.status_pub.publish(DiagnosticArray(status=[cv.diagnostic_status(
                "mapper", DiagnosticStatus.OK, "", status)]))


@pytest.fixture
def mission(ros_context, make_node, spin_until):
    """``mission(**parameters)`` -> (planner, operator); the operator answers the planner's
    uncertainty queries with a std growing away from the origin."""
    nodes = []

    def start(**extra):
        planner = PlannerNode(context=ros_context,
                              parameter_overrides=overrides({**SMALL, **extra}))
        nodes.append(planner)
        operator = Operator(make_node)
        probe = operator.probe

        def answer(message):
            points = msg.cloud_to_query(message)
            probe.response_pub.publish(cv.response_to_cloud(
                message.header, points, 1.0 + np.hypot(points[:, 0], points[:, 1])))

        probe.node.create_subscription(PointCloud2, "uncertainty/query", answer, qos.QUERY)
        # The plan is latched one deep: a probe matched after the next plan never sees the
        # pilot, so a started mission is ready once the probe holds it.
        started = extra.get("autostart_mission", True)
        assert spin_until(lambda: operator.state and probe.odom_pub.get_subscription_count()
                          and probe.map_pub.get_subscription_count()
                          and all(c.service_is_ready() for c in operator.clients.values())
                          and (probe.plans or not started),
                          planner, probe.node)
        return planner, operator

    yield start
    for node in nodes:
        node.destroy_node()


def test_not_started_publishes_no_plan_then_start_flies_the_pilot(mission, spin_until):
    planner, operator = mission(autostart_mission=False)
    probe = operator.probe
    spin_until(lambda: False, planner, probe.node, timeout=1.0)
    assert probe.plans == [] and probe.goals == []
    assert (operator.state, operator.reason) == ("idle", "waiting for start")
    answer = operator.request("start", spin_until, planner)
    assert answer.success and answer.message == "pilot: started"
    assert spin_until(lambda: probe.plans and operator.state == "pilot", planner, probe.node)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[0]), pilot())
    again = operator.request("start", spin_until, planner)
    assert not again.success and again.message == "the mission is pilot, not idle"


def test_pause_empties_the_plan_and_resume_flies_the_rest(mission, spin_until):
    planner, operator = mission()
    probe, waypoints = operator.probe, pilot()
    probe.send_odom(waypoints[0], SECOND)
    probe.send_odom(waypoints[2], 2 * SECOND)
    assert spin_until(lambda: len(operator.states) and operator.states[-1][1].time_s_used,
                      planner, probe.node)
    assert operator.request("pause", spin_until, planner, data=True).success
    assert spin_until(lambda: len(probe.plans) == 2 and operator.state == "paused", planner,
                      probe.node)
    assert probe.plans[-1].poses == []
    assert operator.request("pause", spin_until, planner, data=False).success
    assert spin_until(lambda: len(probe.plans) == 3 and operator.state == "pilot", planner,
                      probe.node)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[-1]), waypoints[2:])
    assert operator.reason == "resumed by request"


@pytest.mark.parametrize("budget, feed, reason", [
    ({"mission.max_samples": 100},
     lambda op: op.send_map(5 * SECOND, samples=120),
     "samples budget spent: 120 of 100; holding"),
    ({"mission.max_time": 30.0},
     # steps within the odometry's stamp_jump_threshold (10 s)
     lambda op: [op.probe.send_odom((1.0, 1.0), t * SECOND) for t in (10, 18, 26, 34, 40)],
     "time_s budget spent: 30 of 30; holding"),
    ({"mission.max_distance": 10.0},
     lambda op: [op.probe.send_odom(xy, t * SECOND) for t, xy in ((1, (1.0, 1.0)),
                                                                  (2, (1.0, 13.0)))],
     "distance_m budget spent: 12 of 10; holding"),
    ({"mission.std_threshold": 0.5, "mission.std_statistic": "p95"},
     lambda op: op.send_map(5 * SECOND, std=0.25),
     "std_m budget spent: 0.25 below 0.5; holding"),
])
def test_each_budget_ends_the_mission_with_its_reason(mission, spin_until, budget, feed,
                                                      reason):
    planner, operator = mission(**budget)
    feed(operator)
    assert spin_until(lambda: operator.state == "done", planner, operator.probe.node)
    assert operator.reason == reason
    assert operator.probe.plans[-1].poses == []  # hold: the vehicle stops where it is
    status = operator.probe.last_status("planner: planning")[2]
    assert (status.mission_state, status.mission_reason) == ("done", reason)


def test_a_samples_budget_waits_for_the_mappers_count_of_the_map(mission, spin_until):
    planner, operator = mission(**{"mission.max_samples": 100})
    operator.send_map(5 * SECOND)  # the count comes later
    spin_until(lambda: False, planner, operator.probe.node, timeout=0.5)
    assert operator.state == "pilot"
    operator.send_map(5 * SECOND, samples=99)
    assert spin_until(lambda: operator.states[-1][1].samples_used == 99, planner,
                      operator.probe.node)
    assert operator.state == "pilot"


@pytest.mark.parametrize("adaptive", [False, True])
def test_abort_empties_the_plan_from_pilot_and_adaptive(mission, spin_until, adaptive):
    planner, operator = mission(mode="realtime")
    probe = operator.probe
    if adaptive:
        operator.send_map(SECOND)
        for k, point in enumerate(pilot()):
            probe.send_odom(point, (k + 2) * SECOND)
        # the pilot and at least one informative plan (a replan may follow)
        assert spin_until(lambda: operator.state == "adaptive" and len(probe.plans) >= 2,
                          planner, probe.node, timeout=30.0)
    answer = operator.request("abort", spin_until, planner)
    assert answer.success and answer.message == "aborted: aborted by request"
    assert spin_until(lambda: operator.state == "aborted" and probe.plans[-1].poses == [],
                      planner, probe.node)
    assert operator.request("abort", spin_until, planner).success  # again, from aborted


def test_the_plan_carries_the_vertical_setpoint(mission, spin_until):
    planner, operator = mission(vertical_mode="altitude", altitude=12.5)
    assert spin_until(lambda: operator.probe.plans, planner, operator.probe.node)
    pose = operator.probe.plans[-1].poses[0]
    assert (pose.pose.position.z, pose.header.frame_id) == (12.5, "map_altitude")
    assert operator.probe.plans[-1].header.frame_id == "map"
    planner.set_parameters(overrides({"vertical_mode": "depth", "depth": 40.0}))
    refused = operator.request("return_home", spin_until, planner)
    assert not refused.success and refused.message.startswith("home unknown")
    probe = operator.probe
    probe.send_odom((3.0, 4.0), SECOND)  # the first pose: home
    assert spin_until(lambda: "planner: planning" in probe.diagnostics and
                      probe.last_status("planner: planning")[2].position is not None,
                      planner, probe.node)
    assert operator.request("return_home", spin_until, planner).success
    assert spin_until(lambda: operator.state == "returning", planner, probe.node)
    home = operator.probe.plans[-1].poses[0]
    assert (home.pose.position.x, home.pose.position.y, home.pose.position.z) == \
        (3.0, 4.0, -40.0)
    assert home.header.frame_id == "map"


def test_return_home_flies_the_simulated_auv_home(mission, start_node, spin_until):
    home = [-15.0, -20.0]
    auv = start_node(SimulatedAuvNode, time_scale=50.0, seed=3, start_pose=[20.0, -25.0,
                                                                           math.pi],
                     mode="realtime")
    planner, operator = mission(mode="realtime", goal_radius=1.0, **{
        "mission.home": home, "workspace.vertices": [-30.0, -30.0, 30.0, -30.0, 30.0, 30.0,
                                                     -30.0, 30.0]})
    probe = operator.probe
    operator.send_map(SECOND)  # the map at hand (realtime)
    assert spin_until(lambda: probe.plans and operator.states[-1][1].distance_m_used > 0,
                      planner, probe.node, auv, timeout=30.0)
    assert operator.request("return_home", spin_until, planner, auv).success
    assert spin_until(lambda: operator.state == "done", planner, probe.node, auv,
                      timeout=60.0)
    assert operator.reason == "home reached"
    status = auv.auv.pose
    assert math.hypot(status[0] - home[0], status[1] - home[1]) <= 1.0 + 1e-9


def test_the_sim_monitor_ends_on_the_planners_done_once_its_count_is_scored(
        ros_context, make_node, spin_until):
    from poam_ros.planners.mission_control import MissionControlConfig, MissionController
    from poam_ros.ros.mission_monitor import MissionMonitor
    from poam_ros.sim.default_terrain import default_terrain

    monitor = MissionMonitor(default_terrain((-31, 31, -31, 31)), context=ros_context)
    planner = make_node("planner")
    publisher = planner.create_publisher(DiagnosticStatus, "mission/state", qos.LATCHED)
    control = MissionController(MissionControlConfig(max_samples=100))
    try:
        for state, samples in (("pilot", 0), ("done", 120)):
            if state == "pilot":
                control.start()
            else:
                control.observe_map(samples)
            publisher.publish(cv.diagnostic_status("planner", DiagnosticStatus.OK,
                                                   control.state, control.status()))
            assert spin_until(lambda: monitor.mission_state == state, monitor, planner)
            assert not monitor.finished  # running; then done, but no map of 120 scored yet
        assert monitor.mission.reason == "samples budget spent: 120 of 100; holding"
        control.abort()
        publisher.publish(cv.diagnostic_status("planner", DiagnosticStatus.OK,
                                               control.state, control.status()))
        assert spin_until(lambda: monitor.mission_state == "aborted", monitor, planner)
        assert not monitor.finished
        timed = MissionController(MissionControlConfig(max_samples=0, max_time=1.0))
        timed.start()
        timed.observe_pose(0.0, (0.0, 0.0, 0.0))
        timed.observe_pose(2.0, (1.0, 0.0, 0.0))
        publisher.publish(cv.diagnostic_status("planner", DiagnosticStatus.OK,
                                               timed.state, timed.status()))
        # no sample count to wait for: over when done
        assert spin_until(lambda: monitor.finished, monitor, planner)
    finally:
        monitor.destroy_node()
