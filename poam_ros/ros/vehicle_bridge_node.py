"""ROS 2 node ``vehicle_bridge``: the plan to a MAVLink autopilot, its state back to the stack.

A thin adapter around :class:`~poam_ros.vehicle.bridge.VehicleBridge` (docs/vehicle.md): a
steady timer at ``tick_rate`` reads the link and commands, on the node's clock (ROS time,
or the simulator's with ``use_sim_time``); the records it returns are published. The
autopilot's boot time is mapped onto that clock (:mod:`poam_ros.vehicle.clock`), so every
message is stamped with when the autopilot measured it.

A managed node (:class:`~poam_ros.ros.managed.ManagedNode`): configure checks the
parameters and opens the link (the timer then keeps it: heartbeats out, the autopilot's
tracked, the state reported); activate takes plans and publishes the vehicle's state;
deactivate stops commanding with a hold, as ``~/abort`` does, keeping the link and its
state (activate again, then ``~/start``, to fly); cleanup closes the link.

Topics (relative, remappable): subscribes ``plan`` (nav_msgs/Path in ``world_frame``,
transient local: z of each pose is its vertical setpoint, the header stamp its age);
publishes ``odom`` (nav_msgs/Odometry ``world_frame`` → ``base_frame``), ``fix``
(sensor_msgs/NavSatFix), ``depth`` (sensor_msgs/FluidPressure: the gauge pressure
ρ g depth, which the ingest's ``depth_from_pressure`` with ``atmospheric_pressure`` 0
reads back), ``altimeter`` (sensor_msgs/Range, down), ``/diagnostics`` (a
:class:`~poam_ros.diagnostics.BridgeStatus`) and ``vehicle/state`` (the same record as a
latched diagnostic_msgs/DiagnosticStatus whose message is the bridge's state, on every change
of state and every diagnostics period: the planner pauses its mission on ``link_lost``).
Services ``~/start`` and ``~/abort`` (std_srvs/Trigger). Parameters:
:class:`~poam_ros.vehicle.config.VehicleBridgeConfig`,
:class:`~poam_ros.vehicle.config.VehicleNodeConfig`, ``geo.*`` (the anchor, required) and
``workspace.*``; all read-only while configured (the link is opened at configure).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry, Path
from rclpy.clock import Clock, ClockType
from sensor_msgs.msg import FluidPressure, NavSatFix, NavSatStatus, Range
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from poam_ros import messages as msg
from poam_ros.attitude import pressure_at_depth
from poam_ros.diagnostics import BridgeStatus
from poam_ros.geo import GeoConfig, GeoReference, resolve_workspace
from poam_ros.params import ConfigError
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.node_status import node_status
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import run_node
from poam_ros.vehicle import telemetry
from poam_ros.vehicle.bridge import LINK_LOST, VehicleBridge
from poam_ros.vehicle.config import VehicleBridgeConfig, VehicleNodeConfig
from poam_ros.workspace import Workspace, WorkspaceConfig

DIAGNOSTICS_PERIOD = 1.0  # s, steady


def _all(config_cls) -> tuple[str, ...]:
    return tuple(spec.name for spec in config_cls.specs())


class VehicleBridgeNode(ManagedNode):
    """The bridge on the graph; ``node_kwargs`` go to :class:`rclpy.node.Node`."""

    start_errors = (OSError,)  # a link that cannot be opened (port taken, no such device)
    bridge: VehicleBridge | None = None

    def __init__(self, node_name: str = "vehicle_bridge", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _configure(self) -> None:
        self.config = declare_config(self, VehicleBridgeConfig,
                                     read_only=_all(VehicleBridgeConfig))
        self.settings = declare_config(self, VehicleNodeConfig,
                                       read_only=_all(VehicleNodeConfig))
        geo = declare_config(self, GeoConfig, "geo", read_only=_all(GeoConfig))
        area = declare_config(self, WorkspaceConfig, "workspace",
                              read_only=_all(WorkspaceConfig))
        anchor = GeoReference.from_config(geo)
        if anchor is None:
            raise ConfigError("vehicle_bridge needs the map's geodetic anchor: set geo.anchor "
                              "to latlon or projected")
        workspace = Workspace.from_config(resolve_workspace(area, anchor))
        self.bridge = VehicleBridge(self.config, anchor, workspace)
        self._reported = self.bridge.state  # the state vehicle/state last said
        self._odom = self.create_lifecycle_publisher(Odometry, "odom", qos.SENSORS)
        self._fix = self.create_lifecycle_publisher(NavSatFix, "fix", qos.SENSORS)
        self._depth = self.create_lifecycle_publisher(FluidPressure, "depth", qos.SENSORS)
        self._range = self.create_lifecycle_publisher(Range, "altimeter", qos.SENSORS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                  qos.DIAGNOSTICS)
        self._state_pub = self.create_publisher(DiagnosticStatus, "vehicle/state",
                                                qos.LATCHED)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/abort", self._on_abort)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0 / self.settings.tick_rate, self._tick, clock=steady)
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics, clock=steady)
        modes = "allowed" if self.config.allow_mode_change else "off"
        self.get_logger().info(f"vehicle bridge on {self.config.connection}: waiting for the "
                               f"autopilot (system {self.config.target_system}); it never "
                               f"arms; mode changes {modes}")

    def _activate(self) -> None:
        self.create_subscription(Path, "plan", self._on_plan, qos.LATCHED)
        self._publish_state()

    def _deactivate(self) -> None:
        self.bridge.abort(self._now(), "deactivated")
        self._publish_state()

    def _cleanup(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -------------------------------------------------------------------- callbacks

    def _on_plan(self, path: Path) -> None:
        if path.header.frame_id != self.settings.world_frame:
            self.bridge.gate.refused["wrong_frame"] += 1
            return self.warn_throttled("plan", f"plan in frame {path.header.frame_id!r} "
                                               f"refused, expected {self.settings.world_frame!r}")
        poses = np.array([[p.pose.position.x, p.pose.position.y, p.pose.position.z]
                          for p in path.poses], dtype=float).reshape(-1, 3)
        stamp = msg.time_to_seconds(path.header.stamp)
        reason = self.bridge.set_plan(poses, stamp, self._now())
        if reason is not None:
            self.warn_throttled("plan", f"plan of {len(poses)} pose(s) refused: {reason}")

    def _on_start(self, _request, response):
        reason = ("the node is not active (activate it first)"
                  if self.lifecycle_state != "active" else self.bridge.start(self._now()))
        response.success, response.message = reason is None, reason or "commanding"
        return response

    def _on_abort(self, _request, response):
        self.bridge.abort(self._now())
        response.success, response.message = True, self.bridge.reason
        return response

    def _tick(self) -> None:
        was_lost = self.bridge.state == LINK_LOST
        for record in self.bridge.tick(self._now()):
            self._publish(record)
        if self.bridge.state == LINK_LOST and not was_lost:
            self.get_logger().warning(self.bridge.reason)
        if self.bridge.state != self._reported:
            self._publish_state()

    def _publish(self, record) -> None:
        if isinstance(record, telemetry.Odometry):
            self._odom.publish(self._odometry(record))
        elif isinstance(record, telemetry.Fix):
            self._fix.publish(self._navsat(record))
        elif isinstance(record, telemetry.Depth):
            self._depth.publish(FluidPressure(
                header=self._header(record.t, self.settings.depth_frame),
                fluid_pressure=pressure_at_depth(record.depth, self.config.water_density, 0.0)))
        elif isinstance(record, telemetry.Range):
            self._range.publish(cv.range_from_reading(
                self._header(record.t, self.settings.altimeter_frame), record.range,
                min_range=record.min_range, max_range=record.max_range, field_of_view=0.1))

    def _header(self, t: float, frame: str) -> Header:
        return Header(stamp=cv.seconds_to_time(t), frame_id=frame)

    def _odometry(self, record: telemetry.Odometry) -> Odometry:
        odometry = cv.odometry_from_state(
            self._header(record.t, self.settings.world_frame), self.settings.base_frame,
            (record.x, record.y), record.yaw, z=record.z, roll=record.roll,
            pitch=record.pitch)
        cos_yaw, sin_yaw = math.cos(record.yaw), math.sin(record.yaw)
        twist = odometry.twist.twist  # in base_link, levelled (roll and pitch neglected)
        twist.linear.x = cos_yaw * record.vx + sin_yaw * record.vy
        twist.linear.y = -sin_yaw * record.vx + cos_yaw * record.vy
        twist.linear.z = record.vz
        twist.angular.x, twist.angular.y, twist.angular.z = (
            record.roll_rate, record.pitch_rate, record.yaw_rate)
        return odometry

    def _navsat(self, record: telemetry.Fix) -> NavSatFix:
        fix = NavSatFix(header=self._header(record.t, self.settings.gps_frame),
                        latitude=record.latitude, longitude=record.longitude,
                        altitude=record.altitude)
        fix.status.status = record.status
        fix.status.service = NavSatStatus.SERVICE_GPS
        if record.variance is None:
            fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_UNKNOWN
        else:
            fix.position_covariance[0] = fix.position_covariance[4] = record.variance
            fix.position_covariance[8] = 4.0 * record.variance  # vertical: about twice
            fix.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
        return fix

    def _status(self) -> tuple[bytes, BridgeStatus]:
        status = dataclasses.replace(self.bridge.status(self._now()),
                                     lifecycle_state=self.lifecycle_state)
        level = (DiagnosticStatus.OK if status.link_up else DiagnosticStatus.ERROR
                 if status.state == LINK_LOST else DiagnosticStatus.WARN)
        return level, status

    def _publish_state(self) -> None:
        """``vehicle/state``: the bridge's state as its message, the record as values."""
        level, status = self._status()
        self._reported = status.state
        self._state_pub.publish(node_status(self, level, status.state, status))

    def _publish_diagnostics(self) -> None:
        level, status = self._status()
        self._diagnostics.publish(cv.diagnostic_array(self._now(), [node_status(
            self, level, status.reason, status)]))
        self._publish_state()


def main(args=None) -> None:
    run_node(VehicleBridgeNode, "vehicle_bridge", args)


if __name__ == "__main__":
    main()
