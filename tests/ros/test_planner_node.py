"""The planner node over real DDS: pilot survey, lockstep and realtime replanning, queries."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import Quaternion  # noqa: E402
from graph_helpers import Probe, overrides  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.planners import MaxEntropyConfig, PilotSurveyConfig, make_planner, pilot_survey  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.workspace import Workspace  # noqa: E402

SEED = 1234
VERTICES = [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0]
NO_GO = [8.0, 8.0, 20.0, 8.0, 20.0, 20.0, 8.0, 20.0]  # the north-east quarter is off limits
SMALL = {"seed": SEED, "workspace.vertices": VERTICES, "workspace.no_go_vertices": NO_GO,
         "workspace.no_go_vertex_counts": [4], "pilot.num_waypoints": 6,
         "max_entropy.num_candidates": 40, "mission.max_samples": 0}
STATUS = "planner: planning"


def workspace():
    return Workspace.from_vertices(VERTICES, [NO_GO])


def std_field(points):
    """What the fake mapper answers: most uncertain far from the south-west corner."""
    return 1.0 + np.hypot(points[:, 0], points[:, 1])


def covariance_field(points):
    """A two-channel answer: the depth as :func:`std_field`, a second channel most uncertain
    near the south-west corner, their correlation 0.5."""
    std = np.column_stack([std_field(points), 1000.0 / std_field(points) ** 3])
    cov = np.einsum("nd,ne->nde", std, std)
    cov[:, 0, 1] *= 0.5
    cov[:, 1, 0] *= 0.5
    return cov


def expected_run(num_goals, positions, spread=std_field, **config):
    """Pilot and goals as Mission.run draws them from the same seed."""
    rng = np.random.default_rng(SEED)
    planner = make_planner("max_entropy", workspace(), rng,
                           MaxEntropyConfig(num_candidates=40, **config))
    pilot = pilot_survey(workspace(), rng, PilotSurveyConfig(num_waypoints=6))
    return pilot, [planner.plan(np.asarray(p), spread)[0] for p in positions[:num_goals]]


@pytest.fixture
def graph(ros_context, make_node, spin_until):
    """``graph(**parameters)`` -> (planner, probe); the probe answers queries with
    ``probe.spread`` (std_field), except the next ``probe.ignore`` of them."""
    nodes = []

    def start(**extra):
        planner = PlannerNode(context=ros_context,
                              parameter_overrides=overrides({**SMALL, **extra}))
        nodes.append(planner)
        probe = Probe(make_node("probe"))
        probe.ignore, probe.spread = 0, std_field

        def answer(message):
            if probe.ignore > 0:
                probe.ignore -= 1
                return
            points = msg.cloud_to_query(message)
            probe.response_pub.publish(cv.response_to_cloud(message.header, points,
                                                            probe.spread(points)))

        probe.node.create_subscription(PointCloud2, "uncertainty/query", answer, qos.QUERY)
        assert spin_until(lambda: probe.plans and probe.goals
                          and probe.odom_pub.get_subscription_count()
                          and probe.response_pub.get_subscription_count()
                          and probe.query_pub.get_subscription_count(), planner, probe.node)
        return planner, probe

    yield start
    for node in nodes:
        node.destroy_node()


def drive(probe, waypoints, first_stamp_ns):
    """Report the vehicle at each waypoint in turn; returns the last stamp used."""
    stamp = first_stamp_ns
    for point in np.atleast_2d(waypoints):
        probe.send_odom(point, stamp)
        stamp += 1_000_000_000
    return stamp - 1_000_000_000


def state(probe):
    return probe.last_status(STATUS)[1] if STATUS in probe.diagnostics else None


def test_the_pilot_survey_is_the_first_plan(graph):
    _, probe = graph()
    pilot, _ = expected_run(0, [])
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[0]), pilot)
    assert probe.plans[0].header.frame_id == "map"
    goal = probe.goals[-1].pose.position
    assert (goal.x, goal.y) == tuple(pilot[-1])


def test_lockstep_waits_for_a_map_made_after_the_goal(graph, spin_until):
    planner, probe = graph()
    probe.send_map(stamp_ns=1)  # a map from before the pilot ended (say, latched)
    pilot, _ = expected_run(0, [])
    end = drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: state(probe) and state(probe).startswith("waiting for map"),
                      planner, probe.node)
    spin_until(lambda: False, planner, probe.node, timeout=0.5)
    assert probe.queries == [] and len(probe.plans) == 1  # the old map does not count

    probe.send_map(stamp_ns=end + 1)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    # The planner planned from the last odometry: the pilot's end.
    pilot_end_goal = expected_run(1, [pilot[-1]])[1][0]
    goal = msg.path_to_waypoints(probe.plans[1])
    np.testing.assert_array_equal(goal, [pilot_end_goal])
    assert workspace().contains(goal).all()
    assert spin_until(lambda: probe.last_status(STATUS)[2].goals_issued == 1, planner,
                      probe.node)
    assert probe.last_status(STATUS)[2].state == "driving"


def test_a_restarted_planner_cuts_the_pilot_at_the_first_map(graph, spin_until):
    """skip_pilot: a restart on a restored map plans informatively at the first map it
    counts, from where the vehicle is on the pilot's first leg, not at the pilot's end."""
    planner, probe = graph(skip_pilot=True)
    pilot, _ = expected_run(0, [])
    here = (pilot[0] + pilot[1]) / 2  # on the way to the pilot's second waypoint
    probe.send_odom(here, 5_000_000_000)
    assert spin_until(lambda: STATUS in probe.diagnostics
                      and probe.last_status(STATUS)[2].position is not None,
                      planner, probe.node)
    assert len(probe.plans) == 1 and state(probe) == "pilot"
    probe.send_map(stamp_ns=1)  # the restored map: its samples are older than this start
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[1]),
                                  [expected_run(1, [here])[1][0]])


def test_a_restarted_planner_whose_map_comes_before_any_odometry_plans_at_the_first_pose(
        graph, spin_until):
    """skip_pilot, the restored map counted while no odometry has come (the vehicle's clock
    held for the restarted nodes): the first pose then wakes the planning, with no other
    map to come until the pilot's end."""
    planner, probe = graph(skip_pilot=True)
    probe.send_map(stamp_ns=1)
    assert spin_until(lambda: STATUS in probe.diagnostics
                      and probe.last_status(STATUS)[2].maps_received == 1,
                      planner, probe.node)
    spin_until(lambda: False, planner, probe.node, timeout=0.5)
    assert len(probe.plans) == 1  # no position yet: nothing to plan from
    pilot, _ = expected_run(0, [])
    probe.send_odom(pilot[0], 5_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[1]),
                                  [expected_run(1, [pilot[0]])[1][0]])


