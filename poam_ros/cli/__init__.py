"""``poam-ros``: run missions and benchmarks without a full ROS 2 installation.

    poam-ros sim                   the simulated mission as the ROS 2 graph (needs rclpy)
    poam-ros mission               the same mission in one process, without ROS
    poam-ros bench core            speed of the mapping core
    poam-ros bench sweep           maps × methods × seeds, the paper's Table I
    poam-ros fetch-tile NAME URL   download an SRTM tile (.hgt or .hgt.zip) from a mirror
    poam-ros record [-o BAG]       record the stack's topics to a rosbag2 bag (needs rclpy)
    poam-ros play BAG              play a bag with its original timing (needs rclpy)
    poam-ros remap BAG             re-map a bag's sensor data offline, any method (no ROS)
"""

from __future__ import annotations

import argparse
import sys

COMMANDS = ("sim", "mission", "bench", "fetch-tile", "record", "play", "remap")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command in ("record", "play", "remap"):
        from poam_ros.cli import bags as bag_cli

        return getattr(bag_cli, command)(rest)
    if command == "sim":
        from poam_ros.cli.sim import sim

        return sim(rest)
    if command == "mission":
        from poam_ros.cli.mission import mission

        return mission(rest)
    return {"bench": bench, "fetch-tile": fetch}[command](rest)


def fetch(argv) -> int:
    """Download an SRTM tile from a mirror of your choice into a folder."""
    from poam_ros.sim import FetchError, fetch_tile

    parser = argparse.ArgumentParser(prog="poam-ros fetch-tile", description=fetch.__doc__)
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
        print(f"poam-ros fetch-tile: {error}", file=sys.stderr)
        return 1
    print(f"{path} (use it with: poam-ros mission --map {path})")
    return 0


def bench(argv) -> int:
    from poam_ros.benchmark import core_speed, sweep

    if argv and argv[0] == "recorder":  # needs rclpy, unlike the core benchmarks
        from poam_ros.benchmark import recorder as recorder_benchmark

        return recorder_benchmark.main(argv[1:])
    if argv and argv[0] == "remap":
        from poam_ros.benchmark import remap_speed

        return remap_speed.main(argv[1:])
    benches = {"core": core_speed.main, "sweep": sweep.main}
    if not argv or argv[0] not in benches:
        print("usage: poam-ros bench {core,sweep,recorder,remap} [options]   (--help for each)")
        return 2
    return benches[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
