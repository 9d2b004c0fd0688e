"""``poam-ros mission``, and what it shares with ``poam-ros sim``: the setup options and their
checks, the line printed per decision epoch, the summary and the files written, so that a
mission run in one process and the same mission over the ROS graph report alike."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import numpy as np

from poam_ros.cli.common import INTERRUPTED, ArgumentParser, fail

FIRST_EPOCH_NOTE = ("      (epoch 0 is the pilot survey: the scalers are fitted and the inducing "
                    "inputs chosen from scratch, so it can take longer)")


def add_setup_arguments(parser: argparse.ArgumentParser, out: str) -> None:
    """The options that pick the mission: parameter file, map, seed, budget, method, device,
    output."""
    parser.add_argument("--params", type=Path,
                        help="parameter file (default: the package's config/topobathy.yaml, "
                             "the embedded bathymetry at true scale; with --map, "
                             "config/poam_ros.yaml, the POAM paper's setting)")
    parser.add_argument("--map", help="terrain file (.hgt, .npy, .npz, image); default: the "
                                      "parameter file's, else the embedded bathymetry")
    parser.add_argument("--seed", type=int, help="mission seed (default: the file's)")
    parser.add_argument("--max-samples", type=int, help="sample budget (default: the file's)")
    parser.add_argument("--method", help="mapping method (poam, ...; default: the file's)")
    parser.add_argument("--device", help="where the model runs: auto, cpu or cuda (default: "
                                         "the file's)")
    parser.add_argument("--out", default=out, type=Path, help=f"output folder (default {out})")


def setup_errors() -> tuple[type[Exception], ...]:
    """What a bad setup raises: a bad value, file or map, a workspace off the terrain, a
    georeferenced terrain that cannot be placed (its survey area off the raster, say)."""
    from poam_ros.geo.georeference import GeoError
    from poam_ros.params import ConfigError
    from poam_ros.setup.mission_setup import MissionError
    from poam_ros.sim import TerrainError

    return ConfigError, MissionError, TerrainError, GeoError


def setup_from_args(args):
    """(MissionSetup, parameter file) from :func:`add_setup_arguments`' options; raises
    :func:`setup_errors` for a bad file or value."""
    from poam_ros.setup.mission_setup import (
        DEFAULT_SURVEY_FILE,
        MissionSetup,
        default_parameter_file,
    )

    params = args.params
    if params is None:  # a map of the user's is placed as the paper places its maps
        params = default_parameter_file() if args.map else \
            default_parameter_file(DEFAULT_SURVEY_FILE)
    params = params.resolve()
    setup = MissionSetup.from_file(params)
    if args.map:
        # Absolute, so that processes started elsewhere read the same file.
        setup = setup.over_map(Path(args.map).resolve())
    if args.seed is not None:
        setup.mission = setup.mission.replace(seed=args.seed)
    if args.max_samples is not None:
        setup.mission_control = setup.mission_control.replace(max_samples=args.max_samples)
    mapping = {"method": args.method, "device": args.device}
    setup.mapping = setup.mapping.replace(**{k: v for k, v in mapping.items() if v})
    return setup, params


def build_mission(setup):
    """The ROS-free mission of ``setup``; building it reads the terrain, checks the workspace
    against it and makes the model (on its device) and the planner, so a setup it accepts
    starts. Raises :func:`setup_errors`."""
    from poam_ros.mission import Mission

    return Mission(setup)


def describe(setup) -> str:
    return (f"{setup.mapping.method} ({setup.mapping.kernel} kernel, M ≤ "
            f"{setup.mapping.num_inducing}) on {setup.terrain.path or 'the embedded bathymetry'}, "
            f"{setup.mission_control.max_samples} samples, seed {setup.mission.seed}")


def map_name(setup) -> str:
    """The map as figure titles name it: the terrain file's stem or the embedded bathymetry."""
    return Path(setup.terrain.path).stem if setup.terrain.path else "embedded bathymetry"


