"""Vehicles that fly the plan, free of ROS: a MAVLink bridge and a simulated autopilot.

* :mod:`.conversions`: MAVLink fields ↔ the map frame (units, NED ↔ ENU, depth sign).
* :mod:`.clock`: the autopilot's boot time on the stack's clock; reboots.
* :mod:`.safety`: :class:`SafetyGate`, the workspace, depth and seabed limits.
* :mod:`.telemetry`: the autopilot's messages as map-frame records, bad ones counted.
* :mod:`.link`: one pymavlink endpoint.
* :mod:`.bridge`: :class:`VehicleBridge`, plans in, guided targets out.
* :mod:`.autopilot`: :class:`SimulatedAutopilot`, the simulator behind MAVLink.

docs/vehicle.md describes the conventions and the safety rules.
"""

from poam_ros.vehicle.autopilot import SimulatedAutopilot
from poam_ros.vehicle.bridge import VehicleBridge
from poam_ros.vehicle.clock import AutopilotClock
from poam_ros.vehicle.config import VehicleBridgeConfig
from poam_ros.vehicle.safety import SafetyGate

__all__ = ["AutopilotClock", "SafetyGate", "SimulatedAutopilot", "VehicleBridge",
           "VehicleBridgeConfig"]
