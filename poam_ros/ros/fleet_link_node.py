"""The ``fleet_link`` node: one vehicle's end of the fleet link in ``distributed`` mode, a thin
adapter around :class:`~poam_ros.fleet.relay.FleetLink` (docs/fleet.md).

Topics (names relative, remappable; one node per vehicle, in its namespace):

* subscribes ``samples`` (sensor_msgs/PointCloud2, reliable, depth 10): the ingest's batches,
  this vehicle's soundings, into the pool of soundings waiting. The node publishes its
  teammates' soundings on the same topic, and those (told by the publisher's GID, its own) are
  never offered again, so a sounding travels from its vehicle only.
* publishes ``fleet/out`` (std_msgs/UInt8MultiArray, reliable, depth 100): a packet whenever
  the link lets one leave (looked for every ``period`` s of the node's clock, sim time under
  ``use_sim_time``): this vehicle's latest plan announcement or as many soundings as fit, the
  most novel first, a plan never after a plan while soundings wait. A modem driver, or the
  ``fleet_channel`` node in simulation, carries the bytes.
* subscribes ``fleet/in`` (UInt8MultiArray, reliable, depth 100): the teammates' packets.
  Soundings go out on ``samples`` (float64 x, y, z and a field per ``channels``, NaN where a
  sounding did not measure it, in ``map_frame``, unstamped: stamp 0, so that the mapper's
  map stamp stays this vehicle's data time), which the local mapper maps as it maps the
  ingest's; a packet unreadable, an echo of this
  vehicle's own or one taken before is dropped, counted and warned about.
* subscribes ``fleet/plan`` (nav_msgs/Path, latched): this vehicle's plan announcement (the
  planner's, :mod:`poam_ros.ros.fleet_coordination`: the position, then the remaining
  waypoints), sent as a plan packet stamped with the announcement's stamp; a teammate's
  arrives on ``fleet/teammate_<id>/plan`` (latched, ``map_frame``, the announcement's stamp),
  the topic a planner in ``distributed`` mode lists in ``fleet.teammates``.

It publishes ``/diagnostics`` once a second (wall clock) and when a batch comes in: a
:class:`~poam_ros.diagnostics.FleetLinkStatus`, WARN while packets were dropped or soundings
refused in the last second.

Parameters: :class:`~poam_ros.fleet.relay.FleetLinkConfig` (``vehicle_id``, ``pool_size``,
``encoding.*``, ``link.*``: this vehicle's budget and slot) and :class:`FleetLinkSettings`,
all read-only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Path
from rclpy.clock import Clock, ClockType
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header, UInt8MultiArray

from poam_ros import messages as msg
from poam_ros.fleet import FleetLink, FleetLinkConfig, Plan
from poam_ros.fleet.relay import teammate_plan_topic
from poam_ros.params import ConfigError, Params, param
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import StartingNode, run_node

OUT, IN, PLAN = "fleet/out", "fleet/in", "fleet/plan"
DIAGNOSTICS_PERIOD = 1.0  # s, wall


@dataclass
class FleetLinkSettings(Params):
    """The node's own settings."""

    map_frame: str = param("map", "the frame of the samples and plans (the map's)")
    channels: list[str] = param([], "the samples' channels besides the depth (the ingest's); "
                                    "encoding.value_resolutions names one output each")
    period: float = param(0.1, "how often the node looks for a chance to send (node clock)",
                          unit="s", low=1e-3)


