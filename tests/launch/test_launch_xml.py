"""The launch-XML reader on the shipped launch files and on a file using every element,
attribute and substitution it understands; anything else is refused by name."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from poam_ros.launch_xml import (
    EXECUTABLES,
    InlineParameter,
    LaunchError,
    ParameterFile,
    expand,
    launch_file,
    package_share,
)

SHARE = package_share()
TOPOBATHY = SHARE / "config" / "topobathy.yaml"


def write(tmp_path, text, name="test.launch.xml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_sim_launch_starts_the_four_nodes_on_the_survey_file():
    nodes = expand(launch_file("sim.launch.xml"))
    assert [(n.executable, n.fqn) for n in nodes] == [
        ("simulated_auv", "/simulated_auv"), ("sensor_ingest", "/sensor_ingest"),
        ("mapper", "/mapper"), ("planner", "/planner")]
    assert all(n.package == "poam_ros" and n.module == EXECUTABLES[n.executable]
               for n in nodes)
    assert nodes[0].parameters == (ParameterFile(TOPOBATHY),)
    assert nodes[2].parameters == (ParameterFile(TOPOBATHY),
                                   InlineParameter("/**", "use_sim_time", "true"))
    assert nodes[2].ros_arguments(Path("unused")) == [
        "-r", "__node:=mapper", "--params-file", str(TOPOBATHY), "-p", "use_sim_time:=true"]


def test_sim_launch_with_a_recorder_holds_the_clock_for_it(tmp_path):
    params = tmp_path / "p.yaml"
    params.write_text("{}\n")
    nodes = expand(launch_file("sim.launch.xml"), {"params_file": str(params),
                                                   "record": "true"})
    assert [n.name for n in nodes] == ["recorder", "simulated_auv", "sensor_ingest", "mapper",
                                       "planner"]
    assert nodes[1].parameter_values()["hold_for"] == ["sensor_ingest", "recorder_intake"]
    assert nodes[0].parameters == (ParameterFile(params),)


def test_robot_launch_remaps_the_vehicles_topics():
    nodes = {n.name: n for n in expand(launch_file("robot.launch.xml"),
                                       {"odom": "/vehicle/odometry"})}
    assert set(nodes) == {"sensor_ingest", "mapper", "planner"}
    assert ("odom", "/vehicle/odometry") in nodes["sensor_ingest"].remaps
    assert ("odom", "/vehicle/odometry") in nodes["planner"].remaps
    assert nodes["mapper"].parameter_values()["use_sim_time"] is False
    assert nodes["planner"].parameter_values()["skip_pilot"] is False


def test_robot_launch_restarts_a_planner_without_its_pilot():
    nodes = {n.name: n for n in expand(launch_file("robot.launch.xml"),
                                       {"namespace": "auv1", "skip_pilot": "true"})}
    assert nodes["planner"].parameter_values()["skip_pilot"] is True
    assert "skip_pilot" not in nodes["sensor_ingest"].parameter_values()


EVERYTHING = """
    <launch>
      <arg name="params" description="required: no default"/>
      <arg name="ns" default="auv1"/>
      <arg name="flag" default="1"/>
      <let name="suffix" value="$(env POAM_TEST_SUFFIX fallback)"/>
      <push-ros-namespace namespace="fleet"/>
      <node pkg="poam_ros" exec="mapper" name="mapper" output="screen" args="--a 'b c'">
        <param from="$(var params)"/>
        <param name="map_frame" value="map_$(var suffix)"/>
        <remap from="samples" to="/in/samples"/>
      </node>
      <group if="$(var flag)">
        <let name="ns" value="inner"/>
        <push-ros-namespace namespace="$(var ns)"/>
        <node pkg="poam_ros" exec="planner" name="planner">
          <param name="goal_radius" value="2.5"/>
        </node>
        <node pkg="poam_ros" exec="planner" name="other" namespace="/abs"/>
      </group>
      <group unless="$(var flag)">
        <node pkg="poam_ros" exec="recorder" name="never"/>
      </group>
      <node unless="false" pkg="poam_ros" exec="sensor_ingest" name="ingest"
            namespace="$(var ns)"/>
      <node pkg="rviz2" exec="rviz2" name="rviz" if="false"
            args="-d $(find-pkg-share poam_ros)/config/poam_ros.rviz"/>
    </launch>
