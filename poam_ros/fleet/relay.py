"""One vehicle's end of the fleet link, without ROS: its own soundings out, most novel first
and only as the link allows; its teammates' packets in, each once.

:class:`FleetLink` owns the codec (:mod:`.encoding`), the pool of soundings waiting
(:mod:`.selection`), the vehicle's own :class:`~poam_ros.fleet.link.LinkSchedule` (so a
packet is formed only when it can leave, from the soundings most novel *then*, rather than
queued behind a backlog) and the ledger of (sender, sequence) already taken. A teammate's
soundings are handed on to the local mapper and never offered to the pool, so no sounding
goes back or round; a packet of this vehicle's own id (an echo), or one taken before, is
dropped and counted. The ``fleet_link`` node is its ROS adapter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from poam_ros.diagnostics import FleetLinkStatus
from poam_ros.fleet.encoding import (
    DROPS,
    MAX_ENTRIES,
    OVERHEAD_BYTES,
    REFUSALS,
    WAYPOINT_BYTES,
    EncodingConfig,
    PacketCodec,
    Plan,
    Soundings,
)
from poam_ros.fleet.link import LinkConfig, LinkSchedule, nanoseconds
from poam_ros.fleet.selection import NoveltyPool
from poam_ros.params import ConfigError, Params, group, param

OWN_ECHO = "own_echo"
DUPLICATE = "duplicate"
REJECTIONS = (OWN_ECHO, DUPLICATE)


def teammate_plan_topic(vehicle_id: int) -> str:
    """Where a vehicle's ``fleet_link`` publishes teammate ``vehicle_id``'s plan as heard
    (relative to the vehicle's namespace): what its planner lists in ``fleet.teammates``."""
    return f"fleet/teammate_{vehicle_id}/plan"


@dataclass
class FleetLinkConfig(Params):
    """A vehicle's end of the fleet link."""

    vehicle_id: int = param(0, "this vehicle's sender id in the packets, unique in the fleet",
                            low=0, high=255)
    pool_size: int = param(20000, "soundings waiting to be sent at most; over it the least "
                                  "novel are dropped", low=1)
    encoding: EncodingConfig = group(EncodingConfig)
    link: LinkConfig = group(LinkConfig)


class FleetLink:
    """A vehicle's sender and receiver; time is explicit [s] and must not go back. Counts:
    ``codec.refused`` (soundings not representable), ``pool.dropped`` (over the pool),
    ``codec.dropped`` (packets unreadable) and ``rejected`` (packets readable but not taken:
    :data:`OWN_ECHO`, :data:`DUPLICATE`); ``soundings_sent`` and ``soundings_received``."""

    def __init__(self, config: FleetLinkConfig) -> None:
        self.config = config
        self.codec = PacketCodec(config.encoding, config.vehicle_id)
        if config.link.packet_limit < OVERHEAD_BYTES + self.codec.sounding_bytes:
            raise ConfigError(f"a packet of at most {config.link.packet_limit} B cannot hold a "
                              f"sounding ({OVERHEAD_BYTES} + {self.codec.sounding_bytes} B)")
        self.pool = NoveltyPool(config.pool_size, config.encoding.xy_resolution)
        self.schedule = LinkSchedule(config.link)
        self.rejected: Counter[str] = Counter()
        self.soundings_sent = 0
        self.soundings_received = 0
        self._plan_last = False  # whether the last packet sent was a plan
        # sender -> the sequence numbers taken: an integer a packet, a few MB for a long mission
        self._taken: dict[int, set[int]] = {}

    def offer(self, xy, values, stamp: float) -> int:
        """This vehicle's soundings, ``xy`` (N, 2) [m] and ``values`` (N, D) (NaN: not
        measured), measured by ``stamp`` [s], into the pool; returns how many it took."""
        quantised = self.codec.quantise(xy, values, stamp)
        self.pool.add(quantised)
        return len(quantised)

    def outgoing(self, time: float) -> bytes | None:
        """The packet to send at ``time`` [s], if the link lets one leave then and soundings
        wait: as many as fit, most novel first."""
        now = nanoseconds(time)
        count = self.codec.fitting(self.schedule.capacity(now))
        soundings = self.pool.take(count)
        if soundings is None or not len(soundings):
            return None
        packet = self.codec.encode(soundings)
        self.schedule.record(now, len(packet))
        self.soundings_sent += len(soundings)
        self._plan_last = False
        return packet

    def plan_packet(self, time: float, waypoints, stamp: float | None = None) -> bytes | None:
        """This vehicle's remaining ``waypoints`` (N, 2) [m] as a plan packet (as many of the
        first as one packet holds) stamped ``stamp`` [s] (default ``time``), if the link lets
        it leave at ``time`` [s]; else None (announce it again later). A plan does not follow
        a plan while soundings wait: announcements take at most every other packet, so that
        soundings move however often plans come and however seldom the link may send (a
        simulation's clock fast against the sender's period). A waypoint outside the
        encoding's range raises ``ValueError``."""
        fits = min(MAX_ENTRIES, (self.config.link.packet_limit - OVERHEAD_BYTES) // WAYPOINT_BYTES)
        waypoints = np.asarray(waypoints, dtype=float).reshape(-1, 2)[:fits]
        size = OVERHEAD_BYTES + WAYPOINT_BYTES * len(waypoints)
        if not len(waypoints) or (self._plan_last and len(self.pool)) or \
                self.schedule.capacity(nanoseconds(time)) < size:
            return None
        packet = self.codec.encode_plan(waypoints, time if stamp is None else stamp)
        self.schedule.record(nanoseconds(time), len(packet))
        self._plan_last = True
        return packet

    def receive(self, data: bytes) -> Soundings | Plan | None:
        """A teammate's packet, decoded, or None (counted) when unreadable, an echo of this
        vehicle's own, or taken before."""
        packet = self.codec.decode(data)
        if packet is None:
            return None
        if packet.sender == self.config.vehicle_id:
            self.rejected[OWN_ECHO] += 1
            return None
        taken = self._taken.setdefault(packet.sender, set())
        if packet.sequence in taken:
            self.rejected[DUPLICATE] += 1
            return None
        taken.add(packet.sequence)
        if isinstance(packet, Soundings):
            self.soundings_received += len(packet.xy)
        return packet

    def status(self) -> FleetLinkStatus:
        """The counts, every reason listed (0 when none)."""
        dropped = {**self.codec.dropped, **self.rejected}
        return FleetLinkStatus(
            vehicle_id=self.config.vehicle_id, waiting=len(self.pool),
            soundings_sent=self.soundings_sent, soundings_received=self.soundings_received,
            packets_sent=self.schedule.packets_sent, bytes_sent=self.schedule.bytes_sent,
            peak_window_bytes=self.schedule.peak_window_bytes, pool_dropped=self.pool.dropped,
            refused={reason: self.codec.refused[reason] for reason in REFUSALS},
            dropped={reason: dropped.get(reason, 0) for reason in (*DROPS, *REJECTIONS)})
