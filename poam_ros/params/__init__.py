"""Configuration shared by the core, the nodes and the command line, free of ROS.

:mod:`.base` defines the typed, validated dataclasses every component is configured by;
:mod:`.kinds` the ROS parameter type each field takes; :mod:`.files` loads ROS parameter
files into them; :mod:`.node_settings` holds the nodes' own settings and
:mod:`poam_ros.setup.mission_setup` the whole mission's. The rclpy side (declaring parameters
on a node) is :mod:`poam_ros.ros.parameters`.
"""

from poam_ros.params.base import ConfigError, Params, ParamSpec, group, param

__all__ = ["ConfigError", "ParamSpec", "Params", "group", "param"]
