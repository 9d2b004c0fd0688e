"""MissionSetup loads every node's section of the parameter file and says what each node gets."""

import math
import textwrap

import pytest

from poam_ros.mapping.map_grid import MapGridConfig
from poam_ros.params import ConfigError
from poam_ros.params.mission_setup import MissionSetup, default_parameter_file, mission_seeds
from poam_ros.params.node_settings import MapperSettings, PlannerSettings


def test_the_package_parameter_file_loads():
    setup = MissionSetup.from_file(default_parameter_file())
    assert isinstance(setup.mapper_node, MapperSettings)
    assert isinstance(setup.planner_node, PlannerSettings)
    assert isinstance(setup.grid, MapGridConfig)


def test_node_settings_load_from_their_sections(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent("""
        mapper:
          ros__parameters:
            map_frame: world
            grid: {resolution: 0.5}
        planner:
          ros__parameters:
            mode: realtime
            goal_radius: 1.5
    """))
    setup = MissionSetup.from_file(path)
    assert setup.mapper_node.map_frame == "world" and setup.grid.resolution == 0.5
    assert setup.planner_node.mode == "realtime" and setup.planner_node.goal_radius == 1.5


def test_unknown_node_settings_are_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("planner:\n  ros__parameters:\n    goal_raduis: 1.0\n")
    with pytest.raises(ConfigError, match="goal_raduis"):
        MissionSetup.from_file(path)


def test_node_parameters_carry_the_derived_seeds_and_the_shared_workspace():
    setup = MissionSetup()
    setup.mission.seed = 7
    setup.workspace.vertices = [0.0, 0.0, 10.0, 0.0, 10.0, 10.0]
    seeds = mission_seeds(7)
    mapper, planner = setup.node_parameters("mapper"), setup.node_parameters("planner")
    assert mapper["mapping.seed"] == seeds["model"] and planner["seed"] == seeds["planner"]
    assert mapper["workspace.vertices"] == planner["workspace.vertices"] \
        == [0.0, 0.0, 10.0, 0.0, 10.0, 10.0]
    assert "workspace.no_go_vertices" not in planner  # empty lists are left out
    assert mapper["grid.resolution"] == 2.0 and planner["mode"] == "lockstep"
    vehicle = setup.node_parameters("simulated_auv")
    assert vehicle["seed"] == seeds["simulator"]
    assert vehicle["start_pose"] == [10.0, 0.0, math.pi]  # Mission's: lower right, facing west
    with pytest.raises(ConfigError, match="unknown node"):
        setup.node_parameters("mapper_typo")


def test_a_missing_or_broken_parameter_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="missing.yaml: no such parameter file"):
        MissionSetup.from_file(tmp_path / "missing.yaml")
    path = tmp_path / "broken.yaml"
    path.write_text("mapper:\n  ros__parameters: {mapping: [\n")
    with pytest.raises(ConfigError, match="broken.yaml: not a YAML parameter file: "):
        MissionSetup.from_file(path)
