"""A lockstep graph goes on when the odometry at the end of a plan is lost.

The simulated AUV, the ingest, the mapper and the planner over real DDS, with a relay
between the vehicle's sensors (remapped to ``odom/raw``, ``sonar/range/raw``) and the graph's
(``odom``, ``sonar/range``) that drops every odometry message of the pilot survey's last
metres, as an overflowing queue would. The vehicle then holds the clock at the pilot's end;
its arrival pose reaches the ingest and the planner only because a held vehicle repeats it,
so the pilot's batch, its map and the first planned goal still come. And an ingest whose
odometry queue overflowed mid-plan, losing the pose that passed a waypoint, still ends the plan
at its last waypoint.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import overrides  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from sensor_msgs.msg import PointCloud2, Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ingest import reasons as ig  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402

DROP_RADIUS = 3.0  # m around the pilot's last waypoint: its last odometry, lost
LIMIT = 300.0  # s of wall time for the pilot, its map and one goal on a loaded machine


class LossyRelay:
    """Passes ``odom/raw`` on to ``odom`` and ``sonar/range/raw`` to ``sonar/range``, but
    drops the pilot survey's odometry within :data:`DROP_RADIUS` of its last waypoint, each
    message the first time it comes (a repeat, stamped as the original, passes); records
    the plans and the samples batches."""

    def __init__(self, node) -> None:
        self.node = node
        self.plans: list[Path] = []
        self.batches: list[PointCloud2] = []
        self.dropped: list[int] = []  # stamps, ns
        self.passed = 0
        node.create_subscription(Path, "plan", self.plans.append, qos.LATCHED)
        node.create_subscription(PointCloud2, "samples", self.batches.append, qos.SAMPLES)
        self.odom = node.create_publisher(Odometry, "odom", qos.SENSORS)
        node.create_subscription(Odometry, "odom/raw", self._relay, qos.SENSOR_BACKLOG)
        self.ranges = node.create_publisher(Range, "sonar/range", qos.SENSORS)
        node.create_subscription(Range, "sonar/range/raw", self.ranges.publish,
                                 qos.SENSOR_BACKLOG)

    def _relay(self, message: Odometry) -> None:
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        if len(self.plans) == 1 and stamp not in self.dropped:
            end, here = self.plans[0].poses[-1].pose.position, message.pose.pose.position
            if math.hypot(here.x - end.x, here.y - end.y) <= DROP_RADIUS:
                self.dropped.append(stamp)
                return
        self.passed += 1
        self.odom.publish(message)


def test_a_lost_arrival_pose_is_heard_again_and_the_mission_goes_on(ros_context, make_node,
                                                                    spin_until):
    setup = MissionSetup()
    setup.mapping = setup.mapping.replace(num_inducing=40, train_steps=2, device="cpu")
    setup.max_entropy = setup.max_entropy.replace(num_candidates=50)
    setup.pilot = setup.pilot.replace(num_waypoints=5)
    relay = LossyRelay(make_node("relay"))
    ingest = IngestNode(context=ros_context, parameter_overrides=overrides(
        setup.node_parameters("sensor_ingest")))
    mapper = MapperNode(context=ros_context, parameter_overrides=overrides(
        {**setup.node_parameters("mapper"), "journal.enabled": False}))
    planner = PlannerNode(context=ros_context, parameter_overrides=overrides(
        setup.node_parameters("planner")))
    graph = [ingest, mapper, planner]
    try:
        # The vehicle (holding for the relay) starts once the relay reaches the graph.
        assert spin_until(lambda: relay.odom.get_subscription_count() >= 2
                          and relay.ranges.get_subscription_count() and relay.plans,
                          relay.node, *graph, timeout=60.0)
        auv = SimulatedAuvNode(
            context=ros_context, cli_args=["--ros-args", "-r", "odom:=odom/raw",
                                           "-r", "sonar/range:=sonar/range/raw"],
            parameter_overrides=overrides({**setup.node_parameters("simulated_auv"),
                                           "time_scale": 50.0, "hold_for": ["relay"]}))
        graph.append(auv)
        assert spin_until(lambda: len(relay.plans) >= 2, relay.node, *graph,
                          timeout=LIMIT), (
            f"no goal after the pilot: {len(relay.batches)} batch(es), "
            f"{len(relay.dropped)} odometry dropped, {relay.passed} passed")
        assert ig.POSE_DUPLICATE not in ingest.core.drops.counts  # a repeat is no fault
    finally:
        for node in graph:
            node.destroy_node()
    # The pilot's batch runs up to the arrival pose the relay dropped: the repeat placed it.
    pilot_batch = relay.batches[0]
    assert msg.time_to_nanoseconds(pilot_batch.header.stamp) == max(relay.dropped)
    assert pilot_batch.width > 0


def test_a_waypoint_passed_in_lost_odometry_does_not_keep_the_plan_open(start_node, make_node,
                                                                        spin_until):
    """The ingest keeps one odometry message (``qos_overrides``, depth 1) and a burst
    overflows it: the pose at the first waypoint is lost, the one at the last ends the plan."""
    ingest = start_node(IngestNode, **{"qos_overrides./odom.subscription.depth": 1})
    node, watcher = make_node("vehicle"), make_node("watcher")
    plan = node.create_publisher(Path, "plan", qos.LATCHED)
    odom = node.create_publisher(Odometry, "odom", qos.SENSORS)
    batches, heard = [], []
    node.create_subscription(PointCloud2, "samples", batches.append, qos.SAMPLES)
    watcher.create_subscription(Odometry, "odom", heard.append, qos.SENSOR_BACKLOG)

    def send_pose(t, x, y):
        odom.publish(cv.odometry_from_state(Header(frame_id="map",
                                                   stamp=cv.seconds_to_time(t)),
                                            "base_link", (x, y), 0.0, z=300.0))

    assert spin_until(lambda: odom.get_subscription_count() == 2
                      and plan.get_subscription_count(), ingest, node, watcher)
    plan.publish(cv.path_from_waypoints(Header(frame_id="map"),
                                        np.array([[10.0, 0.0], [10.0, 2.0]])))
    assert spin_until(lambda: ingest.core.batcher.following, ingest, node)
    send_pose(1.0, 9.0, 0.0)
    assert spin_until(lambda: len(ingest.core.odometry.poses) == 1, ingest, node)
    for step in range(11):  # at (10, 0) at 1.2 s, then north at 2 m/s to (10, 2) at 2.2 s
        send_pose(1.2 + 0.1 * step, 10.0, 0.2 * step)
    # Every pose is out (the watcher heard the last) before the ingest takes one.
    assert spin_until(lambda: heard and heard[-1].pose.pose.position.y == 2.0, watcher,
                      timeout=10.0)
    assert spin_until(lambda: batches, ingest, node, timeout=10.0), \
        (ingest.lost_in_transport, ingest.core.batcher.plan_progress)
    assert ingest.lost_in_transport > 0 and not ingest.core.batcher.following
    assert msg.time_to_seconds(batches[0].header.stamp) == pytest.approx(2.2, abs=1e-9)