def test_a_map_that_overtakes_the_odometry_still_counts(graph, spin_until):
    planner, probe = graph()
    pilot, _ = expected_run(0, [])
    # The map holds samples up to t = 100 s, and arrives before the odometry of t = 99 s
    # that reaches the goal.
    probe.send_map(stamp_ns=100_000_000_000)
    spin_until(lambda: False, planner, probe.node, timeout=0.3)
    drive(probe, pilot, 94_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)


def test_after_a_clock_reset_lockstep_waits_for_a_map_of_the_new_clock(graph, spin_until):
    """Sim time restarts during the pilot: a map stamped on the old clock, later than every
    stamp of the new one, is not taken for a map made after the goal was reached."""
    planner, probe = graph(**{"odometry.stamp_reset_count": 2})
    pilot, _ = expected_run(0, [])
    drive(probe, pilot[:2], 1000_000_000_000)
    probe.send_map(stamp_ns=1001_500_000_000)  # holds samples up to 1001.5 s
    spin_until(lambda: False, planner, probe.node, timeout=0.3)
    end = drive(probe, pilot[2:], 5_000_000_000)  # the clock restarted
    assert spin_until(lambda: state(probe) and state(probe).startswith("waiting for map"),
                      planner, probe.node)
    spin_until(lambda: False, planner, probe.node, timeout=0.5)
    assert len(probe.plans) == 1
    assert probe.last_status(STATUS)[2].clock_resets == 1
    probe.send_map(stamp_ns=end + 1)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)


