"""The simulated_auv node over real DDS: lockstep reproduces follow() and holds the clock,
realtime runs it, bad plans are refused while the node runs on, multibeam swaths."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import PointCloud2, Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.ros.vehicle_topics import missing_nodes  # noqa: E402
from poam_ros.sim.default_terrain import default_terrain  # noqa: E402
from poam_ros.sim.simulator import SurveySimulator  # noqa: E402

START = [30.0, -30.0, math.pi]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class Recorder:
    """A test node that sends plans and keeps what the vehicle publishes."""

    def __init__(self, make_node, name="recorder"):
        self.node = make_node(name)
        self.plans = self.node.create_publisher(Path, "plan", LATCHED)
        self.odom, self.ranges, self.clock, self.swaths, self.diagnostics = [], [], [], [], []
        for kind, topic, store in ((Odometry, "odom", self.odom), (Range, "sonar/range",
                                   self.ranges), (Clock, "/clock", self.clock),
                                   (PointCloud2, "sonar/swath", self.swaths),
                                   (DiagnosticArray, "/diagnostics", self.diagnostics)):
            self.node.create_subscription(kind, topic, store.append, RELIABLE)

    def send(self, waypoints, frame_id="map"):
        self.plans.publish(cv.path_from_waypoints(Header(frame_id=frame_id),
                                                  np.asarray(waypoints, dtype=float)))

    def diagnostic(self):
        """The newest simulator status, a :class:`~poam_ros.diagnostics.SimulatorStatus`."""
        return msg.status_record(self.diagnostics[-1].status[0])


@pytest.fixture
def auv(start_node):
    """``auv(**parameters)`` -> a SimulatedAuvNode (time_scale 25, seed 11, the paper's
    start, its clock held for the test's ``Recorder`` unless overridden), destroyed after the
    test."""
    return lambda **parameters: start_node(SimulatedAuvNode, **{
        "time_scale": 25.0, "seed": 11, "start_pose": START, "hold_for": ["recorder"],
        **parameters})


def test_lockstep_publishes_what_follow_makes_then_holds_the_clock(auv, make_node, spin_until):
    node = auv()
    recorder = Recorder(make_node)
    plans = [[[12.0, -29.0]], [[12.0, -20.0], [15.0, -20.0]]]
    reference = SurveySimulator(default_terrain((-31, 31, -31, 31)), seed=11,
                                start_pose=START)
    logs = [reference.follow(plan) for plan in plans]
    poses = np.vstack([logs[0].poses, logs[1].poses[1:]])
    ranges = np.concatenate([log.ranges for log in logs])
    times = np.concatenate([log.times for log in logs])
    # follow() repeats the start pose at the head of each log; the node sends it once.
    odom_counts = np.cumsum([len(log.poses) - (i > 0) for i, log in enumerate(logs)])
    range_counts = np.cumsum([len(log) for log in logs])
    for plan, n_odom, n_ranges in zip(plans, odom_counts, range_counts):
        recorder.send(plan)  # the next plan only once this one is done
        assert spin_until(lambda: len(_new_stamps(recorder.odom)) == n_odom
                          and len(recorder.ranges) == n_ranges, node, recorder.node,
                          timeout=20.0)
    # The clock stands still; the held vehicle repeats its arrival pose, stamp and all.
    assert spin_until(lambda: len(recorder.odom) > len(_new_stamps(recorder.odom)), node,
                      recorder.node, timeout=10.0)
    assert recorder.odom[-1] == _new_stamps(recorder.odom)[-1]
    sent = np.array([msg.odometry_to_pose(m) for m in _new_stamps(recorder.odom)])
    np.testing.assert_array_equal(sent[:, [1, 2]], poses[:, :2])
    np.testing.assert_allclose(sent[:, 4], poses[:, 2], atol=1e-12)
    assert set(sent[:, 3]) == {300.0}
    assert all(m.header.frame_id == "map" and m.child_frame_id == "base_link"
               for m in recorder.odom)
    assert len(recorder.ranges) == len(ranges)
    np.testing.assert_array_equal([m.range for m in recorder.ranges], ranges.astype(np.float32))
    np.testing.assert_allclose([msg.time_to_seconds(m.header.stamp) for m in recorder.ranges],
                               times, atol=1e-9)
    assert {m.header.frame_id for m in recorder.ranges} == {"sonar_link"}
    clock = [msg.time_to_seconds(m.clock) for m in recorder.clock]
    assert clock == sorted(clock) and clock[-1] == pytest.approx(reference.time)
    assert node.auv.holding and node.auv.time == reference.time


def _new_stamps(odometry: list) -> list:
    """The odometry messages but the repeats of a held vehicle (stamped as the one before)."""
    return [m for i, m in enumerate(odometry)
            if i == 0 or m.header.stamp != odometry[i - 1].header.stamp]


def test_realtime_runs_the_clock_and_holds_position_without_a_plan(auv, make_node, spin_until):
    node = auv(mode="realtime")
    recorder = Recorder(make_node)
    assert spin_until(lambda: len(recorder.ranges) >= 10 and recorder.clock and
                      msg.time_to_seconds(recorder.clock[-1].clock) >= 3.0, node,
                      recorder.node, timeout=10.0)
    poses = {msg.odometry_to_pose(m)[1:] for m in recorder.odom}
    assert poses == {(30.0, -30.0, 300.0, math.pi)}


def test_bad_plans_are_refused_and_the_node_runs_on(auv, make_node, spin_until):
    node = auv(mode="realtime")
    recorder = Recorder(make_node)
    recorder.send([[0.0, 0.0], [45.0, 0.0]])      # off the terrain
    assert spin_until(lambda: node.plans_refused == 1, node, recorder.node)
    recorder.send([[0.0, 0.0]], frame_id="odom")  # wrong frame
    assert spin_until(lambda: node.plans_refused == 2, node, recorder.node)
    recorder.send([[28.0, -30.0]])
    assert spin_until(lambda: recorder.diagnostics and node.auv.holding
                      and math.dist(node.auv.pose[:2], (28.0, -30.0)) <= 0.1,
                      node, recorder.node, timeout=15.0)
    assert spin_until(lambda: recorder.diagnostic().plans_refused == 2, node,
                      recorder.node, timeout=3.0)


def test_time_scale_changes_live_but_the_vehicle_is_fixed(auv, make_node):
    node = auv()
    assert node.set_parameters([Parameter("time_scale", value=5.0)])[0].successful
    assert node.config.time_scale == 5.0
    assert not node.set_parameters([Parameter("time_scale", value=-1.0)])[0].successful
    assert not node.set_parameters([Parameter("vehicle.max_speed", value=2.0)])[0].successful
    assert not node.set_parameters([Parameter("seed", value=2)])[0].successful


def test_multibeam_swaths_in_the_sonar_frame(auv, make_node, spin_until):
    node = auv(**{"mode": "realtime", "start_pose": [0.0, 0.0, 0.0],
                  "multibeam.enabled": True, "multibeam.rate": 2.0,
                  "multibeam.num_beams": 7, "multibeam.swath_angle": 0.02})
    recorder = Recorder(make_node)
    assert spin_until(lambda: len(recorder.swaths) >= 3, node, recorder.node, timeout=10.0)
    swath = recorder.swaths[-1]
    points = msg.cloud_to_points(swath)
    assert swath.header.frame_id == "sonar_link" and points.shape == (7, 3)
    np.testing.assert_allclose(points[:, 0], 0.0)
    assert np.all(points[:, 2] < -300.0)  # below the vehicle, on the seafloor
    stamps = [msg.time_to_seconds(m.header.stamp) for m in recorder.swaths]
    np.testing.assert_allclose(np.diff(stamps), 0.5)


def test_a_start_off_the_terrain_fails_at_start_with_a_clear_error(ros_context):
    from poam_ros.params import ConfigError

    with pytest.raises(ConfigError, match="start position"):
        SimulatedAuvNode(context=ros_context, parameter_overrides=[
            Parameter("start_pose", value=[40.0, 0.0, 0.0])])


def test_timers_do_not_depend_on_sim_time(auv, make_node, spin_until):
    # use_sim_time on every node must not freeze the clock's own source.
    node = auv(mode="realtime", use_sim_time=True)
    recorder = Recorder(make_node)
    started = time.monotonic()
    assert spin_until(lambda: len(recorder.odom) >= 20, node, recorder.node, timeout=10.0)
    assert time.monotonic() - started < 10.0


@pytest.mark.parametrize("hold_for", [["listener_0"], ["listener_0", "/listener_1"]])
def test_lockstep_holds_the_clock_until_the_named_nodes_subscribe(auv, make_node, spin_until,
                                                                   hold_for):
    """A subscriber not named (a visualiser, say) does not release the clock; once every node
    of ``hold_for`` subscribes, it runs and each of them gets the first reading."""
    node = auv(hold_for=hold_for)
    planner = make_node("planner_only")
    plans = planner.create_publisher(Path, "plan", LATCHED)
    plans.publish(cv.path_from_waypoints(Header(frame_id="map"), np.array([[20.0, -30.0]])))
    assert spin_until(lambda: not node.auv.holding, node, planner)  # it has the plan ...
    viewer = Recorder(make_node, "viewer")
    listeners = []
    for count, name in enumerate(hold_for):
        spin_until(lambda: False, node, planner, viewer.node, *(r.node for r in listeners),
                   timeout=0.5)
        # ... but not every node it waits for listens
        assert node.auv.time == 0.0 and "/odom" in node.waiting_for, count
        assert not viewer.odom and not viewer.ranges
        listeners.append(Recorder(make_node, name.lstrip("/")))
    nodes = [node, planner, viewer.node, *(r.node for r in listeners)]
    assert spin_until(lambda: all(len(r.ranges) >= 3 for r in listeners), *nodes,
                      timeout=10.0)
    for listener in listeners:  # nothing was missed
        assert msg.time_to_seconds(listener.ranges[0].header.stamp) == 0.0


@pytest.mark.parametrize("required, missing", [
    (["sensor_ingest"], []), (["recorder_intake", "viewer"], ["viewer"]),
    (["/robot/sensor_ingest"], []), (["/sensor_ingest"], ["/sensor_ingest"]),
    (["/recorder_intake"], []), ([], [])])
def test_nodes_are_matched_by_name_or_fully_qualified_name(required, missing):
    subscribers = [("/robot", "sensor_ingest"), ("/", "recorder_intake")]
    assert missing_nodes(required, subscribers) == missing


def test_with_temperature_the_clock_also_waits_for_its_subscription(auv, make_node,
                                                                    spin_until):
    """temperature.enabled: the clock holds until hold_for subscribes to temperature too,
    then the first reading (t = 0) reaches it."""
    from sensor_msgs.msg import Temperature

    node = auv(**{"temperature.enabled": True})
    recorder = Recorder(make_node)  # subscribes odom and sonar/range, not temperature
    recorder.send([[20.0, -30.0]])
    assert spin_until(lambda: not node.auv.holding, node, recorder.node)
    spin_until(lambda: False, node, recorder.node, timeout=0.5)
    assert node.auv.time == 0.0 and node.waiting_for == ["/temperature"]
    readings = []
    recorder.node.create_subscription(Temperature, "temperature", readings.append, RELIABLE)
    assert spin_until(lambda: len(readings) >= 2, node, recorder.node, timeout=10.0)
    assert msg.time_to_seconds(readings[0].header.stamp) == 0.0
    assert [msg.time_to_seconds(m.header.stamp) for m in readings[:2]] == [0.0, 2.0]
