"""A lockstep graph goes on when the odometry at the end of a plan is lost.

The simulated AUV, the ingest, the mapper and the planner over real DDS, with a relay
between the vehicle's sensors (remapped to ``odom/raw``, ``sonar/range/raw``) and the graph's
(``odom``, ``sonar/range``) that drops every odometry message of the pilot survey's last
metres, as an overflowing queue would. The vehicle then holds the clock at the pilot's end;
its arrival pose reaches the ingest and the planner only because a held vehicle repeats it,
so the pilot's batch, its map and the first planned goal still come.
"""

from __future__ import annotations

import math

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import overrides  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from sensor_msgs.msg import PointCloud2, Range  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
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
    finally:
        for node in graph:
            node.destroy_node()
    # The pilot's batch runs up to the arrival pose the relay dropped: the repeat placed it.
    pilot_batch = relay.batches[0]
    assert msg.time_to_nanoseconds(pilot_batch.header.stamp) == max(relay.dropped)
    assert pilot_batch.width > 0