def test_the_last_map_published_again_is_not_taken_for_the_legs_map(graph, spin_until):
    """A mapper publishes its last map again with its stamp (idle training moved it, a new
    grid): in lockstep that is not the map of the leg just driven."""
    planner, probe = graph()
    pilot, _ = expected_run(0, [])
    probe.send_map(stamp_ns=5_000_000_000)  # the map before the goal
    spin_until(lambda: False, planner, probe.node, timeout=0.3)
    end = drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: state(probe) and state(probe).startswith("waiting for map"),
                      planner, probe.node)
    probe.send_map(stamp_ns=5_000_000_000)  # the same samples' map, moved by idle training
    spin_until(lambda: False, planner, probe.node, timeout=0.5)
    assert len(probe.plans) == 1
    probe.send_map(stamp_ns=end + 1)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)


def test_realtime_plans_at_once_with_the_map_at_hand(graph, spin_until):
    planner, probe = graph(mode="realtime")
    probe.send_map(stamp_ns=1)
    pilot, _ = expected_run(0, [])
    drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    goal = msg.path_to_waypoints(probe.plans[1])
    np.testing.assert_array_equal(goal, [expected_run(1, [pilot[-1]])[1][0]])
    # And again, from that goal, without another map.
    drive(probe, goal, 16_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 3, planner, probe.node, timeout=10.0)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[2]),
                                  [expected_run(2, [pilot[-1], goal[0]])[1][1]])


@pytest.mark.parametrize("acquisition", ["joint", "weighted"])
def test_a_multi_channel_answer_is_scored_by_the_configured_acquisition(graph, spin_until,
                                                                        acquisition):
    """The mapper's covariance answer reaches the planner's acquisition exactly: the goal is
    the core planner's on the same covariances, not the depth channel's."""
    settings = {"acquisition": acquisition, "channel_weights": [0.2, 1.0]}
    planner, probe = graph(mode="realtime", **{f"max_entropy.{k}": v
                                               for k, v in settings.items()})
    probe.spread = covariance_field
    probe.send_map(stamp_ns=1)
    pilot, _ = expected_run(0, [])
    drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    goal = msg.path_to_waypoints(probe.plans[1])[0]
    expected = expected_run(1, [pilot[-1]], covariance_field, **settings)[1][0]
    np.testing.assert_array_equal(goal, expected)
    assert not np.array_equal(goal, expected_run(1, [pilot[-1]], covariance_field)[1][0])


def test_one_bad_pose_during_a_leg_costs_only_itself(graph, spin_until):
    """A NaN position, a zero quaternion and a glitched stamp while the vehicle drives to a
    goal are dropped and counted; the goal is still reached and the next one planned."""
    planner, probe = graph(mode="realtime")
    probe.send_map(stamp_ns=1)
    pilot, _ = expected_run(0, [])
    drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=10.0)
    goal = msg.path_to_waypoints(probe.plans[1])
    on_the_way = goal[0] - 3.0  # well beyond the goal radius
    probe.send_odom(on_the_way, 20_000_000_000)
    probe.send_odom([np.nan, on_the_way[1]], 21_000_000_000)
    not_a_rotation = cv.odometry_from_state(
        Header(frame_id="map", stamp=cv.nanoseconds_to_time(22_000_000_000)), "base_link",
        on_the_way, 0.0)
    not_a_rotation.pose.pose.orientation = Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)
    probe.odom_pub.publish(not_a_rotation)
    probe.send_odom(goal[0], 9_000_000_000_000)  # a GPS time glitch, at the goal itself
    drive(probe, goal, 23_000_000_000)

    assert spin_until(lambda: len(probe.plans) == 3, planner, probe.node, timeout=10.0)
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[2]),
                                  [expected_run(2, [pilot[-1], goal[0]])[1][1]])

    def counted():
        values = probe.last_status(STATUS)[2]
        return [*(values.dropped[reason] for reason in (
            "pose_nonfinite", "pose_invalid_orientation", "pose_stamp_outlier")),
            values.clock_resets, values.goals_issued]

    assert spin_until(lambda: counted() == [1, 1, 1, 0, 2], planner, probe.node), \
        counted()
    assert any(status.level == DiagnosticStatus.WARN and "dropped since" in status.message
               for status in probe.diagnostics[STATUS])


