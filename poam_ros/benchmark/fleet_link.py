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

import numpy as np

from poam_ros.cli.common import ArgumentParser
from poam_ros.fleet import FleetLink, FleetLinkConfig, LinkChannel


def carry(link: dict, rate: float, seconds: float, period: float, seed: int = 0) -> dict:
    """The figures of one run at the link settings ``link`` (:class:`LinkConfig` fields)."""
    sender = FleetLink(FleetLinkConfig.from_dict({"vehicle_id": 0, "link": link}))
    receiver = FleetLink(FleetLinkConfig.from_dict({"vehicle_id": 1, "link": link}))
    channel = LinkChannel(sender.config.link, ["a", "b"], seed=seed)
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
    return {"soundings_per_s": received / seconds, "bytes_per_s": delivered_bytes / seconds,
            "bytes_per_sounding": delivered_bytes / max(received, 1),
            "peak_window_bytes": channel.schedules["a"].peak_window_bytes,
            "waiting": len(sender.pool), "pool_dropped": sender.pool.dropped}


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
        figures = carry({"bandwidth": bandwidth, "max_packet_bytes": args.max_packet_bytes,
                         "slots": args.slots, "slot_length": args.slot_length,
                         "latency": args.latency, "loss_probability": args.loss},
                        args.rate, args.seconds, args.period)
        print(f"{bandwidth or 'unlimited':>13} | {figures['soundings_per_s']:11.1f} | "
              f"{figures['bytes_per_s']:7.1f} | {figures['bytes_per_sounding']:14.2f} | "
              f"{figures['peak_window_bytes']:17d} | {figures['waiting']:d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
