"""The package parameter file: every key of the mapper's, planner's and simulated AUV's
sections is a parameter the node declares, and the node takes the file's value."""

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.parameter import Parameter  # noqa: E402

from poam_ros.params.files import ROS_NODE_PARAMETERS, load_node_parameters  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file  # noqa: E402


@pytest.mark.parametrize("name, node_class", [("mapper", MapperNode),
                                              ("planner", PlannerNode),
                                              ("simulated_auv", SimulatedAuvNode)])
def test_every_key_is_declared_and_applied(ros_domain_id, name, node_class):
    path = default_parameter_file()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_id,
               args=["--ros-args", "--params-file", str(path)])
    try:
        node = node_class(context=context)
        file_values = load_node_parameters(path, name)
        assert file_values, f"the file has no {name} section"
        for key, value in file_values.items():
            if key in ROS_NODE_PARAMETERS:
                continue
            assert node.has_parameter(key), f"{key} is in the file but not declared"
            declared = node.get_parameter(key).value
            assert (list(declared) if isinstance(value, list) else declared) == value, key
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_node_parameters_are_all_declared(ros_context):
    """What a launcher passes from MissionSetup.node_parameters is what the nodes take."""
    setup = MissionSetup()
    setup.workspace.no_go_vertices = [1.0, 1.0, 2.0, 1.0, 2.0, 2.0]
    setup.workspace.no_go_vertex_counts = [3]
    for name, node_class in (("mapper", MapperNode), ("planner", PlannerNode),
                             ("simulated_auv", SimulatedAuvNode)):
        parameters = setup.node_parameters(name)
        node = node_class(context=ros_context, parameter_overrides=[
            Parameter(key, value=value) for key, value in parameters.items()])
        try:
            for key, value in parameters.items():
                declared = node.get_parameter(key).value
                assert (list(declared) if isinstance(value, list) else declared) == value, key
        finally:
            node.destroy_node()
