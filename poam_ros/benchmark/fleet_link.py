"""What a fleet link carries: soundings per second through the link model at given budgets.

One vehicle's :class:`~poam_ros.fleet.relay.FleetLink` is offered ``--rate`` soundings a
second (random positions in a 2 km square, depths in -200 .. 0 m) for ``--seconds`` s of
simulated time, looking for a chance to send every ``--period`` s, through a
:class:`~poam_ros.fleet.link.LinkChannel` to a second vehicle, at each ``--bandwidths`` (B/s;
0: unlimited) with the other link settings given. Reports per budget the soundings and bytes
delivered per second, the bytes per sounding on the wire (the packet overhead included), the
peak bytes in any 1-s window, and the soundings still waiting at the end. Run::

    poam-ros bench fleet-link [--bandwidths 100 1000] [--rate 200] [--seconds 120]
        [--max-packet-bytes 256] [--slots 1] [--slot-length 0] [--latency 1] [--loss 0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poam_ros.cli.common import ArgumentParser
from poam_ros.fleet import FleetLink, FleetLinkConfig, LinkChannel, LinkConfig


@dataclass(frozen=True)
class Carried:
    """What one run carried: soundings and bytes delivered per second, bytes per sounding
    on the wire, the sender's peak bytes in a 1-s window and soundings still waiting."""

    soundings_per_s: float
    bytes_per_s: float
    bytes_per_sounding: float
    peak_window_bytes: int
    waiting: int


def carry(link: LinkConfig, rate: float, seconds: float, period: float,
          seed: int = 0) -> Carried:
    """One run through ``link``."""
    sender = FleetLink(FleetLinkConfig(vehicle_id=0, link=link))
    receiver = FleetLink(FleetLinkConfig(vehicle_id=1, link=link))
    channel = LinkChannel(link, ["a", "b"], seed=seed)
    rng = np.random.default_rng(seed)
    delivered_bytes = 0
    steps = int(round(seconds / period))
    for step in range(steps + 1):
        now = step * period
        count = rng.poisson(rate * period)
        sender.offer(rng.uniform(-1000, 1000, (count, 2)), rng.uniform(-200, 0, count), now)
        if (packet := sender.outgoing(now)) is not None:
            channel.send("a", now, packet)
        for delivery in channel.advance(now):
            if receiver.receive(delivery.packet) is not None:
                delivered_bytes += len(delivery.packet)
    received = receiver.soundings_received
    return Carried(received / seconds, delivered_bytes / seconds,
                   delivered_bytes / max(received, 1),
                   channel.schedules["a"].peak_window_bytes, len(sender.pool))


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench fleet-link", description=__doc__.split("\n")[0])
    parser.add_argument("--bandwidths", type=float, nargs="+", default=[100.0, 1000.0],
                        help="link budgets [B/s]; 0: unlimited")
    parser.add_argument("--rate", type=float, default=200.0, help="soundings offered per s")
    parser.add_argument("--seconds", type=float, default=120.0, help="simulated time [s]")
    parser.add_argument("--period", type=float, default=0.1, help="send look-up period [s]")
    parser.add_argument("--max-packet-bytes", type=int, default=256)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--slot-length", type=float, default=0.0, help="[s]; 0: no TDMA")
    parser.add_argument("--latency", type=float, default=1.0, help="[s]")
    parser.add_argument("--loss", type=float, default=0.0, help="loss probability")
    args = parser.parse_args(argv)
    print(f"{args.rate:g} soundings/s offered for {args.seconds:g} s; packets <= "
          f"{args.max_packet_bytes} B, {args.slots} slot(s) of {args.slot_length:g} s, latency "
          f"{args.latency:g} s, loss {args.loss:g}")
    print("bandwidth B/s | soundings/s | bytes/s | bytes/sounding | peak 1-s window B | "
          "waiting at end")
    for bandwidth in args.bandwidths:
        link = LinkConfig(bandwidth=bandwidth, max_packet_bytes=args.max_packet_bytes,
                          slots=args.slots, slot_length=args.slot_length, latency=args.latency,
                          loss_probability=args.loss)
        got = carry(link, args.rate, args.seconds, args.period)
        print(f"{bandwidth or 'unlimited':>13} | {got.soundings_per_s:11.1f} | "
              f"{got.bytes_per_s:7.1f} | {got.bytes_per_sounding:14.2f} | "
              f"{got.peak_window_bytes:17d} | {got.waiting:d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
