"""robot.launch.xml puts every node in the robot's namespace, offers a remap argument for
every input of the ingest and the planner, sends the map's topics to ``map_prefix`` (a
fleet's central mapper), and defaults to the robot template."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.feeders import input_feeders

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ET.parse(ROOT / "launch" / "robot.launch.xml").getroot()
# The ingest node's fixed subscriptions (poam_ros/ros/ingest_node.py) beside its feeders'.
INGEST_FIXED = ("odom", "sonar/range", "sonar/swath", "fix", "plan")
# The topics between a robot's nodes and its map, which map_prefix moves to a central mapper.
MAP_TOPICS = {"sensor_ingest": {"samples"},
              "planner": {"map", "uncertainty/query", "uncertainty/response"}}


def node(name):
    [found] = [n for n in LAUNCH.iter("node") if n.get("name") == name]
    return found


def remapped(name) -> dict[str, str]:
    """``from`` -> the argument it is remapped to, the map's topics aside."""
    return {r.get("from"): re.fullmatch(r"\$\(var (\w+)\)", r.get("to")).group(1)
            for r in node(name).iter("remap") if r.get("from") not in MAP_TOPICS[name]}


def test_the_map_s_topics_follow_map_prefix_and_the_mapper_is_a_switch():
    for name, topics in MAP_TOPICS.items():
        prefixed = {r.get("from"): r.get("to") for r in node(name).iter("remap")
                    if r.get("from") in topics}
        assert prefixed == {topic: f"$(var map_prefix){topic}" for topic in topics}
    assert node("mapper").get("if") == "$(var mapper)"


def test_every_node_is_in_the_namespace_argument():
    arguments = {a.get("name"): a.get("default") for a in LAUNCH.iter("arg")}
    assert arguments["namespace"] == ""
    assert arguments["params_file"] == "$(find-pkg-share poam_ros)/config/robot.yaml"
    # the three nodes, and foxglove_bridge with foxglove:=true
    assert [n.get("namespace") for n in LAUNCH.iter("node")] == ["$(var namespace)"] * 4


def test_every_input_has_a_remap_argument():
    every_input = IngestConfig(imu_attitude=True, depth_from_pressure=True,
                               channels=["temperature"])
    topics = {*INGEST_FIXED, *(feeder.topic for feeder in input_feeders(every_input))}
    arguments = {a.get("name") for a in LAUNCH.iter("arg")}
    assert set(remapped("sensor_ingest")) == topics
    assert set(remapped("planner")) == {"odom", "plan"}
    for name in ("sensor_ingest", "planner"):
        assert set(remapped(name).values()) <= arguments
    # One argument per topic, shared by the nodes that read it.
    assert remapped("planner").items() <= remapped("sensor_ingest").items()
