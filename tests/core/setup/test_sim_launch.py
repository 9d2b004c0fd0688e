"""sim.launch.xml read by the launch interpreter is the graph ``poam-ros sim`` starts: with a
shipped parameter file every node gets what the ROS-free mission needs it to have (the
mapper the workspace grid, the ingest float64 samples, the seeds), so ``ros2 launch`` with the
file alone and ``poam-ros sim`` start the same graph; the command line's changes reach the
nodes through the effective file and are named."""

from __future__ import annotations

import pytest

from poam_ros.mapping.map_grid import MapGrid, MapGridConfig
from poam_ros.params.files import config_from_parameters, load_node_parameters
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file, mission_seeds
from poam_ros.setup.sim_launch import differences, sim_nodes, write_effective_file
from poam_ros.workspace import Workspace, WorkspaceConfig

SIM_FILES = ("topobathy.yaml", "poam_ros.yaml", "two_channels.yaml", "authors_robot.yaml")


@pytest.mark.parametrize("name", SIM_FILES)
@pytest.mark.parametrize("record", [False, True])
def test_a_shipped_file_gives_the_nodes_everything_poam_ros_sim_gives_them(tmp_path, name,
                                                                           record):
    path = default_parameter_file(name)
    effective = write_effective_file(MissionSetup.from_file(path), path, tmp_path / "e.yaml",
                                     {"mapper": {"journal.path": str(tmp_path / "j")}})
    assert differences(path, effective, record) == []


def test_the_launched_survey_maps_its_workspace_with_float64_samples_and_the_seeds():
    path = default_parameter_file("topobathy.yaml")
    setup, seeds = MissionSetup.from_file(path), mission_seeds(0)
    nodes = {node.name: node.parameter_values() for node in sim_nodes(path)}
    mapper = nodes["mapper"]
    workspace = config_from_parameters(mapper, WorkspaceConfig, "workspace")
    assert workspace == setup.workspace
    grid = MapGrid.from_config(config_from_parameters(mapper, MapGridConfig, "grid"),
                               Workspace.from_config(workspace))
    assert grid.shape == (80, 80)  # 20 km at 250 m, not the 1 x 1 of a 2 m default square
    assert mapper["evaluation_grid"] == setup.mission.eval_grid
    assert mapper["mapping.seed"] == seeds["model"]
    assert nodes["sensor_ingest"]["float64_samples"] is True  # sim.launch.xml's own
    assert nodes["planner"]["seed"] == seeds["planner"]
    assert nodes["simulated_auv"]["seed"] == seeds["simulator"]
    assert all(nodes[name]["use_sim_time"] for name in ("sensor_ingest", "mapper", "planner"))


def test_the_command_lines_changes_reach_the_nodes_and_are_named(tmp_path):
    path = default_parameter_file("topobathy.yaml")
    setup = MissionSetup.from_file(path)
    setup.mission = setup.mission.replace(seed=3)
    setup.mapping = setup.mapping.replace(method="ssgp")
    effective = write_effective_file(setup, path, tmp_path / "e.yaml",
                                     {"simulated_auv": {"time_scale": 50.0}})
    nodes = {node.name: node.parameter_values() for node in sim_nodes(effective)}
    again = MissionSetup.from_file(effective)  # the ROS-free mission reads it alike
    for name in ("simulated_auv", "sensor_ingest", "mapper", "planner", "mission"):
        assert again.node_parameters(name) == setup.node_parameters(name)
    for name in ("simulated_auv", "sensor_ingest", "mapper", "planner"):
        expected = setup.node_parameters(name)
        if name == "sensor_ingest":  # sim.launch.xml sets it over the file
            assert expected.pop("float64_samples") is False
        assert expected.items() <= nodes[name].items()
    assert nodes["simulated_auv"]["time_scale"] == 50.0
    assert differences(path, effective) == [
        "simulated_auv: seed", "simulated_auv: time_scale", "mapper: mapping.method",
        "mapper: mapping.seed", "planner: seed"]


def test_the_effective_file_keys_every_node_for_any_namespace(tmp_path):
    path = default_parameter_file()
    effective = write_effective_file(MissionSetup.from_file(path), path, tmp_path / "e.yaml")
    assert load_node_parameters(effective, "/auv1/mapper") == load_node_parameters(
        effective, "/mapper") != {}
