"""The shared parameter file loads into MissionSetup, node-only keys checked but not kept."""

import math
import textwrap
from pathlib import Path

import pytest

from poam_ros.bags import RecorderConfig
from poam_ros.ingest import IngestConfig
from poam_ros.params import ConfigError
from poam_ros.params.files import load_configs
from poam_ros.params.mission_setup import MissionSetup
from poam_ros.workspace import WorkspaceConfig

CONFIG = Path(__file__).resolve().parents[3] / "config" / "poam_ros.yaml"
INGEST_CONFIGS = {"": IngestConfig, "workspace": WorkspaceConfig}


def test_the_package_file_loads():
    setup = MissionSetup.from_file(CONFIG)
    assert setup.vehicle.goal_radius == 0.1 and setup.sonar.rate == 3.0


def test_the_package_file_spells_out_the_defaults():
    """A file naming only some keys (config/authors_robot.yaml) means the package file's
    values for the others."""
    assert MissionSetup.from_file(CONFIG) == MissionSetup()
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
