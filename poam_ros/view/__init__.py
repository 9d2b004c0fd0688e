"""The live view: a Foxglove WebSocket server showing a mission as it runs (no ROS needed)."""

from poam_ros.view.frames import ViewFrame
from poam_ros.view.server import LiveView, ViewConfig

__all__ = ["LiveView", "ViewConfig", "ViewFrame"]
