"""rosbag2 bags without ROS: write (:class:`BagWriter`), read damaged or whole
(:class:`BagReader`), message definitions (:class:`MessageTypes`), the recorder's
configuration, and the offline remap (:mod:`poam_ros.bags.remap`; its topics and settings:
:mod:`~poam_ros.bags.remap_config`; what it reads of a bag: :mod:`~poam_ros.bags.recording`).

The rclpy sides (the recorder node, the player) live in :mod:`poam_ros.ros`.
"""

from poam_ros.bags.bag_reader import BagReader
from poam_ros.bags.bag_records import BagError, BagMessage, ReadReport, TopicInfo
from poam_ros.bags.bag_writer import (
           STORAGES,
           BagWriteError,
           BagWriter,
           check_new_bag,
           default_bag_path,
)
from poam_ros.bags.message_types import STACK_TOPICS, MessageTypes, UnknownMessageType
from poam_ros.bags.recorder_config import RecorderConfig

__all__ = ["BagError", "BagMessage", "BagReader", "ReadReport", "TopicInfo", "STORAGES",
           "BagWriteError", "BagWriter", "check_new_bag", "default_bag_path", "STACK_TOPICS",
           "MessageTypes", "UnknownMessageType", "RecorderConfig"]
