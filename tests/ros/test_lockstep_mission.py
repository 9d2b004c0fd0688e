"""Mapper and planner in lockstep over DDS replay the ROS-free mission goal for goal.

A stand-in for the simulated AUV and the ingest node drives the same SurveySimulator the
ROS-free Mission drives: on each plan it follows the waypoints, reports odometry along the
way and publishes the leg's soundings as one float64 samples batch. Every goal the planner
node issues must then equal, bit for bit, the goal Mission.run plans at that epoch.
"""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe, overrides  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from sensor_msgs.msg import PointField  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.mission import Mission  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup, mission_seeds  # noqa: E402
from poam_ros.setup.terrain import terrain_from_config  # noqa: E402
from poam_ros.sim import SurveySimulator, lower_right_start  # noqa: E402
from poam_ros.workspace import Workspace  # noqa: E402

GOALS = 3


class _Enough(Exception):
    """Ends the ROS-free mission after GOALS epochs of informative planning."""


@pytest.fixture(scope="module")
def setup_and_goals():
    """A small mission and the goals Mission.run plans in it."""
    setup = MissionSetup()
    setup.mission.seed = 3
    setup.mission_control.max_samples = 10**9  # ended by _Enough instead
    setup.mapping = setup.mapping.replace(num_inducing=40, train_steps=2, device="cpu")
    setup.max_entropy = setup.max_entropy.replace(num_candidates=150)
    setup.pilot = setup.pilot.replace(num_waypoints=20)
    terrain = terrain_from_config(setup.terrain)
    mission = Mission(setup, terrain)
    goals, plan = [], mission.planner.plan

    def recorded_plan(*args, **kwargs):
        goals.append(plan(*args, **kwargs))
        return goals[-1]

    def stop_after_goals(_record):
        if len(goals) == GOALS:
            raise _Enough

    mission.planner.plan = recorded_plan
    with pytest.raises(_Enough):
        mission.run(stop_after_goals)
    return setup, terrain, goals


def test_lockstep_graph_reproduces_the_mission(setup_and_goals, ros_context, make_node,
                                               spin_until):
    setup, terrain, expected = setup_and_goals
    seeds = mission_seeds(setup.mission.seed)
    simulator = SurveySimulator(terrain, setup.vehicle, setup.sonar, seed=seeds["simulator"],
                                start_pose=lower_right_start(
                                    Workspace.from_config(setup.workspace).bounds))
    mapper = MapperNode(context=ros_context,
                        parameter_overrides=overrides(setup.node_parameters("mapper")))
    planner = PlannerNode(context=ros_context,
                          parameter_overrides=overrides(setup.node_parameters("planner")))
    auv = Probe(make_node("auv_and_ingest"))
    plans = []

    def follow(message):
        waypoints = msg.path_to_waypoints(message)
        plans.append(waypoints)
        survey = simulator.follow(waypoints)
        for t, pose in zip(survey.pose_times[::10], survey.poses[::10]):
            auv.send_odom(pose[:2], int(t * 1e9))
        auv.send_odom(simulator.pose[:2], int(simulator.time * 1e9))
        auv.send_samples(survey.positions, survey.elevations,
                         stamp_ns=int(simulator.time * 1e9), datatype=PointField.FLOAT64)

    try:
        auv.node.create_subscription(Path, "plan", follow, qos.LATCHED)
        assert spin_until(lambda: len(plans) > GOALS, mapper, planner, auv.node,
                          timeout=120.0), f"{len(plans) - 1} of {GOALS} goals came"
    finally:
        planner.destroy_node()
        mapper.destroy_node()
    for epoch, (goal, plan) in enumerate(zip(expected, plans[1:]), start=1):
        np.testing.assert_array_equal(plan, goal, err_msg=f"goal of epoch {epoch}")
