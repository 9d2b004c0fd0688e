"""A parameter file read by our loader and by rcl (``--params-file``) gives one config."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.node import Node  # noqa: E402

from poam_ros.params import Params, param  # noqa: E402
from poam_ros.params.files import load_configs, load_node_parameters  # noqa: E402
from poam_ros.ros.parameters import declare_config  # noqa: E402


@dataclass
class ModelConfig(Params):
    num_inducing: int = param(500, "maximum number of inducing inputs", low=1)
    learning_rate: float = param(1e-2, "Adam learning rate", low=0.0)


@dataclass
class NodeConfig(Params):
    world_frame: str = param("map", "frame of the map and plans")
    no_go_counts: list[int] = param([], "vertices per no-go zone")


PARAMS = """
    mapper:
      ros__parameters:
        world_frame: utm
        model:
          num_inducing: 7
          learning_rate: 1e-3
    /**:
      ros__parameters:
        use_sim_time: true
        world_frame: odom
    /*/mapper:
      ros__parameters:
        no_go_counts: [4, 3]
    auv:
      mapper:
        ros__parameters:
          no_go_counts: [5]
"""


@pytest.mark.parametrize("namespace, expected", [
    # The /** section comes later than mapper's own, so its world_frame wins.
    ("/", {"": NodeConfig("odom", []), "model": ModelConfig(7, 1e-3)}),
    ("/auv", {"": NodeConfig("odom", [5]), "model": ModelConfig()}),
])
def test_loader_and_rcl_agree(tmp_path, ros_domain_id, namespace, expected):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(PARAMS))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_id,
               args=["--ros-args", "--params-file", str(path)])
    try:
        node = Node("mapper", namespace=namespace, context=context)
        declared = {"": declare_config(node, NodeConfig),
                    "model": declare_config(node, ModelConfig, "model")}
        name = f"{namespace.rstrip('/')}/mapper"
        assert declared == expected
        assert load_configs(path, name, {"": NodeConfig, "model": ModelConfig}) == expected
        assert node.get_parameter("use_sim_time").value is True
        assert load_node_parameters(path, name)["use_sim_time"] is True
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


FIRST = """
    /**:
      ros__parameters: {x: 1, y: 1, z: 1, w: 1}
    /**/mapper:
      ros__parameters: {x: 2, y: 2}
    mapper:
      ros__parameters: {y: 3}
    /*/mapper:
      ros__parameters: {z: 4}
"""
WILDCARD = "/**:\n  ros__parameters: {x: 10, w: 10}\n"
SPECIFIC = """
    /auv1/mapper:
      ros__parameters: {y: 30}
    /**/mapper:
      ros__parameters: {y: 20, v: 20}
"""


@pytest.mark.parametrize("namespace", ["/", "/auv1"])
@pytest.mark.parametrize("files, rule", [
    (["first"], None), (["first", "wildcard"], None), (["first", "specific"], None),
    (["specific", "first"], None), (["first"], "x:=99"), (["specific"], "w:=99"),
])
def test_several_files_and_a_rule_merge_as_rcl_merges_them(tmp_path, ros_domain_id, files,
                                                          rule, namespace):
    """The sections of several files (and ``-p``, a ``/**`` section) form rcl's one table:
    what a live node gets is what :func:`load_node_parameters` and the launch interpreter
    give."""
    from poam_ros.launch_xml import InlineParameter, LaunchNode, ParameterFile

    texts = {"first": FIRST, "wildcard": WILDCARD, "specific": SPECIFIC}
    paths = []
    for name in files:
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(textwrap.dedent(texts[name]))
    arguments = ["--ros-args", *(a for p in paths for a in ("--params-file", str(p)))]
    sources = [ParameterFile(p) for p in paths]
    if rule is not None:
        arguments += ["-p", rule]
        sources.append(InlineParameter("/**", *rule.split(":=")))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_id, args=arguments)
    try:
        node = Node("mapper", namespace=namespace, context=context,
                    automatically_declare_parameters_from_overrides=True)
        live = {name: node.get_parameter(name).value for name in "vwxyz"
                if node.has_parameter(name)}
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    fqn = f"{namespace.rstrip('/')}/mapper"
    launched = LaunchNode("poam_ros", "mapper", "mapper", namespace.rstrip("/"),
                          tuple(sources)).parameter_values()
    assert launched == live
    if rule is None:
        assert load_node_parameters(paths, fqn) == live