class FleetLinkNode(StartingNode):
    """One vehicle's fleet link; see the module docstring."""

    def __init__(self, node_name: str = "fleet_link", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        self.settings = declare_config(self, FleetLinkSettings, read_only=[
            spec.name for spec in FleetLinkSettings.specs()])
        config = declare_config(self, FleetLinkConfig, read_only=[
            spec.name for spec in FleetLinkConfig.specs()])
        self._channels = tuple(self.settings.channels)
        if config.encoding.outputs != 1 + len(self._channels):
            raise ConfigError(f"encoding.value_resolutions names {config.encoding.outputs} "
                              f"output(s), the samples have {1 + len(self._channels)} (the "
                              f"depth and channels {list(self._channels)})")
        self.link = FleetLink(config)
        self._plan: tuple[float, np.ndarray] | None = None  # (stamp, waypoints) to send
        self._samples_pub = self.create_publisher(PointCloud2, "samples", qos.SAMPLES)
        self._own_gid = self._publisher_gid(self._samples_pub.topic_name)
        self._out_pub = self.create_publisher(UInt8MultiArray, OUT, qos.SENSORS)
        self._plan_pubs: dict[int, object] = {}
        self.create_subscription(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        self.create_subscription(UInt8MultiArray, IN, self._on_packet, qos.SENSORS)
        self.create_subscription(Path, PLAN, self._on_plan, qos.LATCHED)
        self.create_timer(self.settings.period, self._on_tick)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                  qos.DIAGNOSTICS)
        self._troubles = 0  # packets dropped and soundings refused at the last report
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ---------------------------------------------------------------- callbacks
    def _on_samples(self, message: PointCloud2, info) -> None:
        if self._is_own(info):
            return  # a teammate's soundings, relayed by this node
        if message.header.frame_id != self.settings.map_frame:
            self.warn_throttled("wrong_frame", f"samples in frame '{message.header.frame_id}',"
                                               f" not '{self.settings.map_frame}': not sent")
            return
        try:
            xy, values = msg.cloud_to_samples(message, self._channels)
        except ValueError as error:  # a field missing, a layout that does not read
            self.warn_throttled("unreadable", f"unreadable samples cloud, not sent: {error}")
            return
        taken = self.link.offer(xy, values, msg.time_to_seconds(message.header.stamp))
        self._publish_diagnostics()  # the batch waiting: it may be the mission's last
        if taken < len(xy):
            self.warn_throttled("refused", f"soundings outside the encoding's range, not sent: "
                                           f"{dict(self.link.codec.refused)}")

    def _on_plan(self, message: Path) -> None:
        if message.header.frame_id == self.settings.map_frame:
            self._plan = (msg.time_to_seconds(message.header.stamp),
                          msg.path_to_waypoints(message))

    def _on_tick(self) -> None:
        now = self.get_clock().now().nanoseconds * 1e-9
        packet = self._plan_packet(now) or self.link.outgoing(now)
        if packet is not None:
            out = UInt8MultiArray()
            out.data = packet
            self._out_pub.publish(out)

    def _plan_packet(self, now: float) -> bytes | None:
        """The plan waiting to be announced, as a packet if it can leave ``now`` [s]; it waits
        no more once sent or refused."""
        if self._plan is None:
            return None
        stamp, waypoints = self._plan
        try:
            packet = self.link.plan_packet(now, waypoints, stamp=stamp)
        except ValueError as error:  # a waypoint outside the encoding's range
            self.warn_throttled("plan", f"plan not sent: {error}")
            self._plan = None
            return None
        if packet is not None:
            self._plan = None
        return packet

    def _on_packet(self, message: UInt8MultiArray) -> None:
        packet = self.link.receive(bytes(message.data))
        if packet is None:
            self.warn_throttled("dropped", f"teammate packets dropped: unreadable "
                                           f"{dict(self.link.codec.dropped)}, not taken "
                                           f"{dict(self.link.rejected)}")
            return
        header = Header(stamp=cv.seconds_to_time(packet.time), frame_id=self.settings.map_frame)
        if isinstance(packet, Plan):
            self._plan_publisher(packet.sender).publish(
                cv.path_from_waypoints(header, packet.waypoints))
            return
        # Unstamped (0): a teammate's soundings are of its leg, not this vehicle's, and may
        # be old (they wait for the link); the mapper's map stamp stays this vehicle's data
        # time, which its lockstep planner waits on, and old ones are no clock reset.
        self._samples_pub.publish(cv.points_to_cloud(
            Header(frame_id=self.settings.map_frame),
            np.column_stack([packet.xy, packet.values]), float64=True,
            channels=self._channels))

    def _publish_diagnostics(self) -> None:
        status = self.link.status()
        troubles = sum(status.dropped.values()) + sum(status.refused.values())
        level = DiagnosticStatus.WARN if troubles > self._troubles else DiagnosticStatus.OK
        self._troubles = troubles
        self._diagnostics.publish(status_array(self, [node_status(
            self, level, f"{status.waiting} soundings waiting", status)]))

    # ---------------------------------------------------------------- helpers
    def _plan_publisher(self, sender: int):
        if sender not in self._plan_pubs:
            self._plan_pubs[sender] = self.create_publisher(
                Path, teammate_plan_topic(sender), qos.LATCHED)
        return self._plan_pubs[sender]

    def _publisher_gid(self, topic: str) -> bytes:
        """The GID of this node's publisher on ``topic``, from the graph (a local endpoint is
        in it at once)."""
        for endpoint in self.get_publishers_info_by_topic(topic):
            if (endpoint.node_name, endpoint.node_namespace) == (self.get_name(),
                                                                self.get_namespace()):
                return bytes(endpoint.endpoint_gid)
        raise RuntimeError(f"this node's publisher on {topic} is not in the graph")

    def _is_own(self, info) -> bool:
        gid = info.get("publisher_gid")
        return gid is not None and bytes(gid["data"])[:len(self._own_gid)] == self._own_gid


def main(args=None) -> None:
    run_node(FleetLinkNode, "fleet_link", args)


if __name__ == "__main__":
    main()
