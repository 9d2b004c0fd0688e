"""The ``fleet_channel`` node: the acoustic medium between a simulated fleet's vehicles, a thin
adapter around :class:`~poam_ros.fleet.link.LinkChannel` (docs/fleet.md).

For each vehicle namespace ``<ns>`` of ``vehicles`` it subscribes ``<ns>/fleet/out`` and
publishes ``<ns>/fleet/in`` (std_msgs/UInt8MultiArray, reliable, depth 100): a packet sent
by one vehicle leaves as the link model allows (``link.*``: the budget, the TDMA schedule with
vehicle k in slot k mod ``link.slots``, the queue), and reaches every other vehicle after
``link.latency`` unless lost (``link.loss_probability``, drawn from ``seed``). Time is the
node's clock (sim time under ``use_sim_time``), looked at every ``period`` s; packets are
released and delivered then. ``link.slot`` is not read (each vehicle's slot is its index).
What the link dropped, lost and carried is logged when the node stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from std_msgs.msg import UInt8MultiArray

from poam_ros.fleet import LinkChannel, LinkConfig
from poam_ros.params import ConfigError, Params, param
from poam_ros.ros import qos
from poam_ros.ros.fleet_link_node import IN, OUT
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import StartingNode, run_node


@dataclass
class FleetChannelSettings(Params):
    """Who is on the channel and how its time is sampled."""

    vehicles: list[str] = param([], "the vehicles' namespaces (/auv0, /auv1, ...), at least "
                                    "two; vehicle k sends in slot k mod link.slots")
    seed: int = param(0, "the seed of the loss draws", low=0)
    period: float = param(0.05, "how often packets are released and delivered (node clock)",
                          unit="s", low=1e-3)

    def validate(self) -> None:
        if len(self.vehicles) < 2:
            raise ConfigError(f"FleetChannelSettings.vehicles must name at least two "
                              f"vehicles, got {self.vehicles!r}")


class FleetChannelNode(StartingNode):
    """The channel between the vehicles; see the module docstring."""

    def __init__(self, node_name: str = "fleet_channel", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        settings = declare_config(self, FleetChannelSettings, read_only=[
            spec.name for spec in FleetChannelSettings.specs()])
        link = declare_config(self, LinkConfig, "link", read_only=[
            spec.name for spec in LinkConfig.specs()])
        names = [name.rstrip("/") for name in settings.vehicles]
        self.channel = LinkChannel(link, names, seed=settings.seed)
        self._inboxes = {name: self.create_publisher(UInt8MultiArray, f"{name}/{IN}",
                                                     qos.SENSORS) for name in names}
        for name in names:
            self.create_subscription(UInt8MultiArray, f"{name}/{OUT}",
                                     partial(self._on_packet, name), qos.SENSORS)
        self.create_timer(settings.period, self._on_tick)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_packet(self, sender: str, message: UInt8MultiArray) -> None:
        if not self.channel.send(sender, self._now(), bytes(message.data)):
            self.warn_throttled("dropped", f"packets dropped at the sender: "
                                           f"{dict(self.channel.dropped)}")

    def _on_tick(self) -> None:
        for delivery in self.channel.advance(self._now()):
            message = UInt8MultiArray()
            message.data = delivery.packet
            self._inboxes[delivery.receiver].publish(message)

    def destroy_node(self) -> None:
        channel = self.channel
        self.get_logger().info(f"packets sent {dict(channel.sent)}, delivered "
                               f"{dict(channel.delivered)}, lost {dict(channel.lost)}, "
                               f"dropped {dict(channel.dropped)}")
        super().destroy_node()


def main(args=None) -> None:
    run_node(FleetChannelNode, "fleet_channel", args)


if __name__ == "__main__":
    main()
