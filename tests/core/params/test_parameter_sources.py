"""Where a node's parameters come from: its files' sections, required values and per-node
file paths; no ROS needed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from poam_ros.params.files import ROS_NODE_PARAMETERS, load_node_parameters, section_matches
from poam_ros.params.node_settings import MapperSettings, for_node
from poam_ros.params.sources import (
    RequiredValues,
    file_report,
    params_file_arguments,
    unset_line,
)

ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path, text):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_params_files_are_read_off_the_ros_args_blocks_only():
    argv = ["mapper", "--params-file", "not_ros.yaml", "--ros-args", "-r", "__ns:=/auv1",
            "--params-file", "a.yaml", "-p", "x:=1", "--", "--params-file", "user.yaml",
            "--ros-args", "--params-file", "b.yaml"]
    assert params_file_arguments(argv) == ["a.yaml", "b.yaml"]
    assert params_file_arguments(["planner"]) == []


@pytest.mark.parametrize("key, node, matches", [
    ("mapper", "/mapper", True), ("mapper", "/auv1/mapper", False),
    ("/**/mapper", "/auv1/mapper", True), ("/**/mapper", "/mapper", True),
    ("/**", "/auv1/deep/mapper", True), ("/auv1/mapper", "/auv1/mapper", True),
    ("/auv2/mapper", "/auv1/mapper", False), ("/*/mapper", "/auv1/mapper", True),
    ("/*/mapper", "/mapper", False), ("/**/planner", "/auv1/mapper", False),
])
def test_sections_match_as_rcl_matches_them(key, node, matches):
    assert section_matches(key, node) is matches


def test_a_plain_section_under_a_namespace_is_a_warning_naming_file_and_sections(tmp_path):
    path = write(tmp_path, """
        mapper: {ros__parameters: {grid: {resolution: 5.0}}}
        planner: {ros__parameters: {goal_radius: 3.0}}
    """)
    report = file_report(path, "/auv1/mapper")
    assert report.warning
    assert report.text.startswith(f"{path} has no section for /auv1/mapper (sections: ")
    assert "mapper" in report.text and "planner" in report.text
    assert report.text.endswith("key them /**/mapper")
    assert file_report(path, "/mapper") is None


def test_a_shared_section_does_not_hide_a_dropped_one(tmp_path):
    """``/**`` applies, but the values meant for the mapper do not: still a warning."""
    path = write(tmp_path, """
        /**: {ros__parameters: {use_sim_time: true}}
        mapper: {ros__parameters: {grid: {resolution: 5.0}}}
    """)
    assert file_report(path, "/auv1/mapper").warning


def test_a_file_for_other_nodes_or_other_robots_is_no_warning(tmp_path):
    others = write(tmp_path, "simulated_auv: {ros__parameters: {time_scale: 2.0}}\n")
    report = file_report(others, "/mapper")
    assert not report.warning and report.text.endswith("nothing in it applies to this node")
    fleet = write(tmp_path, """
        auv1: {mapper: {ros__parameters: {grid: {resolution: 5.0}}}}
        /auv2/mapper: {ros__parameters: {grid: {resolution: 8.0}}}
    """)
    assert file_report(fleet, "/auv1/mapper") is None
    assert file_report(fleet, "/auv2/mapper") is None
    assert file_report(fleet, "/auv3/mapper").warning


def test_required_entries_and_their_alternatives():
    given = {"geo.origin_latitude", "altitude"}.__contains__
    required = RequiredValues(["geo.origin_latitude", "geo.origin_longitude", "depth|altitude",
                               "mission.max_time|mission.max_samples"])
    assert required.unset(given) == ["geo.origin_longitude",
                                     "mission.max_time|mission.max_samples"]
    assert unset_line("mission.max_time|mission.max_samples").startswith(
        "mission.max_time or mission.max_samples must be set for a robot")
    assert RequiredValues().unset(given) == []
    assert "required" in ROS_NODE_PARAMETERS  # beside a node's configs in every file


def test_the_robot_template_marks_every_required_value_unset_for_each_node():
    """config/robot.yaml as shipped sets none of its nodes' required values, and each node's
    section lists the workspace and the anchor."""
    path = ROOT / "config" / "robot.yaml"
    for node in ("sensor_ingest", "mapper", "planner"):
        parameters = load_node_parameters(path, f"/auv1/{node}")
        required = RequiredValues(parameters["required"])
        assert {"workspace.vertices|workspace.geojson",
                "geo.origin_latitude"} <= set(required.required)
        assert required.unset(parameters.__contains__) == required.required, node


def test_default_files_are_per_node():
    settings = MapperSettings()
    one, two = (Path(for_node(settings.save_path, name)) for name in ("/auv1/mapper",
                                                                     "/auv2/mapper"))
    assert one != two and one.parts[-3:] == ("auv1", "mapper", "map_state.pt")
    assert for_node(settings.export_path, "/mapper").endswith("/mapper/map.tif")
    assert for_node("/data/map.pt", "/auv1/mapper") == "/data/map.pt"
