"""The shared parameter file loads into MissionSetup, node-only keys checked but not kept."""

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from poam_ros.bags import RecorderConfig
from poam_ros.geo import GeoReference
from poam_ros.ingest import IngestConfig
from poam_ros.params import ConfigError
from poam_ros.params.files import load_configs
from poam_ros.setup.mission_setup import MissionSetup, mission_seeds
from poam_ros.setup.terrain import terrain_from_config
from poam_ros.sim import lower_right_start
from poam_ros.workspace import Workspace, WorkspaceConfig

CONFIG = Path(__file__).resolve().parents[3] / "config" / "poam_ros.yaml"
INGEST_CONFIGS = {"": IngestConfig, "workspace": WorkspaceConfig}


def test_the_package_file_loads():
    setup = MissionSetup.from_file(CONFIG)
    assert setup.vehicle.goal_radius == 0.1 and setup.sonar.rate == 3.0


def test_the_package_file_spells_out_the_defaults():
    """A file naming only some keys (config/authors_robot.yaml) means the package file's
    values for the others, except those the simulated graph needs from every file
    (MissionSetup.node_parameters: the seeds, the evaluation grid)."""
    setup, default = MissionSetup.from_file(CONFIG), MissionSetup()
    seeds = mission_seeds(default.mission.seed)
    assert setup.mapping == default.mapping.replace(seed=seeds["model"])
    assert setup.planner_node == default.planner_node.replace(seed=seeds["planner"])
    assert setup.mapper_node == default.mapper_node.replace(
        evaluation_grid=default.mission.eval_grid)
    setup.mapping, setup.planner_node = default.mapping, default.planner_node
    setup.mapper_node = default.mapper_node
    assert setup == default
    ingest = load_configs(CONFIG, "sensor_ingest", INGEST_CONFIGS)
    assert ingest == {"": IngestConfig(), "workspace": WorkspaceConfig()}
    assert load_configs(CONFIG, "recorder", {"": RecorderConfig}) == {"": RecorderConfig()}


def test_simulated_auv_keys_the_mission_does_not_use_are_still_checked(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent("""
        simulated_auv:
          ros__parameters:
            time_scale: 50.0
            multibeam: {enabled: true}
    """))
    assert MissionSetup.from_file(path) == MissionSetup()
    path.write_text(textwrap.dedent("""
        simulated_auv:
          ros__parameters:
            time_scael: 50.0
    """))
    with pytest.raises(ConfigError, match="time_scael"):
        MissionSetup.from_file(path)


def test_the_authors_robot_file_changes_only_the_robot():
    """config/authors_robot.yaml: the POAM authors' simulated robot, all else the defaults."""
    path = CONFIG.with_name("authors_robot.yaml")
    setup, default = MissionSetup.from_file(path), MissionSetup.from_file(CONFIG)
    assert setup.vehicle == default.vehicle.replace(reverse=True, max_yaw_rate=math.pi)
    assert setup.sonar == default.sonar.replace(rate=2.5)
    assert setup.ingest == default.ingest.replace(sonar_rate=2.5)
    setup.vehicle, setup.sonar, setup.ingest = default.vehicle, default.sonar, default.ingest
    assert setup == default


def node_configs(path, node: str) -> dict:
    """Every config ``node`` declares, as the file sets it."""
    defaults = MissionSetup()
    classes = {prefix: type(getattr(defaults, attribute))
               for prefix, attribute in MissionSetup.NODES[node].items()}
    return load_configs(path, node, {**MissionSetup.ROS_ONLY.get(node, {}), **classes})


def test_the_default_survey_file_is_one_consistent_world():
    """config/topobathy.yaml, the embedded bathymetry at true scale: what it sets agrees
    across the nodes that a `ros2 launch` hands it to one by one (the anchor, the vehicle's
    radii and rates, the workspace and the start in its corner)."""
    path = CONFIG.with_name("topobathy.yaml")
    setup = MissionSetup.from_file(path)
    assert setup.terrain.placement == "georeferenced" and setup.terrain.path == ""
    assert setup.geo.anchor == "latlon"
    for node in ("simulated_auv", "sensor_ingest", "planner"):
        assert node_configs(path, node)["geo"] == setup.geo, node
    assert setup.ingest_workspace == setup.workspace
    assert setup.ingest.sonar_rate == setup.sonar.rate
    assert setup.ingest.goal_radius == setup.planner_node.goal_radius == \
        setup.vehicle.goal_radius
    assert setup.max_entropy.turning_radius == setup.vehicle.turn_radius
    assert (setup.planner_node.vertical_mode, setup.planner_node.altitude) == \
        (setup.vehicle.vertical_mode, setup.vehicle.altitude)  # the plan's z is the vehicle's
    auv = node_configs(path, "simulated_auv")[""]
    assert auv.start_pose == pytest.approx(
        lower_right_start(Workspace.from_config(setup.workspace).bounds))
    terrain = terrain_from_config(setup.terrain, GeoReference.from_config(setup.geo))
    xmin, xmax, ymin, ymax = Workspace.from_config(setup.workspace).bounds
    assert terrain.contains(np.array([[xmin, ymin], [xmax, ymax]])).all()
    assert xmax - xmin == ymax - ymin == 20_000.0  # metres that are metres
    assert terrain.elevation(np.array([[xmin, 0.0]]))[0] < -500.0  # the slope in the west
    assert terrain.elevation(np.array([[xmax, 0.0]]))[0] > -200.0  # the shelf in the east


def test_the_two_channel_file_names_the_ingests_channels_for_the_mapper():
    """config/two_channels.yaml launched as it is (ros2 launch, no poam-ros to pass them):
    the mapper maps the channels the ingest publishes."""
    setup = MissionSetup.from_file(CONFIG.with_name("two_channels.yaml"))
    assert setup.ingest.channels == setup.mapper_node.channels == ["temperature"]
    assert setup.temperature.enabled
