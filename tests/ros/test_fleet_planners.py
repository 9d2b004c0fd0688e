"""Two planner nodes of a fleet over real DDS: they fly their shares of the pilot, hear each
other's announcements, send each other's future samples with their queries, and never choose
goals within the separation distance of each other, though both want the same region."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe, overrides  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.params import ConfigError  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402

SEPARATION = 6.0  # m
PEAK = np.array([17.0, 3.0])  # the one clearly uncertain region, far from the pilot's cut
TIMEOUT = 20.0  # s, per wait


def fleet_parameters(k):
    return {"seed": 7 + k, "mode": "realtime",
            "workspace.vertices": [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0],
            "pilot.num_waypoints": 8, "max_entropy.num_candidates": 60,
            "max_entropy.distance_weight": 0.0, "mission.max_samples": 0,
            "fleet.vehicle_index": k, "fleet.vehicles": 2,
            "fleet.teammates": [f"/auv{1 - k}/fleet/plan"],
            "coordination.enabled": True, "coordination.separation": SEPARATION,
            "coordination.announce_period": 0.2, "coordination.sample_spacing": 1.0}


def peaked_std(points):
    """What the fake mapper answers: a peak of std at PEAK. It ignores the planned samples,
    as a method that cannot condition does, so that both vehicles keep wanting the peak and
    only the separation keeps them apart."""
    return 1.0 + 10.0 * np.exp(-0.5 * np.sum((points - PEAK) ** 2, axis=1) / 9.0)


class Vehicle:
    """One vehicle's planner node, its probe (the fake mapper and odometry) in ``/auv<k>``."""

    def __init__(self, k, ros_context, make_node, **changes):
        self.planner = PlannerNode(context=ros_context, namespace=f"/auv{k}",
                                   parameter_overrides=overrides({**fleet_parameters(k),
                                                                  **changes}))
        self.probe = Probe(make_node("probe", namespace=f"/auv{k}"))
        self.planned_counts = []  # planned points per query
        self.announcements = []
        self.probe.node.create_subscription(PointCloud2, "uncertainty/query", self._answer,
                                            qos.QUERY)
        self.probe.node.create_subscription(Path, "fleet/plan", self.announcements.append,
                                            qos.LATCHED)
        self.stamp = 1_000_000_000

    def _answer(self, message):
        points, planned = msg.cloud_to_query_sets(message)
        self.planned_counts.append(len(planned))
        self.probe.response_pub.publish(cv.response_to_cloud(
            Header(stamp=message.header.stamp, frame_id="map"), points,
            peaked_std(points)))

    def plan(self):
        return msg.path_to_waypoints(self.probe.plans[-1])

    def fly(self, waypoints):
        """Report the vehicle at each waypoint in turn."""
        for point in np.atleast_2d(waypoints):
            self.probe.send_odom(point, self.stamp)
            self.stamp += 1_000_000_000
        self.position = np.atleast_2d(waypoints)[-1]

    def announced(self, goal):
        """Whether this vehicle's newest announcement ends at ``goal``."""
        return bool(self.announcements) and np.allclose(
            msg.path_to_waypoints(self.announcements[-1])[-1], goal)


@pytest.fixture
def fleet(ros_context, make_node, spin_until):
    vehicles = [Vehicle(k, ros_context, make_node) for k in range(2)]
    nodes = [node for v in vehicles for node in (v.planner, v.probe.node)]

    def spin(predicate, timeout=TIMEOUT):
        return spin_until(predicate, *nodes, timeout=timeout)

    assert spin(lambda: all(v.probe.plans and v.probe.odom_pub.get_subscription_count()
                            and v.probe.response_pub.get_subscription_count()
                            for v in vehicles))
    yield vehicles, spin
    for v in vehicles:
        v.planner.destroy_node()


