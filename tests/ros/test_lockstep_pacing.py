"""Lockstep's back-pressure over real DDS: the simulated AUV's clock waits for the ingest, and
the fleet's for every vehicle's.

The simulated AUV runs as fast as it can (``time_scale`` 0) in bursts of up to 200 control
steps a tick, and the ingest's sensor queues are cut to 8 messages: without pacing
(``max_backlog`` 0) every burst overflows them and odometry is lost in transport; paced by the
ingest's ``~/progress`` (the clock stands while 4 messages of a topic wait), nothing is, and
the clock is seen standing for the ingest. The ingest being its own node in its own process or not
changes nothing of the rule; here it shares the test's executor, which is the worst case:
while the simulator's tick publishes, nothing is taken.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.fleet_sim_node import FleetSimNode  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.progress import progress_stamps  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.ros.vehicle_topics import VehicleTopics  # noqa: E402
from poam_ros.sim.simulated_auv import Odom, SimulatedAuvConfig  # noqa: E402
from poam_ros.sim.sonar import SonarConfig  # noqa: E402

START = [30.0, -30.0, math.pi]
LEG = [[-20.0, -30.0]]  # 50 m west along the terrain's edge
LEG_TIME = 45.0  # s of sim time: it takes about 50
SHORT_QUEUE = 8  # messages
BACKLOG = 4  # messages: the clock stands while the ingest has this many of a topic to take
FLEET_STARTS = [20.0, -20.0, 3.1, -20.0, 20.0, 0.0]  # /auv0, /auv1: x, y, yaw
FLEET_LEGS = {"/auv0": [[-10.0, -20.0]], "/auv1": [[10.0, 20.0]]}  # 30 m each


def queues(namespace: str = "") -> dict:
    """The ingest's sensor queues of ``namespace`` cut to :data:`SHORT_QUEUE`."""
    return {f"qos_overrides.{namespace}/{topic}.subscription.depth": SHORT_QUEUE
            for topic in ("odom", "sonar/range")}


def send(node, topic: str, waypoints) -> None:
    node.create_publisher(Path, topic, qos.LATCHED).publish(
        cv.path_from_waypoints(Header(frame_id="map"), np.asarray(waypoints)))


@pytest.mark.parametrize("max_backlog", [BACKLOG, 0])
def test_a_paced_clock_loses_nothing_where_an_unpaced_one_overflows_the_queues(
        start_node, make_node, spin_until, max_backlog):
    ingest = start_node(IngestNode, use_sim_time=True, **queues())
    auv = start_node(SimulatedAuvNode, time_scale=0.0, max_steps_per_tick=200,
                     start_pose=START, seed=3, hold_for=["sensor_ingest"],
                     max_backlog=max_backlog)
    test = make_node("pacing_test")
    reports = []
    test.create_subscription(DiagnosticStatus, "sensor_ingest/progress",
                             lambda m: reports.append(progress_stamps(m)), qos.LATCHED)
    # the plan once the simulator hears the ingest's progress: discovery may bring it after the
    # sensor subscriptions, and a tick before it would run unpaced
    assert spin_until(lambda: auv.topics.pacing.consumers or max_backlog == 0,
                      ingest, auv, test, timeout=30.0)
    send(test, "plan", LEG)
    assert spin_until(lambda: auv.auv.holding and auv.auv.time > LEG_TIME, ingest, auv,
                      test, timeout=120.0), f"the leg did not end: sim time {auv.auv.time}"
    # what the simulator sent, the ingest took in the end (the last report comes within a
    # poll of its taking)
    assert spin_until(lambda: reports and reports[-1]["/odom"] == pytest.approx(auv.auv.time,
                                                                              abs=1e-6),
                      ingest, auv, test, timeout=10.0)
    if max_backlog > 0:
        assert ingest.lost_in_transport == 0
        assert auv.topics.pacing.held_for > 0
        assert set(reports[-1]) >= {"/odom", "/sonar/range", "/sonar/swath", "/fix"}
    else:  # the set-up overflows the queues: what the paced run shows is the pacing's doing
        assert ingest.lost_in_transport > 0
        assert auv.topics.pacing.held_for == 0


def test_the_fleet_clock_waits_for_every_vehicle_s_ingest(ros_context, nodes_to_destroy,
                                                         start_node, make_node, spin_until):
    ingests = []
    for namespace in FLEET_LEGS:
        ingests.append(IngestNode(context=ros_context, namespace=namespace,
                                  parameter_overrides=[Parameter(name, value=value) for
                                                       name, value in queues(namespace).items()]))
        nodes_to_destroy.append(ingests[-1])
    fleet = start_node(FleetSimNode, **{"fleet.vehicles": 2, "fleet.start_poses": FLEET_STARTS,
                                        "time_scale": 0.0, "max_steps_per_tick": 200,
                                        "seed": 4, "max_backlog": BACKLOG})
    test = make_node("fleet_pacing_test")
    assert spin_until(lambda: all(topics.pacing.consumers for topics in fleet.topics),
                      *ingests, fleet, test, timeout=30.0)
    for namespace, leg in FLEET_LEGS.items():
        send(test, f"{namespace}/plan", leg)
    assert spin_until(lambda: fleet.fleet.holding and fleet.fleet.time > 25.0, *ingests,
                      fleet, test, timeout=120.0), f"no leg ended: sim time {fleet.fleet.time}"
    assert [ingest.lost_in_transport for ingest in ingests] == [0, 0]
    assert sum(topics.pacing.held_for for topics in fleet.topics) > 0


def test_a_message_taken_leaves_no_backlog_whatever_its_stamp_s_rounding(make_node):
    """0.1 * 3 s is 0.30000000000000004, stamped 300,000,000 ns, read back as 0.3: what was
    sent counts by the stamp the consumer reads, or the message would stay untaken."""
    node = make_node("rounding_test")
    topics = VehicleTopics(node, "", SimulatedAuvConfig(hold_for=[]), SonarConfig(), None,
                           swath=False)
    topics.pacing.max_backlog = 1
    t = 0.1 * 3
    topics.publish(Odom(t=t, x=0.0, y=0.0, yaw=0.0, speed=0.0, yaw_rate=0.0, z=0.0))
    taken = msg.time_to_seconds(cv.seconds_to_time(t))
    assert taken < t
    topics.pacing.heard("ingest", {"/odom": taken}, now=0.0)
    assert topics.pacing.room(now=0.0) == {"ingest": 1}


@pytest.mark.parametrize("max_backlog", [500, 3000])
def test_the_simulators_publishers_keep_what_the_pacing_lets_a_consumer_owe(make_node,
                                                                            max_backlog):
    """A reliable writer drops a message its reader's DDS has not acknowledged once its depth
    of newer ones is out: the sensor publishers hold at least the backlog the clock allows and
    as many as the ingest's queue, or a consumer whose receiving thread a loaded CPU starves
    loses messages it was let owe (odometry lost in a four-vehicle fleet at depth 100)."""
    topics = VehicleTopics(make_node("publisher_depth_test"), "",
                           SimulatedAuvConfig(hold_for=[], max_backlog=max_backlog),
                           SonarConfig(), 0.05, swath=True)
    for publisher in (topics.odom, topics.range, topics.swath, topics.temperature):
        assert publisher.qos_profile.depth >= max(max_backlog, qos.SENSOR_BACKLOG.depth)
    realtime = VehicleTopics(make_node("realtime_depth_test"), "",
                             SimulatedAuvConfig(mode="realtime", hold_for=[]), SonarConfig(),
                             None, swath=False)
    assert realtime.odom.qos_profile.depth == qos.SENSORS.depth  # nothing paces realtime
