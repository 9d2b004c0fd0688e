"""sim.launch.xml's ``vehicle`` argument: ``mavlink`` adds the vehicle_bridge on sim time, the
default leaves the graph as it was; ``$(equals)`` and nested substitutions as launch_ros
reads them."""

import pytest

from poam_ros.launch_xml import InlineParameter, LaunchError, expand
from poam_ros.params import ConfigError
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.setup.sim_launch import BRIDGE, mavlink_parameters, sim_nodes
from poam_ros.sim.mavlink_vehicle import ARRIVAL_MARGIN


def test_mavlink_adds_the_bridge_on_sim_time(tmp_path):
    params = tmp_path / "p.yaml"
    params.write_text("/**:\n  ros__parameters: {}\n")
    plain = [node.name for node in sim_nodes(params)]
    nodes = {node.name: node for node in sim_nodes(params, vehicle="mavlink")}
    assert BRIDGE not in plain and set(nodes) == set(plain) | {BRIDGE}
    assert InlineParameter("/**", "use_sim_time", "true") in nodes[BRIDGE].parameters


def test_equals_and_nested_substitutions(tmp_path):
    path = tmp_path / "t.launch.xml"
    path.write_text('<launch><arg name="v" default="a"/>'
                    '<node if="$(equals $(var v) b)" pkg="poam_ros" exec="mapper" name="m"/>'
                    '<node unless="$(equals $(var v) b)" pkg="poam_ros" exec="planner" '
                    'name="p"/></launch>')
    assert [n.name for n in expand(path)] == ["p"]
    assert [n.name for n in expand(path, {"v": "b"})] == ["m"]
    path.write_text('<launch><node if="$(equals a)" pkg="poam_ros" exec="mapper" name="m"/>'
                    '</launch>')
    with pytest.raises(LaunchError, match="wrong number"):
        expand(path)


def test_mavlink_parameters_tie_both_ends_and_widen_arrival():
    setup = MissionSetup()
    with pytest.raises(ConfigError, match="geodetic anchor"):
        mavlink_parameters(setup, 14600)
    setup.geo = setup.geo.replace(anchor="latlon", origin_latitude=47.0, origin_longitude=8.0)
    values = mavlink_parameters(setup, 14600)
    assert values["simulated_auv"]["mavlink.connection"] == "udpout:127.0.0.1:14600"
    assert values[BRIDGE]["connection"] == "udpin:127.0.0.1:14600"
    assert values[BRIDGE]["geo.origin_latitude"] == 47.0
    radius = setup.vehicle.goal_radius + ARRIVAL_MARGIN
    assert values[BRIDGE]["goal_radius"] == values["sensor_ingest"]["goal_radius"] == \
        values["planner"]["goal_radius"] == radius
    assert values[BRIDGE]["vertical"] == "surface"  # the paper's plane mode
