"""``poam-ros sim``: the simulated mission over the ROS 2 graph, one process per node, watched
and scored as ``poam-ros mission`` scores the same mission without ROS (needs rclpy)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from poam_ros.cli.mission import (
    EPOCH_HEADER,
    add_setup_arguments,
    describe,
    epoch_line,
    report,
    setup_from_args,
    summarize,
)

INTERRUPTED = 130  # the exit status of a run stopped by Ctrl-C or SIGTERM


def sim(argv) -> int:
    """The simulated mission as the ROS 2 graph of sim.launch.xml, each node its own process:
    prints every decision epoch's SMSE/MSLL against the simulator's ground truth, stops the
    nodes at the sample budget (or Ctrl-C) and writes a summary, the records and a figure."""
    from poam_ros.params import ConfigError
    from poam_ros.sim import TerrainError

    parser = argparse.ArgumentParser(prog="poam-ros sim", description=sim.__doc__)
    add_setup_arguments(parser, "results/sim")
    parser.add_argument("--mode", choices=("lockstep", "realtime"),
                        help="lockstep replays the ROS-free mission (default: the file's)")
    parser.add_argument("--time-scale", type=float,
                        help="sim seconds per wall second, 0 as fast as possible (default: "
                             "the file's)")
    parser.add_argument("--torch-threads", type=int, help="the mapper's torch threads "
                                                          "(default: the file's)")
    parser.add_argument("--stall-timeout", type=float, default=600.0,
                        help="give up when no new map comes for this many seconds")
    parser.add_argument("--compare", action="store_true",
                        help="then run the ROS-free mission with the same setup and compare")
    parser.add_argument("--record", type=Path, metavar="BAG",
                        help="record the mission to this bag (a recorder node beside the "
                             "others; its parameters from the file's 'recorder' section)")
    args = parser.parse_args(argv)
    if args.record is not None:  # before any node starts
        from poam_ros.bags import BagWriteError, check_new_bag

        try:
            check_new_bag(args.record)
        except BagWriteError as error:
            print(f"poam-ros sim: {error}", file=sys.stderr)
            return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        setup, params = setup_from_args(args)
        from poam_ros.ros.graph import CLOCK_SOURCE, GraphError, GraphOptions, run_graph
    except (ConfigError, TerrainError) as error:
        print(f"poam-ros sim: {error}", file=sys.stderr)
        return 2
    except ImportError as error:
        print(f"poam-ros sim: needs rclpy ({error}); install the ROS 2 Kilted wheels "
              f"(scripts/setup.sh), or run the same mission without ROS: poam-ros mission",
              file=sys.stderr)
        return 2
    options = GraphOptions(mode=args.mode, time_scale=args.time_scale,
                           torch_threads=args.torch_threads, stall_timeout=args.stall_timeout,
                           record=args.record)
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"sim: {describe(setup)}; node logs in {logs}")

    def started(child) -> None:
        print(f"started {child.name} (pid {child.process.pid})", flush=True)
        if child.name == CLOCK_SOURCE:  # the mission starts with the clock
            print(EPOCH_HEADER, flush=True)

    try:
        run = run_graph(setup, params, options, logs,
                        lambda record: print(epoch_line(record), flush=True), started)
    except GraphError as error:
        print(f"poam-ros sim: {error}", file=sys.stderr)
        return 1
    status = 0 if run.outcome == "budget" else INTERRUPTED
    unclean = {name: code for name, code in run.exit_codes.items() if code != 0}
    if unclean:
        print(f"nodes that did not stop cleanly: {unclean} (see {logs})", file=sys.stderr)
    if not run.records:
        print("poam-ros sim: stopped before the first map", file=sys.stderr)
        return status or 1
    figure = plot_final_map(run, args.out / "sim.png",
                            f"{setup.mapping.method} over ROS, seed {setup.mission.seed}")
    extra = {"outcome": run.outcome, "exit_codes": run.exit_codes,
             "goals": run.monitor.goals, "diagnostics": run.monitor.statuses}
    if args.record is not None:
        extra["bag"] = describe_bag(args.record)
    if args.compare:
        extra["ros_free"] = compare(setup, run, args.torch_threads)
    report(summarize(run.records, run.wall_time, setup, **extra), run.records, args.out,
           "sim", figure)
    print_node_counts(run.monitor)
    return status


def describe_bag(path: Path) -> dict:
    """Print what the bag holds; returns its path and message count per topic."""
    from poam_ros.bags import BagError, BagReader

    try:
        counts = {name: topic.count for name, topic in BagReader(path).topics.items()}
    except BagError as error:
        print(f"poam-ros sim: the bag cannot be read: {error}", file=sys.stderr)
        return {"path": str(path), "error": str(error)}
    print(f"recorded {sum(counts.values())} message(s) on {len(counts)} topic(s) to {path}")
    return {"path": str(path), "messages": counts}


def plot_final_map(run, path, title: str):
    """The last scored map as published, with the ground truth at its cells."""
    from poam_ros.figures import plot_map

    stamp = run.monitor.record_stamps[-1]
    layers = run.monitor.map_layers(stamp)
    if layers is None:
        return "none (the last map was not received)"
    points, inside = layers["points"], np.isfinite(layers["mean"])
    truth = np.full(len(points), np.nan)
    truth[inside] = run.terrain.elevation(points[inside])
    samples = run.monitor.samples(until=stamp)[:, :2]
    return plot_map(path, points, truth, layers["mean"], layers["std"],
                    layers["lengthscale"], track=samples, samples=samples,
                    inducing=layers["inducing"], title=title)


def compare(setup, run, torch_threads: int | None) -> dict:
    """Run the ROS-free mission with ``setup``, print it beside the graph's, and return
    its summary with the comparison."""
    from poam_ros.mission import Mission

    setup.mapper_node.use_torch_threads(torch_threads)
    print("\nthe ROS-free mission with the same setup ...", flush=True)
    result = Mission(setup).run()
    ros, free = run.records, result.records
    same = next((i for i, (a, b) in enumerate(zip(ros, free))
                 if a.num_samples != b.num_samples), min(len(ros), len(free)))
    graph = summarize(ros, run.wall_time, setup)
    alone = summarize(free, result.wall_time, setup)
    print(f"{'':24} {'graph':>10} {'ROS-free':>10}")
    rows = [("epochs", "epochs", "d"), ("samples", ("final", "num_samples"), "d"),
            ("final SMSE", ("final", "smse"), ".4f"), ("final MSLL", ("final", "msll"), ".3f"),
            ("SMSE over epochs", ("epoch_averages", "smse"), ".4f"),
            ("MSLL over epochs", ("epoch_averages", "msll"), ".3f"),
            ("median update s", "median_update_time", ".3f"), ("wall time s", "wall_time", ".1f")]
    for label, key, form in rows:
        a, b = ((s[key[0]][key[1]] if isinstance(key, tuple) else s[key]) for s in (graph, alone))
        print(f"{label:24} {a:>10{form}} {b:>10{form}}")
    print(f"epochs with the same sample count from the start: {same} of {len(free)}")
    del alone["setup"]
    return {**alone, "same_epochs_from_start": same}


def print_node_counts(monitor) -> None:
    """What the ingest and the mapper counted: samples, inducing points, drops, rejections."""
    ingest, mapper = monitor.status(": samples"), monitor.status(": mapping")
    drops = {k[len("dropped."):]: v for k, v in ingest.items()
             if k.startswith("dropped.") and v != "0"}
    rejections = {k[len("rejected_"):]: v for k, v in mapper.items()
                  if k.startswith("rejected_")}
    print(f"ingest: {ingest.get('samples_published', '?')} samples in "
          f"{ingest.get('batches_published', '?')} batches, dropped: {drops or 'none'}; "
          f"mapper: {mapper.get('samples', '?')} samples, {mapper.get('inducing_points', '?')} "
          f"inducing points, {mapper.get('updates', '?')} updates, rejected: "
          f"{rejections or 'none'}")
    if set(drops) - {"outside_workspace", "no_return"}:  # lost or late: load, not data
        print("warning: the ingest dropped readings besides those outside the workspace or "
              "without a return; if the machine was busy, a lower --time-scale lets it keep "
              "up", file=sys.stderr)