"""


def test_every_supported_element_attribute_and_substitution(tmp_path, monkeypatch):
    monkeypatch.delenv("POAM_TEST_SUFFIX", raising=False)
    params = write(tmp_path, "/**/mapper:\n  ros__parameters: {map_frame: odom, x: 1}\n",
                   "p.yaml")
    nodes = expand(write(tmp_path, EVERYTHING), {"params": str(params)})
    assert [n.fqn for n in nodes] == ["/fleet/mapper", "/fleet/inner/planner", "/abs/other",
                                      "/fleet/auv1/ingest"]
    mapper, planner, other, ingest = nodes
    assert mapper.arguments == ("--a", "b c")
    assert mapper.remaps == (("samples", "/in/samples"),)
    # the namespace is given (pushed): the inline value is keyed by the node's name
    assert mapper.parameters[1] == InlineParameter("/fleet/mapper", "map_frame", "map_fallback")
    assert mapper.parameter_values() == {"map_frame": "map_fallback", "x": 1}
    arguments = mapper.ros_arguments(tmp_path / "inline")
    assert arguments[:4] == ["-r", "__node:=mapper", "-r", "__ns:=/fleet"]
    written = Path(arguments[arguments.index(str(params)) + 2])
    assert written.parent == tmp_path / "inline" and "/fleet/mapper" in written.read_text()
    assert planner.parameter_values() == {"goal_radius": 2.5}
    assert other.namespace == "/abs" and ingest.namespace == "/fleet/auv1"  # group scoped
    monkeypatch.setenv("POAM_TEST_SUFFIX", "x")
    assert expand(write(tmp_path, EVERYTHING), {"params": str(params), "flag": "false"})[
        0].parameter_values()["map_frame"] == "map_x"
    assert [n.name for n in expand(write(tmp_path, EVERYTHING), {
        "params": str(params), "flag": "false"})] == ["mapper", "never", "ingest"]


def test_an_include_starts_the_file_s_nodes_with_its_arguments_under_the_namespace(tmp_path):
    """launch_ros's <include>: the included file's arguments are the <arg>s given (its
    defaults for the rest, none of the includer's), its nodes under the pushed namespace."""
    inner = write(tmp_path, """\
        <launch>
          <arg name="name" default="ingest"/>
          <arg name="prefix" default=""/>
          <node pkg="poam_ros" exec="sensor_ingest" name="$(var name)" namespace="inner">
            <remap from="samples" to="$(var prefix)samples"/>
          </node>
        </launch>""", "inner.launch.xml")
    outer = write(tmp_path, f"""\
        <launch>
          <arg name="prefix" default="/outer/"/>
          <group>
            <push-ros-namespace namespace="auv3"/>
            <include file="{inner}"><arg name="name" value="i$(var prefix)"/></include>
          </group>
          <include file="{inner}"/>
        </launch>""", "outer.launch.xml")
    first, second = expand(outer)
    assert (first.fqn, first.name, first.remaps) == ("/auv3/inner/i/outer/", "i/outer/",
                                                     (("samples", "samples"),))
    assert (second.fqn, second.remaps) == ("/inner/ingest", (("samples", "samples"),))
    with pytest.raises(LaunchError, match="no launch argument nope"):
        expand(write(tmp_path, f'<launch><include file="{inner}"><arg name="nope" value="1"/>'
                               f'</include></launch>', "bad.launch.xml"))


def test_an_include_is_taken_as_its_evaluated_condition_says(tmp_path):
    """fleet.launch.xml's vehicles: ``$(eval)`` of the argument's comparison, launch's
    Python expression (``True``/``False``), decides each include."""
    inner = write(tmp_path, """\
        <launch><arg name="k"/><node pkg="poam_ros" exec="planner" name="p$(var k)"/>
        </launch>""", "inner.launch.xml")
    outer = write(tmp_path, f"""\
        <launch>
          <arg name="n" default="2"/>
          <include file="{inner}"><arg name="k" value="0"/></include>
          <include if="$(eval '$(var n) >= 2')" file="{inner}"><arg name="k" value="1"/></include>
          <include unless="$(eval '$(var n) * 2 != 6 or not 2 >= 1')" file="{inner}">
            <arg name="k" value="2"/></include>
        </launch>""", "outer.launch.xml")
    assert [n.name for n in expand(outer, {"n": "1"})] == ["p0"]
    assert [n.name for n in expand(outer)] == ["p0", "p1"]
    assert [n.name for n in expand(outer, {"n": "3"})] == ["p0", "p1", "p2"]


def test_an_unspecified_namespace_keys_inline_values_for_every_node(tmp_path):
    nodes = expand(write(tmp_path, """
        <launch><node pkg="poam_ros" exec="mapper" name="mapper">
          <param name="evaluation_grid" value="7"/></node></launch>"""))
    assert nodes[0].parameters == (InlineParameter("/**", "evaluation_grid", "7"),)
    assert nodes[0].ros_arguments(tmp_path)[-2:] == ["-p", "evaluation_grid:=7"]


@pytest.mark.parametrize("body, message", [
    ('<timer period="1.0"/>', "<timer> in <launch>: element not understood"),
    ('<include file="x.launch.xml"><arg name="a" default="1"/></include>',
     "each <arg> takes name and value"),
    ('<arg name="given" value="1"/>', "value belongs to an <include>'s <arg>"),
    ('<node pkg="poam_ros" exec="mapper" name="m" respawn="true"/>',
     "attribute respawn not understood"),
    ('<node pkg="poam_ros" exec="mapper" name="m" if="$(var flag)"><env name="A" value="1"/>'
     '</node>', "<env> in <node>: element not understood"),
    ('<node pkg="poam_ros" exec="mapper" name="m" if="false" args="$(anon x)"/>',
     "substitution $(anon x) not understood"),
    ('<node pkg="poam_ros" exec="mapper" name="$(var flag"/>',
     "substitution not understood"),
    ('<node pkg="poam_ros" exec="mapper" name="m"><param name="a" value="1" type="int"/>'
     '</node>', "attribute type not understood"),
    ('<node pkg="poam_ros" exec="mapper" name="m" if="maybe"/>', "is not true, false, 1 or 0"),
    ('<node pkg="poam_ros" exec="mapper" name="$(var missing)"/>',
     "$(var missing): no such argument"),
    ('<node pkg="poam_ros" exec="mapper" name="m"><param from="a" name="b"/></node>',
     "from and name/value exclude each other"),
    ('<node pkg="poam_ros" exec="mapper" name="m" args="$(find-pkg-share rviz2)"/>',
     "only poam_ros is known here"),
    ('<node pkg="poam_ros" exec="mapper" name="m" args="$(env POAM_NOT_SET_ANYWHERE)"/>',
     "not set"),
    ('<arg name="needed"/>', "has no default and was not given"),
    ('''<node pkg="poam_ros" exec="mapper" name="$(eval 'open.x')"/>''',
     "Attribute not understood (literals and operators only)"),
    ('''<node pkg="poam_ros" exec="mapper" name="$(eval 'flag')"/>''', "Name not understood"),
    ('''<node pkg="poam_ros" exec="mapper" name="$(eval '1 / 0')"/>''', "division by zero"),
    ('''<node pkg="poam_ros" exec="mapper" name="$(eval '1 >')"/>''', "invalid syntax"),
])
def test_anything_outside_the_subset_is_refused_by_name(tmp_path, body, message, monkeypatch):
    monkeypatch.delenv("POAM_NOT_SET_ANYWHERE", raising=False)
    path = write(tmp_path, f'<launch><arg name="flag" default="true"/>{body}</launch>')
    with pytest.raises(LaunchError, match=re.escape(message)):
        expand(path)


def test_an_undeclared_argument_and_a_foreign_executable_are_refused(tmp_path):
    path = write(tmp_path, '<launch><node pkg="rviz2" exec="rviz2" name="rviz"/></launch>')
    with pytest.raises(LaunchError, match="no launch argument record"):
        expand(path, {"record": "true"})
    with pytest.raises(LaunchError, match="rviz2/rviz2 is not an executable of poam_ros"):
        _ = expand(path)[0].module