def test_two_planners_never_choose_goals_within_the_separation(fleet):
    vehicles, spin = fleet
    pilots = [v.plan() for v in vehicles]
    # Each flies its share of one pilot survey: the shares meet end to start.
    np.testing.assert_allclose(pilots[0][-1], pilots[1][0])
    for v, pilot in zip(vehicles, pilots):
        v.probe.send_map(stamp_ns=1)
        v.fly(pilot[0])
    assert spin(lambda: all(v.announced(pilot[-1]) for v, pilot in zip(vehicles, pilots)))
    spin(lambda: False, timeout=0.5)  # the announcements reach the teammates too

    goals = [None, None]
    order = [0, 1, 0, 1]  # each reaches its goal in turn and plans the next
    for turn, k in enumerate(order):
        me, other = vehicles[k], vehicles[1 - k]
        plans = len(me.probe.plans)
        me.fly(pilots[k] if turn < 2 else goals[k])
        assert spin(lambda: len(me.probe.plans) > plans), f"auv{k} made no plan"
        goal = me.plan()[-1]
        goals[k] = goal
        assert me.planned_counts[-1] > 0  # the query carried the teammate's samples
        assert np.linalg.norm(goal - other.position) >= SEPARATION
        if goals[1 - k] is not None:
            assert np.linalg.norm(goal - goals[1 - k]) >= SEPARATION
        assert spin(lambda: me.announced(goal))
        spin(lambda: False, timeout=0.5)
    # Both wanted the peak: the first there took it, the other stayed out of it.
    first = msg.path_to_waypoints(vehicles[0].probe.plans[1])[-1]
    assert np.linalg.norm(first - PEAK) < 3.0


def test_a_stale_teammate_plan_stops_counting_after_the_timeout(ros_context, make_node,
                                                                spin_until):
    """A teammate heard once, bound for the peak, then silent (a link loss): its goal keeps
    this vehicle away from the peak until ``plan_timeout`` has passed, no longer."""
    me = Vehicle(0, ros_context, make_node, **{"fleet.vehicles": 1,
                                                "fleet.teammates": ["/lost/fleet/plan"],
                                                "coordination.plan_timeout": 1.0})
    lost = make_node("lost", namespace="/lost")
    announce = lost.create_publisher(Path, "fleet/plan", qos.LATCHED)
    nodes = (me.planner, me.probe.node, lost)
    try:
        assert spin_until(lambda: me.probe.plans and announce.get_subscription_count()
                          and me.probe.response_pub.get_subscription_count(), *nodes)
        me.probe.send_map(stamp_ns=1)

        def heard_while_planning():
            """Announce afresh at every spin until the vehicle has planned: whatever the
            load, the announcement is younger than the timeout when it plans."""
            header = Header(frame_id="map", stamp=me.planner.get_clock().now().to_msg())
            announce.publish(cv.path_from_waypoints(header, [[10.0, 10.0], PEAK]))
            return len(me.probe.plans) == 2

        spin_until(lambda: heard_while_planning() and False, *nodes, timeout=0.3)  # heard
        me.fly(me.plan())  # the pilot, all of it
        assert spin_until(heard_while_planning, *nodes, timeout=TIMEOUT)
        first = me.plan()[-1]
        assert np.linalg.norm(first - PEAK) >= SEPARATION  # the teammate's goal counts
        spin_until(lambda: False, *nodes, timeout=1.5)  # no word from it for the timeout
        me.fly(first)
        assert spin_until(lambda: len(me.probe.plans) == 3, *nodes, timeout=TIMEOUT)
        assert np.linalg.norm(me.plan()[-1] - PEAK) < 3.0  # forgotten: the peak is free
    finally:
        me.planner.destroy_node()


def test_a_vehicle_is_not_its_own_teammate(ros_context):
    parameters = {**fleet_parameters(0), "fleet.teammates": ["fleet/plan"]}
    with pytest.raises(ConfigError, match="own announcements /auv0/fleet/plan"):
        PlannerNode(context=ros_context, namespace="/auv0",
                    parameter_overrides=overrides(parameters))
