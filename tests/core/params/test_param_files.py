"""The shared parameter-YAML loader, on small files; no ROS needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from poam_ros.params import ConfigError, Params, param
from poam_ros.params.files import (
    load_config,
    load_configs,
    load_node_parameters,
    section_matches,
    sections_for,
)


@dataclass
class ModelConfig(Params):
    num_inducing: int = param(500, "maximum number of inducing inputs", low=1)
    learning_rate: float = param(1e-2, "Adam learning rate", low=0.0)
    kernel: str = param("attentive", "covariance function", choices=("attentive", "rbf"))


@dataclass
class FrameConfig(Params):
    world_frame: str = param("map", "frame of the map and plans")
    bounds: list = param([-10.0, 10.0], "x range", unit="m")


def write(tmp_path, text, name="params.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


MISSION = """
    /**:
      ros__parameters:
        use_sim_time: true
        world_frame: odom
    mapper:
      ros__parameters:
        world_frame: map
        model:
          num_inducing: 200
          learning_rate: 1e-3
    planner:
      ros__parameters:
        bounds: [0.0, 5.0]
"""


def test_sections_merge_in_file_order_with_nested_names_dotted(tmp_path):
    path = write(tmp_path, MISSION)
    assert load_node_parameters(path, "mapper") == {
        "use_sim_time": True, "world_frame": "map",
        "model.num_inducing": 200, "model.learning_rate": 1e-3}
    assert load_node_parameters(path, "/planner") == {
        "use_sim_time": True, "world_frame": "odom", "bounds": [0.0, 5.0]}
    assert load_node_parameters(path, "sim") == {"use_sim_time": True, "world_frame": "odom"}


def test_namespaces_and_wildcards_match_as_ros_does(tmp_path):
    path = write(tmp_path, """
        auv1:
          mapper:
            ros__parameters: {a: 1}
        /auv2/mapper:
          ros__parameters: {b: 2}
        /*/mapper:
          ros__parameters: {c: 3}
        /**/planner:
          ros__parameters: {d: 4}
        /*/*/sim:
          ros__parameters: {e: 5}
    """)
    assert load_node_parameters(path, "/auv1/mapper") == {"a": 1, "c": 3}
    assert load_node_parameters(path, "/auv2/mapper") == {"b": 2, "c": 3}
    assert load_node_parameters(path, "mapper") == {}
    assert load_node_parameters(path, "planner") == {"d": 4}
    assert load_node_parameters(path, "/x/y/planner") == {"d": 4}
    assert load_node_parameters(path, "/auv7/sim") == {}
    assert load_node_parameters(path, "/a/auv7/sim") == {"e": 5}
    assert load_node_parameters(write(tmp_path, "", "empty.yaml"), "mapper") == {}


def test_sections_apply_in_rcls_table_order_across_files(tmp_path):
    """As rclpy applies them (checked against a live node): one table of keys in the order
    they first appear over all files; a key seen again updates its first entry."""
    first = write(tmp_path, """
        /**:
          ros__parameters: {x: 1, y: 1, z: 1, w: 1}
        /**/mapper:
          ros__parameters: {x: 2, y: 2}
        mapper:
          ros__parameters: {y: 3}
        /*/mapper:
          ros__parameters: {z: 4}
    """, "first.yaml")
    later_wildcard = write(tmp_path, "/**:\n  ros__parameters: {x: 10, w: 10}\n", "b.yaml")
    specific = write(tmp_path, """
        /auv1/mapper:
          ros__parameters: {y: 30}
        /**/mapper:
          ros__parameters: {y: 20, v: 20}
    """, "c.yaml")
    assert load_node_parameters(first, "mapper") == {"x": 2, "y": 3, "z": 1, "w": 1}
    assert load_node_parameters(first, "/auv1/mapper") == {"x": 2, "y": 2, "z": 4, "w": 1}
    # a later file's /** merges into the first /** entry: /**/mapper still overrides it
    assert load_node_parameters([first, later_wildcard], "mapper") == {
        "x": 2, "y": 3, "z": 1, "w": 10}
    assert load_node_parameters([first, specific], "/auv1/mapper") == {
        "x": 2, "y": 30, "z": 4, "w": 1, "v": 20}
    assert load_node_parameters([specific, first], "/auv1/mapper") == {
        "x": 1, "y": 1, "z": 4, "w": 1, "v": 20}


def test_sections_for_names_the_matching_sections_in_order(tmp_path):
    tree = {"/**": {"ros__parameters": {"a": 1}},
            "auv1": {"mapper": {"ros__parameters": {"b": {"c": 2}}}},
            "/**/planner": {"ros__parameters": {"d": 3}}}
    assert sections_for(tree, "/auv1/mapper") == [("/**", {"a": 1}),
                                                  ("auv1/mapper", {"b.c": 2})]
    assert sections_for(tree, "/auv2/planner") == [("/**", {"a": 1}), ("/**/planner", {"d": 3})]
    assert sections_for({"mapper": {"ros__parameters": {}}}, "/auv1/mapper") == []
    assert section_matches("/**/mapper", "mapper") and section_matches("mapper", "/mapper")
    assert not section_matches("mapper", "/auv1/mapper")
    assert not section_matches("/*/mapper", "/a/b/mapper")


@pytest.mark.parametrize("key", ["/auv*/sim", "auv1//mapper", "/mapper-1"])
def test_keys_rcl_refuses_are_errors(tmp_path, key):
    path = write(tmp_path, f"{key}:\n  ros__parameters: {{a: 1}}\n")
    with pytest.raises(ConfigError, match="neither a name"):
        load_node_parameters(path, "mapper")


def test_config_from_its_section(tmp_path):
    path = write(tmp_path, MISSION)
    model = load_config(path, "mapper", ModelConfig, "model")
    assert model == ModelConfig(num_inducing=200, learning_rate=1e-3)
    # use_sim_time is rclpy's own parameter and may stand beside the fields.
    assert load_config(path, "planner", FrameConfig) == FrameConfig("odom", [0.0, 5.0])
    configs = load_configs(path, "mapper", {"": FrameConfig, "model": ModelConfig})
    assert configs == {"": FrameConfig("map"), "model": model}


@pytest.mark.parametrize("body, message", [
    ("model: {num_inducng: 10}", r"ModelConfig: unknown parameter\(s\) num_inducng"),
    ("model: {learning_rate: 1}", r"learning_rate: expected double, got 1 \(integer\).*1\.0"),
    ("model: {num_inducing: 10.0}", r"num_inducing: expected integer, got 10.0 \(double\)"),
    ("model: {num_inducing: 0}", "num_inducing must be >= 1"),
    ("model: {kernel: matern}", "kernel must be one of"),
    ("model: {num_inducing: '10'}", r"expected integer, got '10' \(string\)"),
])
def test_bad_values_are_errors_naming_file_node_and_key(tmp_path, body, message):
    path = write(tmp_path, f"mapper:\n  ros__parameters:\n    {body}\n")
    with pytest.raises(ConfigError, match=message) as error:
        load_config(path, "mapper", ModelConfig, "model")
    assert str(error.value).startswith(f"{path}: node /mapper under 'model': ")


@pytest.mark.parametrize("bounds, message", [
    ("[1, 2]", r"bounds: expected double_array, got \[1, 2\] \(integer_array\)"),
    ("[1.0, 2]", r"got \[1.0, 2\] \(no ROS parameter type\)"),
])
def test_lists_must_have_one_element_type(tmp_path, bounds, message):
    path = write(tmp_path, f"planner:\n  ros__parameters:\n    bounds: {bounds}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path, "planner", FrameConfig)


def test_load_configs_refuses_parameters_no_config_declares(tmp_path):
    path = write(tmp_path, """
        mapper:
          ros__parameters:
            use_sim_time: true
            qos_overrides:
              /map:
                publisher: {depth: 1}
            modle: {num_inducing: 10}
    """)
    with pytest.raises(ConfigError, match=r"node /mapper: unknown parameter\(s\) "
                                          r"modle.num_inducing$"):
        load_configs(path, "mapper", {"": FrameConfig, "model": ModelConfig})


@pytest.mark.parametrize("text, message", [
    ("- mapper\n", "expected a mapping of node names"),
    ("mapper:\n  ros__parameters: [1, 2]\n", "ros__parameters of /mapper must be a mapping"),
    ("mapper:\n  rosparameters: 3\n", "'rosparameters' under /mapper is neither"),
])
def test_malformed_files_are_errors(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_node_parameters(write(tmp_path, text), "mapper")


def test_stock_yaml_loader_is_left_alone(tmp_path):
    import yaml

    load_node_parameters(write(tmp_path, MISSION), "mapper")
    assert yaml.safe_load("x: 1e-3") == {"x": "1e-3"}


def test_loader_imports_no_ros():
    blocked = "import sys; sys.modules['rclpy'] = None; import poam_ros.params.files"
    subprocess.run([sys.executable, "-c", blocked], check=True)
