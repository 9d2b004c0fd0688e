"""``poam-ros record``, ``play`` and ``remap``: rosbag2 bags of the stack.

``record`` and ``play`` need rclpy (a ROS 2 installation or the Kilted wheels); ``remap``
needs no ROS at all. Each checks its input before it starts (the options, the bag, its
topics): one clear line and exit status 2 on input it cannot use, exit status 1 on a
failure once started; exit 0 with a warning where a damaged bag was read around.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from dataclasses import asdict
from pathlib import Path

from poam_ros.cli.common import INTERRUPTED, ArgumentParser, fail

NEEDS_RCLPY = ("needs rclpy ({}); install the ROS 2 Kilted wheels (scripts/setup.sh) or "
               "source a ROS 2 installation")


# ---------------------------------------------------------------------------- record

def record(argv) -> int:
    """Record topics of the stack (default: all its inputs and outputs, /clock and
    /diagnostics) to a rosbag2 bag until Ctrl-C, SIGTERM or --duration."""
    from poam_ros.bags import STORAGES, BagWriteError, RecorderConfig, check_new_bag

    defaults = RecorderConfig()
    parser = ArgumentParser(prog="poam-ros record", description=record.__doc__)
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
    try:  # before the node starts
        config = RecorderConfig(output=args.output, topics=args.topics or defaults.topics,
                                all_topics=args.all, storage=args.storage,
                                compression=args.compression, max_bag_size=args.max_bag_size,
                                max_bag_duration=args.max_bag_duration)
        if args.output:
            check_new_bag(args.output)
        if args.duration < 0:
            raise ValueError(f"--duration must be >= 0 s, got {args.duration}")
    except (ValueError, BagWriteError) as error:
        return fail("record", error)
    try:
        import rclpy

        from poam_ros.params import ConfigError
        from poam_ros.ros.recorder_node import RecorderNode
        from poam_ros.ros.run import StopSignals, init_rclpy, spin_node
    except ImportError as error:
        return fail("record", NEEDS_RCLPY.format(error))
    # Only the --ros-args part reaches rclpy (None would make it parse sys.argv).
    ros_args = ["poam-ros", *(["--ros-args", *args.ros_args] if args.ros_args else [])]
    with StopSignals() as stop:
        init_rclpy(ros_args)
        try:
            node = RecorderNode(config=config)
        except ConfigError as error:
            rclpy.try_shutdown()
            return fail("record", error)
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
    parser = ArgumentParser(prog="poam-ros play", description=play.__doc__)
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
    from poam_ros.bags import BagError, BagReader

    try:  # before anything is published
        remap = _play_remap(args)
        reader = BagReader(args.bag)
        topics = _play_topics(args, reader)
    except (ValueError, BagError) as error:
        return fail("play", error)
    try:
        import rclpy

        from poam_ros.ros.bag_player import BagPlayer
        from poam_ros.ros.run import StopSignals, init_rclpy
    except ImportError as error:
        return fail("play", NEEDS_RCLPY.format(error))
    with StopSignals() as stop:  # the play loop does not spin: it watches the request
        init_rclpy(["poam-ros"])
        try:
            player = BagPlayer(reader, topics=topics, remap=remap, clock_rate=args.clock)
            print(reader.describe())
            if not player.topics:
                return fail("play", "nothing to play", 1)
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


def _play_remap(args) -> dict[str, str]:
    """``--remap`` as {bag topic: topic to publish on}, the numeric options checked."""
    if not args.rate > 0:
        raise ValueError(f"--rate must be > 0, got {args.rate}")
    for option in ("clock", "delay"):
        if getattr(args, option) < 0:
            raise ValueError(f"--{option} must be >= 0, got {getattr(args, option)}")
    remap = {}
    for rule in args.remap:
        source, sep, target = rule.partition(":=")
        if not sep or not source or not target:
            raise ValueError(f"--remap takes FROM:=TO, got {rule!r}")
        remap[source] = target
    return remap


def _play_topics(args, reader) -> set[str]:
    """The bag topics to play: ``--topics`` (all by default) less ``--exclude``."""
    topics = set(args.topics) if args.topics else set(reader.topics)
    missing = sorted(t for t in (args.topics or []) if t not in reader.topics)
    if missing and len(missing) == len(args.topics):
        raise ValueError(f"{args.bag} has none of the topics asked for ({', '.join(missing)}); "
                         f"it holds: {', '.join(sorted(reader.topics))}")
    topics -= set(args.exclude)
    if not topics:
        raise ValueError(f"nothing to play: of {args.bag}'s topics "
                         f"({', '.join(sorted(reader.topics)) or 'none'}), none is left")
    return topics


# ----------------------------------------------------------------------------- remap

REMAP_TOPICS = ("odom", "range", "swath", "fix", "imu", "depth", "plan", "map", "samples",
                "diagnostics")
FIRST_UPDATE_NOTE = ("       (update 0 fits the scalers and chooses the inducing inputs from "
                     "scratch, so it can take longer)")


def remap(argv) -> int:
    """Re-map a bag's odometry and sonar through the ingest and the mapping core with
    any method and parameters; writes the map, metrics (against ground truth for a
    simulator's bag), figures, and compares with the live maps recorded in the bag."""
    from poam_ros.bags import BagError, BagReader
    from poam_ros.bags.remap import remap_bag
    from poam_ros.bags.remap_config import check_topics
    from poam_ros.cli.mission import EpochLog, setup_errors

    args = _remap_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:  # all of it before the first message is read
        setup, config = _remap_setup(args)
        reader = BagReader(args.bag)
        check_topics(reader, config)
    except (*setup_errors(), BagError) as error:
        return fail("remap", error)
    threads = setup.mapper_node.use_torch_threads(args.torch_threads)
    method = setup.mapping.method
    out = args.out or Path("results") / "remap" / f"{args.bag.resolve().name}_{method}"
    print(f"remap: {args.bag} with {method} ({setup.mapping.kernel} kernel, M ≤ "
          f"{setup.mapping.num_inducing}), seed {setup.mission.seed}, "
          f"{threads} torch thread(s)")
    with EpochLog(out, "update", FIRST_UPDATE_NOTE) as log:
        print(log.header)
        try:
            result = remap_bag(reader, setup, config, log)
        except KeyboardInterrupt:
            return fail("remap", f"interrupted after {len(log.records)} update(s); kept in "
                                  f"{log.path}", INTERRUPTED)
        except (BagError, *setup_errors()) as error:  # the ground truth's terrain among them
            return fail("remap", error, 1)
    _write_remap(result, out, args.bag, setup)
    _print_remap(result, out)
    return 0


def _remap_parser() -> ArgumentParser:
    from poam_ros.bags.remap_config import RemapConfig

    parser = ArgumentParser(prog="poam-ros remap", description=remap.__doc__)
    parser.add_argument("bag", type=Path)
    parser.add_argument("--params", type=Path,
                        help="parameter file (default: as poam-ros sim's: "
                             "config/topobathy.yaml; with --map, config/poam_ros.yaml)")
    parser.add_argument("--method", help="mapping method (default: the file's)")
    parser.add_argument("--device", help="where the model runs: auto, cpu or cuda (default: "
                                         "the file's)")
    parser.add_argument("--seed", type=int, help="mission seed (the model's seed derives "
                                                 "from it, as in a live mission)")
    parser.add_argument("--map", help="terrain file of the simulated survey (ground truth)")
    parser.add_argument("--source", choices=("sensors", "samples"), default="sensors",
                        help="sensors: odometry and sonar through the ingest; samples: the "
                             "recorded batches the live mapper received")
    parser.add_argument("--updates", choices=("auto", "map", "batch"), default="auto")
    parser.add_argument("--tail", choices=("auto", "map", "drop"), default="auto")
    parser.add_argument("--truth", choices=("auto", "sim", "none"), default="auto")
    parser.add_argument("--namespace", default="", metavar="NS",
                        help="a fleet's bag: the topics below in this namespace (--namespace "
                             "auv1: /auv1/odom, ..., /auv1/map; --namespace fleet --source "
                             "samples: the central map from every vehicle's batches), "
                             "/diagnostics aside")
    for name in REMAP_TOPICS:
        default = getattr(RemapConfig(), f"{name}_topic")
        parser.add_argument(f"--{name}-topic", help=f"default {default}, in --namespace")
    parser.add_argument("--torch-threads", type=int, help="torch threads (default: the "
                        "file's mapper torch_threads, 0 meaning torch's own; a live map is "
                        "reproduced to the bit only with the live mapper's thread count)")
    parser.add_argument("--out", type=Path, help="output folder (default: "
                                                 "results/remap/<bag>_<method>)")
    return parser


def _remap_setup(args):
    """(MissionSetup, RemapConfig) of the command line, checked: the
    method, the device, the terrain of ``--map``, the torch threads. Raises ConfigError or
    TerrainError."""
    from poam_ros.bags.remap_config import RemapConfig
    from poam_ros.cli.mission import setup_from_args
    from poam_ros.models.device import resolve_device
    from poam_ros.setup.truth import mission_terrain

    setup, params = setup_from_args(argparse.Namespace(
        params=args.params, map=args.map, seed=args.seed, max_samples=None, method=args.method,
        device=args.device))
    resolve_device(setup.mapping.device)
    if args.map:
        mission_terrain(setup)
    if args.torch_threads is not None:
        setup.mapper_node.replace(torch_threads=args.torch_threads)
    config = RemapConfig(source=args.source, updates=args.updates, tail=args.tail,
                         truth=args.truth, **remap_topics(args))
    return setup, config


def remap_topics(args) -> dict[str, str]:
    """The remap's topics: each one the command line gives, else its default in
    ``--namespace`` (``/diagnostics``, the whole graph's, as it is)."""
    from poam_ros.bags.remap_config import RemapConfig

    namespace = "/" + args.namespace.strip("/") if args.namespace.strip("/") else ""
    topics = {}
    for name in REMAP_TOPICS:
        given, default = getattr(args, f"{name}_topic"), getattr(RemapConfig(), f"{name}_topic")
        topics[f"{name}_topic"] = given or (default if name == "diagnostics"
                                            else f"{namespace}{default}")
    return topics


def print_remap_notes(result) -> None:
    """What a remap (``poam-ros remap``, or ``export`` of a bag) must say besides its map: its
    notes, and for a damaged bag a warning with the messages lost per topic."""
    for note in result.notes:
        print(f"note: {note}")
    if result.read_report.damaged:
        print(f"warning: damaged bag, everything readable was used: "
              f"{result.read_report.summary()}", file=sys.stderr)


def _print_remap(result, out: Path) -> None:
    from poam_ros.cli.mission import print_final, print_unmapped

    print(f"\n{len(result.records)} update(s), {result.model.num_samples} samples from "
          f"{len(result.batches)} batch(es) in {result.wall_time:.1f} s")
    if result.records and not math.isnan(result.records[-1].smse):
        print_final(asdict(result.records[-1]))
    comparison = result.comparison
    if comparison is not None:
        verdict = "equal to" if comparison.equal else "DIFFERENT from"
        print(f"the remap's map at data time {comparison.stamp / 1e9:.3f} s is {verdict} the "
              f"live map (max |Δmean| {comparison.mean_diff:.3g}, max |Δstd| "
              f"{comparison.std_diff:.3g}; {comparison.compared} of {comparison.live_maps} "
              f"live maps matched by stamp)")
    drops = {k: v for k, v in result.ingest_drops.items() if v}
    print_unmapped(drops.pop("outside_workspace", 0), drops.pop("no_return", 0))
    if drops:
        print("ingest drops: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())))
    print_remap_notes(result)
    written = sorted(path.name for path in out.iterdir() if path.is_file())
    print(f"outputs: {out}/ ({', '.join(written)})")


def _write_remap(result, out: Path, bag: Path, setup) -> None:
    """``remap.json``, the final map (``map.npz``), the model, the survey product
    (``map.tif``, where the map frame has an anchor) and the figure."""
    import numpy as np

    from poam_ros.cli.mission import map_name
    from poam_ros.figures import map_title, plot_mission, plot_remap
    from poam_ros.geo import GeoReference
    from poam_ros.mapping.survey_product import PRODUCT_NAME, export_map

    georeference = GeoReference.from_config(setup.geo)

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
    if result.layers is not None:
        x, y = result.grid.coordinates()
        layers = {"x": x, "y": y, "mean": result.layers.mean, "std": result.layers.std}
        if result.layers.lengthscale is not None:
            layers["lengthscale"] = result.layers.lengthscale
        np.savez_compressed(out / "map.npz", **layers)
        result.model.save(out / "model.pt")
        if georeference is not None:
            export_map(out / PRODUCT_NAME, result.model, result.grid, georeference,
                       setup.mapper_node.std_includes_noise, setup.ingest.channels)
    note = f"remap of {bag.resolve().name}, seed {setup.mission.seed}"
    mission = result.mission_result()
    if mission is not None:
        plot_mission(mission, out / "remap.png", map_name(setup), note, georeference)
    elif result.layers is not None:  # the bag's own survey: no ground truth, no scores
        title = map_title(f"the survey of {bag.resolve().name}", setup.mapping.method,
                          result.model.num_samples, note=f"remap, seed {setup.mission.seed}")
        plot_remap(result.grid, result.layers, result.path[:, :2], out / "remap.png", title,
                   georeference)
