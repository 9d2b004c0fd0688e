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
