"""``poam-ros``: run missions and benchmarks without a full ROS 2 installation.

    poam-ros sim                   the simulated mission as the ROS 2 graph (needs rclpy)
    poam-ros mission               the same mission in one process, without ROS
    poam-ros bench NAME            a benchmark; NAME is one of:
        core                       speed of the mapping core
        sweep                      maps × methods × seeds, the paper's Table I
        remap                      offline remap time of a simulated mission's bag
        recorder                   the recorder's sustained rate without loss (needs rclpy)
        ingest                     the sensor ingest's throughput over DDS (needs rclpy)
        latency                    map latency over DDS, batch to map (needs rclpy)
        journal                    the crash journal's cost and the replay after a crash
        vips-paper                 the VIPS paper's experiments (VIPS, OIPS, CV)
        oips-paper                 the OIPS paper's experiments (toys A, B, C; Theorem 1)
        dual-gp-paper              the memory-based dual GP paper's experiments
        cmogp-paper                the continual multi-task GP paper's experiments
        real-scale                 a km-scale mission on a synthetic 1" tile (georeferenced)
        export                     exporting a km-scale map as a GeoTIFF: time, peak memory
        fleet-link                 soundings per second a fleet link carries at a budget
        fleet                      a fleet's map accuracy against mission time (needs rclpy)
        bridge                     the MAVLink bridge's latencies and CPU share (needs rclpy)
        seabed-class               a binary channel beside the depth against the class alone
    poam-ros fetch-tile NAME URL   download an SRTM tile (.hgt or .hgt.zip) from a mirror
    poam-ros record [-o BAG]       record the stack's topics to a rosbag2 bag (needs rclpy)
    poam-ros play BAG              play a bag with its original timing (needs rclpy)
    poam-ros remap BAG             re-map a bag's sensor data offline, any method (no ROS)
    poam-ros export SOURCE -o TIF  a saved model or a bag as a georeferenced GeoTIFF (no ROS)

A bad option or parameter file is refused before anything starts: one line on stderr, exit
status 2. Ctrl-C or SIGTERM stops a command within about a second, keeping what it has
written: exit status 130.
"""

from __future__ import annotations

import importlib
import sys

from poam_ros.cli.common import (
    INTERRUPTED,
    USAGE_ERROR,
    ArgumentParser,
    fail,
    interruptible,
)
from poam_ros.params import ConfigError

COMMANDS = ("sim", "mission", "bench", "fetch-tile", "record", "play", "remap", "export")
#: ``poam-ros bench NAME``: the module of poam_ros.benchmark whose ``main(argv)`` runs it
BENCHMARKS = {"core": "core_speed", "sweep": "sweep", "remap": "remap_speed",
              "recorder": "recorder", "ingest": "ingest_throughput", "latency": "map_latency",
              "journal": "journal_cost", "vips-paper": "vips_paper", "oips-paper": "oips_paper",
              "dual-gp-paper": "dual_gp_paper", "cmogp-paper": "cmogp_paper",
              "real-scale": "real_scale", "export": "export_speed", "view": "view_cost",
              "fleet-link": "fleet_link", "fleet": "fleet",
              "bridge": "bridge_latency",
              "seabed-class": "seabed_class"}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else USAGE_ERROR
    command, rest = argv[0], argv[1:]
    name = f"bench {rest[0]}" if command == "bench" and rest else command
    with interruptible():
        try:
            return run(command, rest)
        except KeyboardInterrupt:  # commands that keep partial results say so themselves
            return fail(name, "interrupted", INTERRUPTED)
        except ConfigError as error:  # a benchmark's bad option
            return fail(name, error)


def run(command: str, argv: list[str]) -> int:
    """``poam-ros <command> <argv>``; each command's module is imported only when it runs."""
    if command in ("record", "play", "remap"):
        from poam_ros.cli import bags as bag_cli

        return getattr(bag_cli, command)(argv)
    if command == "sim":
        from poam_ros.cli.sim import sim

        return sim(argv)
    if command == "mission":
        from poam_ros.cli.mission import mission

        return mission(argv)
    if command == "export":
        from poam_ros.cli.export import export

        return export(argv)
    return {"bench": bench, "fetch-tile": fetch}[command](argv)


def fetch(argv) -> int:
    """Download an SRTM tile from a mirror of your choice into a folder."""
    from poam_ros.sim import FetchError, fetch_tile

    parser = ArgumentParser(prog="poam-ros fetch-tile", description=fetch.__doc__)
    parser.add_argument("name", help="tile name, e.g. N47W124")
    parser.add_argument("base_url", help="URL of the folder holding <name>.hgt or .hgt.zip")
    parser.add_argument("--dest", default="maps", help="folder to write <name>.hgt into")
    parser.add_argument("--sha256", help="expected digest of the downloaded bytes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    args = parser.parse_args(argv)
    try:
        path = fetch_tile(args.name, args.base_url, args.dest, timeout=args.timeout,
                          sha256=args.sha256)
    except FetchError as error:
        return fail("fetch-tile", error, 1)
    print(f"{path} (use it with: poam-ros mission --map {path})")
    return 0


def bench(argv) -> int:
    """``poam-ros bench NAME [options]``: the benchmark NAME of :data:`BENCHMARKS`."""
    if not argv or argv[0] not in BENCHMARKS:
        print(f"usage: poam-ros bench {{{','.join(BENCHMARKS)}}} [options]   (--help for each)")
        return 0 if argv and argv[0] in ("-h", "--help") else USAGE_ERROR
    return importlib.import_module(f"poam_ros.benchmark.{BENCHMARKS[argv[0]]}").main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
