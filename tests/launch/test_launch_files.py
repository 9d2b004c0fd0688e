"""The launch files name only nodes, executables, files and parameters that exist.

XML launch files are checked without the launch system (it has no wheels): every ``<node>``
must name a node executable of this package, every parameter file must exist in the package, and
every parameter that file gives the node must be one the node declares (checked on the real
node, over rclpy, in tests/ros/test_launch_parameters.py).
"""

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from poam_ros.bags import RecorderConfig
from poam_ros.params.kinds import check_value_kind, parameter_kind
from poam_ros.ros.executables import EXECUTABLES
from poam_ros.sim.simulated_auv import SimulatedAuvConfig

ROOT = Path(__file__).resolve().parents[2]
# The configs of the executables that launch files give single parameters to.
CONFIGS = {"simulated_auv": SimulatedAuvConfig, "recorder": RecorderConfig}
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.xml"))
SHARE = "$(find-pkg-share poam_ros)/"


def console_scripts() -> set[str]:
    """The node executables (installed as lib/poam_ros/<name>: tests/test_dependencies.py)."""
    return set(EXECUTABLES)


def launch_nodes(path):
    return [n for n in ET.parse(path).getroot().iter("node") if n.get("pkg") == "poam_ros"]


def resolve(value: str, path: Path) -> Path:
    """A launch-file path under the package share directory, as it lies in the source tree."""
    args = {a.get("name"): a.get("default") for a in ET.parse(path).getroot().iter("arg")}
    value = re.sub(r"\$\(var (\w+)\)", lambda m: args[m.group(1)], value)
    assert value.startswith(SHARE), f"{path.name}: {value} is not under the package share"
    return ROOT / value[len(SHARE):]


def test_there_are_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {"sim.launch.xml", "robot.launch.xml"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_nodes_name_existing_executables_and_files(path):
    scripts = console_scripts()
    nodes = launch_nodes(path)
    assert nodes
    for node in nodes:
        assert node.get("exec") in scripts, f"{path.name}: no node executable {node.get('exec')}"
        for param in node.iter("param"):
            if param.get("from"):
                assert resolve(param.get("from"), path).is_file()
    for node in ET.parse(path).getroot().iter("node"):
        if node.get("pkg") == "rviz2":
            config = re.search(r"-d (.+)$", node.get("args").strip()).group(1)
            assert resolve(config, path).is_file()


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_single_parameters_are_declared_with_their_type(path):
    for node in launch_nodes(path):
        for param in node.iter("param"):
            name, value = param.get("name"), param.get("value")
            if name is None or name == "use_sim_time":
                continue
            config_cls = CONFIGS[node.get("exec")]
            specs = {spec.name: spec for spec in config_cls.specs()}
            assert name in specs, f"{path.name}: {node.get('exec')} has no parameter {name}"
            if "$(" not in value:  # as launch_ros reads a literal: YAML
                check_value_kind(f"{path.name}: {name}",
                                 parameter_kind(config_cls, specs[name]), yaml.safe_load(value))


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_each_choice_of_the_switches_starts_each_node_once(path):
    """``if``/``unless`` on nodes name boolean args; every combination of them starts a node
    name at most once (the simulated AUV has two forms, with and without a recorder)."""
    root = ET.parse(path).getroot()
    switches = [a.get("name") for a in root.iter("arg") if a.get("default") in ("true", "false")]
    for values in itertools.product((True, False), repeat=len(switches)):
        on = dict(zip(switches, values))

        def active(node):
            for attribute, want in (("if", True), ("unless", False)):
                condition = node.get(attribute)
                if condition is not None:
                    name = re.fullmatch(r"\$\(var (\w+)\)", condition).group(1)
                    if on[name] != want:
                        return False
            return True

        names = [node.get("name") for node in root.iter("node") if active(node)]
        assert len(names) == len(set(names)), (on, names)
        assert "simulated_auv" in names or path.name != "sim.launch.xml"