class EpochLog:
    """Prints each update's line as it comes and appends its record to ``epochs.jsonl`` at
    once, so that the file holds every epoch printed whenever the run stops.

    ``label`` names the first column; ``first_note`` is printed after the first line (why
    the first update is the slow one)."""

    def __init__(self, out: Path, label: str = "epoch", first_note: str | None = FIRST_EPOCH_NOTE):
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "epochs.jsonl"
        self.records: list = []
        self.width = max(5, len(label))
        self.header = (f"{label:>{self.width}} {'samples':>7} {'SMSE':>7} {'MSLL':>7} "
                       f"{'update s':>8}")
        self.first_note = first_note
        self._file = self.path.open("w")

    def __call__(self, record) -> None:
        self._file.write(json.dumps(asdict(record)) + "\n")
        self._file.flush()
        self.records.append(record)
        print(f"{record.epoch:>{self.width}} {record.num_samples:>7} {record.smse:>7.4f} "
              f"{record.msll:>7.3f} {record.update_time:>8.3f}", flush=True)
        if len(self.records) == 1 and self.first_note:
            print(self.first_note, flush=True)

    def __enter__(self) -> "EpochLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self._file.close()


def summarize(records: Sequence, wall_time: float, setup, **extra) -> dict:
    """The run's summary: the final epoch, epoch averages, update times, wall time, setup."""
    from poam_ros.mapping.epochs import epoch_averages

    updates = [r.update_time for r in records]
    return {"final": asdict(records[-1]), "epoch_averages": epoch_averages(records),
            "epochs": len(records), "median_update_time": statistics.median(updates),
            "max_update_time": max(updates), "wall_time": wall_time, **extra,
            "setup": setup.to_dict()}


def report(summary: dict, out: Path, name: str, figure: Path) -> None:
    """Write ``<name>.json`` to ``out`` (``epochs.jsonl`` is the :class:`EpochLog`'s) and print
    the summary: with several channels, each channel's final scores (the first's are the
    record's own) and figure (:func:`~poam_ros.figures.plot_mission`)."""
    from poam_ros.figures import channel_figure, scored_channels

    (out / f"{name}.json").write_text(json.dumps(summary, indent=1))
    final, averages = summary["final"], summary["epoch_averages"]
    channels = scored_channels(final["extra"])
    print(f"\n{summary['epochs']} epochs, {final['num_samples']} samples, "
          f"{final['sim_time']:.0f} s of sim time in {summary['wall_time']:.0f} s wall time")
    print_final(final)
    print(f"averaged over epochs: SMSE {averages['smse']:.4f}  MSLL {averages['msll']:.3f}")
    print(f"update time: median {summary['median_update_time']:.3f} s, "
          f"max {summary['max_update_time']:.3f} s")
    written = [channel_figure(figure, channel) for channel in channels[1:]]
    figures = ", ".join(str(f) for f in [figure] + [f for f in written if f.is_file()])
    print(f"figure: {figures}; records: {out}/{name}.json, epochs.jsonl")


def print_final(final: dict) -> None:
    """Print an epoch record's (as a dict) final scores: with several channels the first
    line is the depth's (the record's own), then one line per further channel."""
    from poam_ros.figures import scored_channels

    channels = scored_channels(final["extra"])
    print(f"final:    SMSE {final['smse']:.4f}  MSLL {final['msll']:.3f}  "
          f"RMSE {final['rmse']:.3f}" + (f" ({channels[0]})" if channels else ""))
    for channel in channels[1:]:
        print(f"final {channel}: SMSE {final['extra'][f'smse_{channel}']:.4f}  "
              f"MSLL {final['extra'][f'msll_{channel}']:.3f}  "
              f"RMSE {final['extra'][f'rmse_{channel}']:.3f}")


def print_unmapped(outside_workspace: int, no_return: int) -> None:
    """Say which soundings were not mapped and why: both are expected, not faults."""
    if outside_workspace:
        print(f"{outside_workspace} soundings outside the workspace were not mapped (legs "
              f"that cross its boundary)")
    if no_return:
        print(f"{no_return} soundings returned nothing (the vehicle swung beyond the terrain) "
              f"and were not mapped")


