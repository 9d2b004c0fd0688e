"""The fleet's links, without ROS: what vehicles tell each other and how it travels.

:mod:`.encoding` packs soundings and plans into compact, checked packets; :mod:`.link` models
an acoustic link (a byte budget, TDMA slots, latency, loss); :mod:`.selection` ranks the
soundings waiting so that the most novel go first; :mod:`.relay` is one vehicle's end, used by
the ``fleet_link`` node. docs/fleet.md describes the format and the measurements.
"""

from poam_ros.fleet.encoding import EncodingConfig, PacketCodec, Plan, Quantised, Soundings
from poam_ros.fleet.link import Delivery, LinkChannel, LinkConfig, LinkSchedule
from poam_ros.fleet.relay import FleetLink, FleetLinkConfig
from poam_ros.fleet.selection import NoveltyPool

__all__ = ["Delivery", "EncodingConfig", "FleetLink", "FleetLinkConfig", "LinkChannel",
           "LinkConfig", "LinkSchedule", "NoveltyPool", "PacketCodec", "Plan", "Quantised",
           "Soundings"]
