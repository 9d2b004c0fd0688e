"""The launch files, as the launch interpreter reads them, start only executables, files and
parameters that exist, and each node once whatever their switches say.

Every parameter a file gives a node must be one the node declares (checked on the real node,
over rclpy, in tests/ros/test_node_parameter_files.py).
"""

import importlib.util
import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from poam_ros.bags import RecorderConfig
from poam_ros.ingest import IngestConfig
from poam_ros.launch_xml import InlineParameter, ParameterFile, expand
from poam_ros.params.files import read_yaml_value
from poam_ros.params.kinds import check_value_kind, parameter_kind
from poam_ros.params.node_settings import PlannerSettings
from poam_ros.sim.simulated_auv import SimulatedAuvConfig

ROOT = Path(__file__).resolve().parents[2]
# The configs of the executables that launch files give single parameters to.
CONFIGS = {"simulated_auv": SimulatedAuvConfig, "fleet_sim": SimulatedAuvConfig,
           "recorder": RecorderConfig, "sensor_ingest": IngestConfig,
           "planner": PlannerSettings}
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.xml"))
# other packages' executables the launch files may start, each behind a switch
FOREIGN = {"rviz2": "RViz", "foxglove_bridge": "foxglove_bridge (ros-<distro>-foxglove-bridge)"}


def switch_settings(path):
    """Every combination of the file's boolean arguments, as launch arguments."""
    switches = [a.get("name") for a in ET.parse(path).getroot().iter("arg")
                if a.get("default") in ("true", "false")]
    for values in itertools.product(("true", "false"), repeat=len(switches)):
        yield dict(zip(switches, values))


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {"sim.launch.xml", "robot.launch.xml"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_nodes_run_existing_modules_with_existing_files(path):
    for arguments in switch_settings(path):
        for node in expand(path, arguments):
            if node.package != "poam_ros":  # rviz2, foxglove_bridge: system packages
                assert node.executable in FOREIGN
                if node.executable == "rviz2":
                    assert Path(node.arguments[node.arguments.index("-d") + 1]).is_file()
                continue
            assert importlib.util.find_spec(node.module) is not None
            for source in node.parameters:
                assert not isinstance(source, ParameterFile) or source.path.is_file()


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_single_parameters_are_declared_with_their_type(path):
    for arguments in switch_settings(path):
        for node in expand(path, arguments):
            for source in node.parameters:
                if not isinstance(source, InlineParameter) or source.name == "use_sim_time" \
                        or node.package != "poam_ros":
                    continue
                config_cls = CONFIGS[node.executable]
                specs = {spec.name: spec for spec in config_cls.specs()}
                assert source.name in specs, f"{path.name}: {node.executable} has no " \
                                             f"parameter {source.name}"
                check_value_kind(f"{path.name}: {source.name}",
                                 parameter_kind(config_cls, specs[source.name]),
                                 read_yaml_value(source.value))


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_each_choice_of_the_switches_starts_each_node_once(path):
    """Every combination of the boolean arguments starts a node name at most once (the
    simulated AUV has two forms, with and without a recorder)."""
    for arguments in switch_settings(path):
        names = [node.fqn for node in expand(path, arguments)]
        assert len(names) == len(set(names)), (arguments, names)
        assert "/simulated_auv" in names or path.name != "sim.launch.xml"