def test_an_unanswered_query_is_asked_again_with_the_same_candidates(graph, spin_until):
    planner, probe = graph(mode="realtime", query_timeout=0.2)
    probe.ignore = 1
    probe.send_map(stamp_ns=1)
    pilot, _ = expected_run(0, [])
    drive(probe, pilot, 10_000_000_000)
    assert spin_until(lambda: len(probe.plans) == 2, planner, probe.node, timeout=15.0)
    assert len(probe.queries) == 2
    first, second = (msg.cloud_to_query(q) for q in probe.queries)
    np.testing.assert_array_equal(first, second)  # the random stream was rewound
    np.testing.assert_array_equal(msg.path_to_waypoints(probe.plans[1]),
                                  [expected_run(1, [pilot[-1]])[1][0]])
    assert spin_until(lambda: probe.last_status(STATUS)[2].goals_issued == 1, planner,
                      probe.node)
    _, _, values = probe.last_status(STATUS)
    assert values.failures == 1 and "within 0.2 s" in values.last_failure


def test_mission_parameters_are_read_only_and_the_mode_is_not(graph):
    planner, _ = graph()
    for name, value in (("seed", 1), ("max_entropy.num_candidates", 10),
                        ("workspace.vertices", [0.0, 0.0, 1.0, 0.0, 1.0, 1.0])):
        [result] = planner.set_parameters([Parameter(name, value=value)])
        assert not result.successful and "read-only" in result.reason
    [result] = planner.set_parameters([Parameter("mode", value="sometimes")])
    assert not result.successful and "mode must be one of" in result.reason
    [result] = planner.set_parameters([Parameter("mode", value="realtime")])
    assert result.successful


def test_best_effort_odometry_through_qos_overrides(ros_context, make_node, spin_until):
    """A robot whose odometry is best-effort: the planner takes it once the parameter file
    overrides its subscription, as the ingest's sensors."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    planner = PlannerNode(context=ros_context, parameter_overrides=overrides(
        {**SMALL, "qos_overrides./odom.subscription.reliability": "best_effort"}))
    try:
        node = make_node("best_effort_odometry")
        odom = node.create_publisher(Odometry, "odom", QoSProfile(
            depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        assert spin_until(lambda: odom.get_subscription_count(), planner, node)

        def send():
            header = Header(frame_id="map", stamp=cv.seconds_to_time(1.0))
            odom.publish(cv.odometry_from_state(header, "base_link", (3.0, 4.0), 0.0))
            return planner._position is not None and tuple(planner._position) == (3.0, 4.0)

        assert spin_until(send, planner, node)
    finally:
        planner.destroy_node()


def test_a_geojson_workspace_is_placed_with_the_planner_s_own_anchor(ros_context, tmp_path):
    """A robot's parameter file names the workspace in lat/lon and repeats the anchor under
    the planner: the planner plans in the map-metre polygon."""
    area = tmp_path / "area.geojson"
    area.write_text('{"type": "Polygon", "coordinates": [[[10.0, 59.0], [10.001, 59.0], '
                    '[10.001, 59.001], [10.0, 59.001], [10.0, 59.0]]]}')
    planner = PlannerNode(context=ros_context, parameter_overrides=overrides(
        {**SMALL, "workspace.geojson": str(area), "geo.anchor": "latlon",
         "geo.origin_latitude": 59.0, "geo.origin_longitude": 10.0}))
    try:
        xmin, xmax, ymin, ymax = planner._workspace.bounds
        assert (xmin, ymin) == pytest.approx((0.0, 0.0), abs=1e-6)
        assert (xmax, ymax) == pytest.approx((57.3, 111.2), abs=0.2)  # 0.001° at 59° N
    finally:
        planner.destroy_node()