def mission(argv) -> int:
    """The simulated mission (Algorithm 1) in one process, printing progress and a summary."""
    from poam_ros.figures import plot_mission
    from poam_ros.geo import GeoReference

    parser = ArgumentParser(prog="poam-ros mission", description=mission.__doc__)
    add_setup_arguments(parser, "results/mission")
    add_view_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        setup, _ = setup_from_args(args)
        run = build_mission(setup)
        view = open_view(args, setup)
    except setup_errors() as error:
        return fail("mission", error)
    print(f"mission: {describe(setup)}, device {run.model.device}")
    start = time.perf_counter()
    with EpochLog(args.out) as log, showing(view, args.out):
        print(log.header)
        try:
            result = run.run(log if view is None else _both(log, mission_feed(view, run)))
        except KeyboardInterrupt:
            return _interrupted(run, log, time.perf_counter() - start, args.out)
        except setup_errors() as error:  # a budget smaller than the pilot survey
            return fail("mission", error)
    dropped = {"outside_workspace": run.outside_workspace, "no_return": run.no_return}
    figure = plot_mission(result, args.out / "mission.png", map_name(setup),
                          f"seed {setup.mission.seed}", GeoReference.from_config(setup.geo))
    print(f"mission {run.control.state}: {run.control.reason}")
    report(summarize(result.records, result.wall_time, setup, dropped=dropped,
                     outcome="budget", mission=run.control.reason), args.out, "mission",
           figure)
    print_unmapped(run.outside_workspace, run.no_return)
    return 0


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """``--view`` and where it listens."""
    parser.add_argument("--view", action="store_true",
                        help="serve a live Foxglove view of the mission (WebSocket; open "
                             "config/foxglove_layout.json or the one written to --out)")
    parser.add_argument("--view-host", default="127.0.0.1",
                        help="the view's address (default loopback; 0.0.0.0 exposes the map "
                             "to every network this machine is on)")
    parser.add_argument("--view-port", type=int, default=8765, help="the view's port")


def open_view(args, setup):
    """With ``--view``, the mission's :class:`~poam_ros.view.server.LiveView`; else None.
    Raises ``ConfigError`` when it cannot serve (no Foxglove SDK, the port taken)."""
    if not args.view:
        return None
    from poam_ros.dependencies import MissingDependency
    from poam_ros.geo import GeoReference
    from poam_ros.mapping.channels import channel_names
    from poam_ros.params import ConfigError
    from poam_ros.view.config import ViewConfig

    try:
        from poam_ros.view.mission_feed import map_layers
        from poam_ros.view.server import LiveView

        return LiveView(ViewConfig(host=args.view_host, port=args.view_port),
                        np.reshape(setup.workspace.vertices, (-1, 2)),
                        GeoReference.from_config(setup.geo), setup.grid.std_scale_max,
                        map_layers(channel_names(setup.ingest.channels)))
    except MissingDependency as error:
        raise ConfigError(str(error)) from None
    except RuntimeError as error:  # the SDK's server could not bind
        raise ConfigError(f"--view: cannot serve on {args.view_host}:{args.view_port}: "
                          f"{error}") from None


@contextlib.contextmanager
def showing(view, out: Path):
    """While entered, ``view`` (None: nothing) serves; then its layout with the run's colour
    ranges is written to ``out``."""
    if view is None:
        yield
        return
    from poam_ros.view.layout import write_layout

    print(f"live view: {view.address} (Foxglove: open connection, then the layout "
          f"{out / 'foxglove_layout.json'})", flush=True)
    try:
        yield
    finally:
        view.close()
        write_layout(out / "foxglove_layout.json", view.ranges)


def mission_feed(view, run):
    from poam_ros.view.mission_feed import MissionFeed

    return MissionFeed(view, run)


def _both(*callbacks):
    return lambda record: [callback(record) for callback in callbacks]


def _interrupted(run, log: EpochLog, wall_time: float, out: Path) -> int:
    """Keep the summary of the epochs so far beside their records; say so."""
    kept = "epochs.jsonl"
    if log.records:
        dropped = {"outside_workspace": run.outside_workspace, "no_return": run.no_return}
        summary = summarize(log.records, wall_time, run.setup, dropped=dropped,
                            outcome="interrupted")
        (out / "mission.json").write_text(json.dumps(summary, indent=1))
        kept += ", mission.json"
    return fail("mission", f"interrupted after {len(log.records)} epoch(s); kept in {out}: "
                           f"{kept}", INTERRUPTED)
