"""``poam-ros record``, ``play`` and ``remap``: rosbag2 bags of the stack.

``record`` and ``play`` need rclpy (a ROS 2 installation or the Kilted wheels); ``remap``
needs no ROS at all. Each prints one clear line and exits 1 on input it cannot use (no
bag, not a bag, missing topics), and exits 0 with a warning where a damaged bag was read
around.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from dataclasses import asdict
from pathlib import Path


def _fail(command: str, error) -> int:
    print(f"poam-ros {command}: {error}", file=sys.stderr)
    return 1


# ---------------------------------------------------------------------------- record

def record(argv) -> int:
    """Record topics of the stack (default: all its inputs and outputs, /clock and
    /diagnostics) to a rosbag2 bag until Ctrl-C, SIGTERM or --duration."""
    from poam_ros.bags import STORAGES, RecorderConfig

    defaults = RecorderConfig()
    parser = argparse.ArgumentParser(prog="poam-ros record", description=record.__doc__)
    parser.add_argument("-o", "--output", default="", help="bag directory to create "
                        "(default: bags/poam_<date>-<time>)")
    parser.add_argument("topics", nargs="*", help=f"topics (default: "
                        f"{' '.join(defaults.topics)})")
    parser.add_argument("-a", "--all", action="store_true", help="record every topic")
    parser.add_argument("-s", "--storage", choices=STORAGES, default="mcap")
    parser.add_argument("--compression", choices=("zstd", "none"), default="zstd",
                        help="MCAP chunk compression")
    parser.add_argument("-b", "--max-bag-size", type=int, default=0,
                        help="split after this many bytes per file (0: never)")
    parser.add_argument("-d", "--max-bag-duration", type=float, default=0.0,
                        help="split after this many seconds per file (0: never)")
    parser.add_argument("--duration", type=float, default=0.0,
                        help="stop after this many seconds (0: at Ctrl-C / SIGTERM)")
    parser.add_argument("--ros-args", nargs=argparse.REMAINDER, default=None,
                        help="ROS arguments (remappings, namespace) for the recorder node")
    args = parser.parse_args(argv)
    try:
        config = RecorderConfig(output=args.output, topics=args.topics or defaults.topics,
                                all_topics=args.all, storage=args.storage,
                                compression=args.compression, max_bag_size=args.max_bag_size,
                                max_bag_duration=args.max_bag_duration)
    except ValueError as error:
        return _fail("record", error)
    try:
        import rclpy

        from poam_ros.params import ConfigError
        from poam_ros.ros.recorder_node import RecorderNode
        from poam_ros.ros.run import StopSignals, init_rclpy, spin_node
    except ImportError as error:
        return _fail("record", f"needs rclpy ({error}); install the ROS 2 Kilted wheels "
                               f"(scripts/setup.sh) or source a ROS 2 installation")
    # Only the --ros-args part reaches rclpy (None would make it parse sys.argv).
    ros_args = ["poam-ros", *(["--ros-args", *args.ros_args] if args.ros_args else [])]
    with StopSignals() as stop:
        init_rclpy(ros_args)
        try:
            node = RecorderNode(config=config)
        except ConfigError as error:
            rclpy.try_shutdown()
            return _fail("record", error)
        print(f"recording to {node.path} (Ctrl-C to stop)", flush=True)
        spin_node(node, stop.requested, duration=args.duration or None)  # writes metadata.yaml
    counts = {t.name: t.count for t in node.writer.topics}
    print(f"{node.path}: {sum(counts.values())} message(s)")
    for name, count in sorted(counts.items()):
        lost = node.lost.get(name, 0)
        print(f"  {name:<28} {count:>9}" + (f"  ({lost} lost before the recorder)"
                                            if lost else ""))
    for name, why in sorted(node.refused.items()):
        print(f"  not recorded: {name}: {why}")
    return 0


# ------------------------------------------------------------------------------ play

def play(argv) -> int:
    """Publish a bag's messages with their original timing (scaled by --rate), the
    recorded /clock included, so that a stack with use_sim_time runs on bag time."""
    parser = argparse.ArgumentParser(prog="poam-ros play", description=play.__doc__)
    parser.add_argument("bag", type=Path)
    parser.add_argument("-r", "--rate", type=float, default=1.0, help="rate factor")
    parser.add_argument("-l", "--loop", action="store_true", help="play again and again")
    parser.add_argument("--topics", nargs="+", help="bag topics to play (default: all)")
    parser.add_argument("--exclude", nargs="+", default=[], help="bag topics not to play")
    parser.add_argument("--remap", nargs="+", default=[], metavar="FROM:=TO",
                        help="publish bag topic FROM on TO")
    parser.add_argument("--clock", type=float, default=0.0, metavar="HZ",
                        help="publish /clock from the receive times at HZ (for bags "
                             "without a recorded /clock)")
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds to wait for subscribers to connect before playing")
    args = parser.parse_args(argv)
    if not args.rate > 0:
        return _fail("play", f"--rate must be > 0, got {args.rate}")
    remap = {}
    for rule in args.remap:
        source, sep, target = rule.partition(":=")
        if not sep or not source or not target:
            return _fail("play", f"--remap takes FROM:=TO, got {rule!r}")
        remap[source] = target
    from poam_ros.bags import BagError, BagReader

    try:
        reader = BagReader(args.bag)
    except BagError as error:
        return _fail("play", error)
    topics = set(args.topics) if args.topics else set(reader.topics)
    topics -= set(args.exclude)
    missing = sorted(t for t in (args.topics or []) if t not in reader.topics)
    if missing and len(missing) == len(args.topics):
        return _fail("play", f"{args.bag} has none of the topics asked for "
                             f"({', '.join(missing)}); it holds: "
                             f"{', '.join(sorted(reader.topics))}")
    try:
        import rclpy

        from poam_ros.ros.bag_player import BagPlayer
        from poam_ros.ros.run import StopSignals, init_rclpy
    except ImportError as error:
        return _fail("play", f"needs rclpy ({error}); install the ROS 2 Kilted wheels "
                             f"(scripts/setup.sh) or source a ROS 2 installation")
    with StopSignals() as stop:  # the play loop does not spin: it watches the request
        init_rclpy(["poam-ros"])
        try:
            player = BagPlayer(reader, topics=topics, remap=remap, clock_rate=args.clock)
            print(reader.describe())
            if not player.topics:
                print("poam-ros play: nothing to play", file=sys.stderr)
                return 1
            stop.requested.wait(args.delay)
            print(f"playing {len(player.topics)} topic(s) at rate {args.rate:g}"
                  f"{', looped' if args.loop else ''} (Ctrl-C to stop)", flush=True)
            report = player.play(rate=args.rate, loop=args.loop, stop=stop.requested)
            player.destroy_node()
        finally:
            rclpy.try_shutdown()
    for line in report.lines():
        print(line)
    return 0


# ----------------------------------------------------------------------------- remap

def remap(argv) -> int:
    """Re-map a bag's odometry and sonar through the ingest and the mapping core with
    any method and parameters; writes the map, metrics (against ground truth for a
    simulator's bag), figures, and compares with the live maps recorded in the bag."""
    from poam_ros.bags import BagError, BagReader
    from poam_ros.bags.remap import RemapConfig, check_topics, remap_bag
    from poam_ros.figures import plot_mission
    from poam_ros.ingest import IngestConfig
    from poam_ros.params import ConfigError
    from poam_ros.params.files import load_configs
    from poam_ros.params.mission_setup import MissionSetup, default_parameter_file
    from poam_ros.workspace import WorkspaceConfig

    parser = argparse.ArgumentParser(prog="poam-ros remap", description=remap.__doc__)
    parser.add_argument("bag", type=Path)
    parser.add_argument("--params", help="parameter file (default: the package's config)")
    parser.add_argument("--method", help="mapping method (default: the file's)")
    parser.add_argument("--seed", type=int, help="mission seed (the model's seed derives "
                                                 "from it, as in a live mission)")
    parser.add_argument("--map", help="terrain file of the simulated survey (ground truth)")
    parser.add_argument("--source", choices=("sensors", "samples"), default="sensors",
                        help="sensors: odometry and sonar through the ingest; samples: the "
                             "recorded batches the live mapper received")
    parser.add_argument("--updates", choices=("auto", "map", "batch"), default="auto")
    parser.add_argument("--tail", choices=("auto", "map", "drop"), default="auto")
    parser.add_argument("--truth", choices=("auto", "sim", "none"), default="auto")
    topics = ("odom", "range", "swath", "plan", "map", "samples", "diagnostics")
    for name in topics:
        default = getattr(RemapConfig(), f"{name}_topic")
        parser.add_argument(f"--{name}-topic", default=default, help=f"default {default}")
    parser.add_argument("--torch-threads", type=int, help="torch threads (default: the "
                        "file's mapper torch_threads, 0 meaning torch's own; a live map is "
                        "reproduced to the bit only with the live mapper's thread count)")
    parser.add_argument("--out", type=Path, help="output folder (default: "
                                                 "results/remap/<bag>_<method>)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    params = args.params or default_parameter_file()
    try:
        setup = MissionSetup.from_file(params)
        ingest = load_configs(params, "sensor_ingest", {"": IngestConfig,
                                                         "workspace": WorkspaceConfig})
        if args.map:
            setup = setup.over_map(args.map)
        if args.seed is not None:
            setup.mission = setup.mission.replace(seed=args.seed)
        if args.method:
            setup.mapping = setup.mapping.replace(method=args.method)
        config = RemapConfig(source=args.source, updates=args.updates, tail=args.tail,
                             truth=args.truth, **{f"{name}_topic": getattr(args, f"{name}_topic")
                                                  for name in topics})
    except (ConfigError, ValueError) as error:
        return _fail("remap", error)
    try:
        reader = BagReader(args.bag)
        check_topics(reader, config)
    except BagError as error:
        return _fail("remap", error)
    threads = setup.mapper_node.use_torch_threads(args.torch_threads)
    method = setup.mapping.method
    out = args.out or Path("results") / "remap" / f"{args.bag.resolve().name}_{method}"
    print(f"remap: {args.bag} with {method} ({setup.mapping.kernel} kernel, M ≤ "
          f"{setup.mapping.num_inducing}), seed {setup.mission.seed}, "
          f"{threads} torch thread(s)")
    print(f"{'update':>6} {'samples':>7} {'SMSE':>7} {'MSLL':>7} {'update s':>8}")

    def progress(record):
        print(f"{record.epoch:>6} {record.num_samples:>7} {record.smse:>7.4f} "
              f"{record.msll:>7.3f} {record.update_time:>8.3f}", flush=True)

    try:
        result = remap_bag(reader, setup, ingest[""], ingest["workspace"], config, progress)
    except (BagError, ConfigError) as error:
        return _fail("remap", error)
    out.mkdir(parents=True, exist_ok=True)
    _write_remap(result, out, args.bag, setup, plot_mission)
    print(f"\n{len(result.records)} update(s), {result.model.num_samples} samples from "
          f"{len(result.batches)} batch(es) in {result.wall_time:.1f} s")
    if result.records and not math.isnan(result.records[-1].smse):
        final = result.records[-1]
        print(f"final:    SMSE {final.smse:.4f}  MSLL {final.msll:.3f}  RMSE {final.rmse:.3f}")
    comparison = result.comparison
    if comparison is not None:
        verdict = "equal to" if comparison.equal else "DIFFERENT from"
        print(f"the remap's map at data time {comparison.stamp / 1e9:.3f} s is {verdict} the "
              f"live map (max |Δmean| {comparison.mean_diff:.3g}, max |Δstd| "
              f"{comparison.std_diff:.3g}; {comparison.compared} of {comparison.live_maps} "
              f"live maps matched by stamp)")
    drops = {k: v for k, v in result.ingest_drops.items() if v}
    if drops:
        print("ingest drops: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())))
    for note in result.notes:
        print(f"note: {note}")
    if result.read_report.damaged:
        print(f"warning: damaged bag, everything readable was used: "
              f"{result.read_report.summary()}", file=sys.stderr)
    print(f"outputs: {out}/ (remap.json, epochs.jsonl, map.npz, model.pt, remap.png)")
    return 0


def _write_remap(result, out: Path, bag: Path, setup, plot_mission) -> None:
    import numpy as np

    from poam_ros.bags.remap import plot_map

    comparison = result.comparison
    summary = {
        "bag": str(bag), "method": setup.mapping.method, "seed": setup.mission.seed,
        "updates": len(result.records), "samples": result.model.num_samples,
        "batches": len(result.batches), "wall_time": result.wall_time,
        "final": asdict(result.records[-1]) if result.records else None,
        "comparison_with_live": None if comparison is None else
        {**asdict(comparison), "equal": comparison.equal},
        "ingest_drops": dict(result.ingest_drops), "notes": result.notes,
        "bag_damage": result.read_report.problems, "lost": dict(result.read_report.lost),
        "messages": dict(result.messages), "setup": setup.to_dict(),
    }
    (out / "remap.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "epochs.jsonl").write_text(
        "".join(json.dumps(asdict(r)) + "\n" for r in result.records))
    if result.layers is not None:
        x, y = result.grid.coordinates()
        layers = {"x": x, "y": y, "mean": result.layers.mean, "std": result.layers.std}
        if result.layers.lengthscale is not None:
            layers["lengthscale"] = result.layers.lengthscale
        np.savez_compressed(out / "map.npz", **layers)
        result.model.save(out / "model.pt")
    mission = result.mission_result()
    title = f"remap: {setup.mapping.method}, seed {setup.mission.seed}"
    if mission is not None:
        plot_mission(mission, out / "remap.png", title=title)
    elif result.layers is not None:
        plot_map(result, out / "remap.png", title=title)
