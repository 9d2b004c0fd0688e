"""``poam-ros mission``, and what it shares with ``poam-ros sim``: the setup options, the line
printed per decision epoch, the summary and the files written, so that a mission run in one
process and the same mission over the ROS graph report alike."""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

EPOCH_HEADER = f"{'epoch':>5} {'samples':>7} {'SMSE':>7} {'MSLL':>7} {'update s':>8}"


def add_setup_arguments(parser: argparse.ArgumentParser, out: str) -> None:
    """The options that pick the mission: parameter file, map, seed, budget, method, output."""
    parser.add_argument("--params", type=Path,
                        help="parameter file (default: the package's config/poam_ros.yaml)")
    parser.add_argument("--map", help="terrain file (.hgt, .npy, .npz, image); default: the "
                                      "parameter file's, else the embedded bathymetry")
    parser.add_argument("--seed", type=int, help="mission seed (default: the file's)")
    parser.add_argument("--max-samples", type=int, help="sample budget (default: the file's)")
    parser.add_argument("--method", help="mapping method (poam, ...; default: the file's)")
    parser.add_argument("--out", default=out, type=Path, help=f"output folder (default {out})")


def setup_from_args(args):
    """(MissionSetup, parameter file) from :func:`add_setup_arguments`' options."""
    from poam_ros.params.mission_setup import MissionSetup, default_parameter_file

    params = (args.params or default_parameter_file()).resolve()
    setup = MissionSetup.from_file(params)
    if args.map:
        # Absolute, so that processes started elsewhere read the same file.
        setup = setup.over_map(Path(args.map).resolve())
    if args.seed is not None:
        setup.mission = setup.mission.replace(seed=args.seed)
    if args.max_samples is not None:
        setup.mission = setup.mission.replace(max_samples=args.max_samples)
    if args.method:
        setup.mapping = setup.mapping.replace(method=args.method)
    return setup, params


def describe(setup) -> str:
    return (f"{setup.mapping.method} ({setup.mapping.kernel} kernel, M ≤ "
            f"{setup.mapping.num_inducing}) on {setup.terrain.path or 'the embedded bathymetry'}, "
            f"{setup.mission.max_samples} samples, seed {setup.mission.seed}")


def epoch_line(record) -> str:
    return (f"{record.epoch:>5} {record.num_samples:>7} {record.smse:>7.4f} "
            f"{record.msll:>7.3f} {record.update_time:>8.3f}")


def summarize(records: Sequence, wall_time: float, setup, **extra) -> dict:
    """The run's summary: the final epoch, epoch averages, update times, wall time, setup."""
    from poam_ros.mapping.epochs import epoch_averages

    updates = [r.update_time for r in records]
    return {"final": asdict(records[-1]), "epoch_averages": epoch_averages(records),
            "epochs": len(records), "median_update_time": statistics.median(updates),
            "max_update_time": max(updates), "wall_time": wall_time, **extra,
            "setup": setup.to_dict()}


def report(summary: dict, records: Sequence, out: Path, name: str, figure: Path) -> None:
    """Write ``<name>.json`` and ``epochs.jsonl`` to ``out`` and print the summary."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=1))
    (out / "epochs.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    final, averages = summary["final"], summary["epoch_averages"]
    print(f"\n{summary['epochs']} epochs, {final['num_samples']} samples, "
          f"{final['sim_time']:.0f} s of sim time in {summary['wall_time']:.0f} s wall time")
    print(f"final:    SMSE {final['smse']:.4f}  MSLL {final['msll']:.3f}  "
          f"RMSE {final['rmse']:.3f}")
    print(f"averaged over epochs: SMSE {averages['smse']:.4f}  MSLL {averages['msll']:.3f}")
    print(f"update time: median {summary['median_update_time']:.3f} s, "
          f"max {summary['max_update_time']:.3f} s")
    print(f"figure: {figure}; records: {out}/{name}.json, epochs.jsonl")


def mission(argv) -> int:
    """The simulated mission (Algorithm 1) in one process, printing progress and a summary."""
    from poam_ros.figures import plot_mission
    from poam_ros.mission import Mission, MissionError
    from poam_ros.params import ConfigError
    from poam_ros.sim import TerrainError

    parser = argparse.ArgumentParser(prog="poam-ros mission", description=mission.__doc__)
    add_setup_arguments(parser, "results/mission")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        setup, _ = setup_from_args(args)
        run = Mission(setup)
        print(f"mission: {describe(setup)}, device {run.model.device}")
        print(EPOCH_HEADER)
        result = run.run(lambda record: print(epoch_line(record), flush=True))
    except (ConfigError, MissionError, TerrainError) as error:
        print(f"poam-ros mission: {error}", file=sys.stderr)
        return 2
    figure = plot_mission(result, args.out / "mission.png",
                          title=f"{setup.mapping.method}, seed {setup.mission.seed}")
    dropped = {"outside_workspace": run.outside_workspace, "no_return": run.no_return}
    report(summarize(result.records, result.wall_time, setup, dropped=dropped), result.records,
           args.out, "mission", figure)
    print(f"dropped soundings: {run.outside_workspace} outside the workspace, "
          f"{run.no_return} without a return (off the terrain)")
    return 0
