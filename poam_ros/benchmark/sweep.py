"""Benchmark sweeps: maps × methods × seeds of the simulated mission, as the POAM paper's Table I.

Each run writes its per-epoch records (``runs/<run>.jsonl``) and, last, a status file
(``runs/<run>.json``: done or failed, with the error). A sweep that is interrupted resumes
without redoing runs that have a status file; a failed run is recorded and the sweep goes on.
The summary averages each run's metrics over its decision epochs and reports mean ± sample std
over seeds (``summary.md``, ``summary.csv``); a second table averages over the sample counts
1,000 … budget instead, as the POAM authors' released scripts compute the paper's figures.
Curves against the number of samples per map and mission figures for chosen seeds come with it;
methods that size themselves (VIPS, OIPS, CV) add a table of their model size and a figure of
its growth (``sizing_<map>.png``: inducing inputs added per update, VIPS's bound gap and
threshold, OIPS's ρ̄, the updates the cap stopped). Runs whose records score several channels
one by one (``extra``: ``smse_<channel>``, ``msll_<channel>``: a mission with
``ingest.channels``) add a table of each channel's SMSE and MSLL (averaged over the epochs
where the channel was scored, then mean ± sample std over seeds), curves per channel and a
figure per channel. ``--maps params`` sweeps the parameter file's own terrain (the embedded
bathymetry unless it names a file), as ``poam-ros mission`` without ``--map``. ``--method-params
METHOD=FILE`` gives one method's runs the ``mapper: mapping`` parameters of FILE over
the parameter file's (``poam-vips`` with a cap and its δ beside ``poam`` at its M, in one sweep
whose runs interleave, so that their times compare); each run's status file records them.
``--jobs`` runs missions in parallel worker processes, each with ``--threads`` torch threads
(missions are independent; one thread per job on a machine with as many cores as jobs keeps the
timings comparable between methods); ``--cluster ray`` runs them as Ray tasks instead, on a
local Ray or a cluster (:mod:`~poam_ros.benchmark.ray_cluster`), with the same files.

Every map, method and kernel is checked before the first run starts. Ctrl-C or SIGTERM stops
the sweep within a second, the runs in progress with it; the finished runs stay, and the
same command resumes.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import signal
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from poam_ros.benchmark.sweep_summary import summarise
from poam_ros.cli.common import INTERRUPTED, ArgumentParser, fail
from poam_ros.mission import Mission
from poam_ros.models.config import MappingConfig
from poam_ros.params import ConfigError
from poam_ros.params.files import (
    config_from_parameters,
    load_node_parameters,
    load_parameter_tree,
    section_matches,
)
from poam_ros.setup.mission_setup import MissionError, MissionSetup, default_parameter_file
from poam_ros.sim import TerrainError

log = logging.getLogger(__name__)

DEFAULT_DATA_DIR = Path("..") / "shared" / "data" / "srtm"

#: ``--maps`` entry that names the parameter file's own terrain rather than a file
OWN_TERRAIN = "params"


@dataclass(frozen=True)
class RunSpec:
    map: str  # the map's name in file names and tables: a tile name or a file's stem
    method: str
    kernel: str
    seed: int
    terrain: str  # the map's file; empty: the parameter file's terrain
    mapping: tuple[tuple[str, Any], ...] = ()  # the method's own MappingConfig values

    @property
    def name(self) -> str:
        return f"{self.map}_{self.method}_{self.kernel}_{self.seed}"

    def mapping_config(self, base: MappingConfig) -> MappingConfig:
        """``base`` with this run's method, kernel and the method's own values."""
        return base.replace(method=self.method, kernel=self.kernel, **dict(self.mapping))


def method_parameters(entries: list[str], methods: list[str]
                      ) -> dict[str, tuple[tuple[str, Any], ...]]:
    """``--method-params METHOD=FILE`` entries: per method, the ``mapper: ros__parameters:
    mapping`` values of FILE but the method and kernel, checked as MappingConfig values.
    Raises ConfigError for an entry not of that form, a method not swept or given twice, or a
    file with anything else."""
    values: dict[str, tuple[tuple[str, Any], ...]] = {}
    for entry in entries:
        method, _, path = entry.partition("=")
        if not method or not path:
            raise ConfigError(f"--method-params: expected METHOD=FILE, got {entry!r}")
        if method not in methods or method in values:
            problem = "given twice" if method in values else "not among --methods"
            raise ConfigError(f"--method-params: {method!r} is {problem}")
        if not Path(path).is_file():
            raise ConfigError(f"--method-params: no parameter file at {path}")
        parameters = load_node_parameters(path, "mapper")
        others = sorted(name for name in parameters if not _own_mapping_value(name))
        if len(tree := load_parameter_tree(path)) != 1 or not section_matches(
                next(iter(tree)), "mapper") or others:
            extra = f" (not {', '.join(others)})" if others else ""
            raise ConfigError(f"--method-params: {path} may hold only mapper: ros__parameters: "
                              f"mapping: values{extra}")
        try:
            config_from_parameters(parameters, MappingConfig, "mapping")
        except ConfigError as error:
            raise ConfigError(f"--method-params: {path}: {error}") from None
        values[method] = tuple(sorted(  # hashable, as a RunSpec must be
            (name.split(".", 1)[1], tuple(value) if isinstance(value, list) else value)
            for name, value in parameters.items()))
    return values


def _own_mapping_value(name: str) -> bool:
    """Whether a method's own parameter file may set ``name``: a ``mapping.*`` value (a method
    family's ``mapping.<family>.*`` too) but the method and kernel, which the sweep sets."""
    config, _, field = name.partition(".")
    family, dot, _ = field.partition(".")
    return (config == "mapping" and field not in ("method", "kernel")
            and (not dot or family in MappingConfig.groups()))


def map_files(maps: str, data_dir: Path) -> dict[str, Path | None]:
    """``--maps`` by name: each a tile name (``<data_dir>/<name>_360.npz``) or a file, named
    by its stem, so that a path names no run file in a folder of its own; ``params`` (None)
    is the parameter file's own terrain. Raises ConfigError for a missing file or two maps of
    one name."""
    files: dict[str, Path | None] = {}
    for entry in maps.split(","):
        if entry == OWN_TERRAIN:
            files[entry] = None
            continue
        given = Path(entry)
        is_file = bool(given.suffix) or len(given.parts) > 1
        name, path = (given.stem, given) if is_file else (entry, data_dir / f"{entry}_360.npz")
        if not path.is_file():
            looked_up = "" if is_file else f" (tile {entry!r} looked up in --data-dir)"
            raise ConfigError(f"--maps: no map file at {path}{looked_up}")
        if name in files:
            raise ConfigError(f"--maps: {files[name]} and {path} would both be named {name!r}")
        files[name] = path.resolve()
    return files


def check_setups(specs: list[RunSpec], base: MissionSetup) -> None:
    """Every map, method and kernel of the sweep, before a run starts: each map's mission is
    built once (its terrain read, the workspace checked against it, the model made on its
    device). Raises ConfigError, MissionError or TerrainError."""
    for spec in {(s.method, s.kernel, s.mapping): s for s in specs}.values():
        spec.mapping_config(base.mapping)  # once per method setting, not per map and seed
    for terrain in dict.fromkeys(spec.terrain for spec in specs):
        Mission(_over_map(base, terrain))


def _over_map(base: MissionSetup, terrain: str) -> MissionSetup:
    """``base`` over the run's terrain file, or as it is for the parameter file's terrain."""
    return base.over_map(terrain) if terrain else base


def run_one(spec: RunSpec, base: MissionSetup, out: Path, figure: bool = False) -> dict:
    """Run one mission and write its records and status; never raises for a failed run."""
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    records_path, status_path = runs / f"{spec.name}.jsonl", runs / f"{spec.name}.json"
    status = {"run": asdict(spec)}
    try:
        setup = replace(_over_map(base, spec.terrain),
                        mapping=spec.mapping_config(base.mapping),
                        mission=base.mission.replace(seed=spec.seed))
        with open(records_path.with_suffix(".partial"), "w") as handle:
            def write(record):
                handle.write(json.dumps(asdict(record)) + "\n")
                handle.flush()
            result = Mission(setup).run(write)
        os.replace(records_path.with_suffix(".partial"), records_path)
        status.update(status="done", averages=result.averages(), epochs=len(result.records),
                      samples=result.final.num_samples, wall_time=result.wall_time)
        if figure:
            from poam_ros.figures import plot_mission
            plot_mission(result, out / "figures" / f"{spec.name}.png", spec.map,
                         f"{spec.kernel} kernel, seed {spec.seed}")
    except Exception as error:  # a sweep records any failure of a run and goes on
        status.update(status="failed", error=f"{type(error).__name__}: {error}",
                      traceback=traceback.format_exc(limit=5))
        log.error("run %s failed: %s", spec.name, status["error"])
    tmp = status_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(status, indent=1))
    os.replace(tmp, status_path)
    return status


def run_sweep(specs: list[RunSpec], base: MissionSetup, out: Path,
              figure_seeds: set[int] = frozenset(), progress: bool = True, jobs: int = 1,
              threads: int = 0, window: tuple[int, int] | None = None,
              cluster: str | None = None) -> list[dict]:
    """Run every spec without a status file yet (``jobs`` at a time, or as tasks on a Ray
    ``cluster``: :mod:`~poam_ros.benchmark.ray_cluster`), then summarise all. A
    KeyboardInterrupt (Ctrl-C, SIGTERM) ends the runs in progress and propagates."""
    from tqdm import tqdm

    todo = [s for s in specs if not (out / "runs" / f"{s.name}.json").exists()]
    if len(todo) < len(specs):
        log.info("resuming: %d of %d runs already finished", len(specs) - len(todo), len(specs))
    bar = tqdm(total=len(todo), desc="sweep", unit="run", disable=not progress)
    if cluster is not None:
        from poam_ros.benchmark.ray_cluster import run_on_ray

        def finished(spec: RunSpec) -> None:
            bar.set_postfix_str(spec.name)
            bar.update()

        run_on_ray(cluster, todo, base, out, set(figure_seeds), threads, finished)
    elif jobs <= 1:
        set_threads(threads)
        for spec in todo:
            bar.set_postfix_str(spec.name)
            run_one(spec, base, out, figure=spec.seed in figure_seeds)
            bar.update()
    else:
        # spawn, not fork: a forked torch process can deadlock in its thread pools
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(jobs, context, initializer=_init_worker,
                                 initargs=(threads,)) as pool:
            futures = {pool.submit(run_one, spec, base, out, spec.seed in figure_seeds): spec
                       for spec in todo}
            try:
                for future in as_completed(futures):
                    future.result()  # run_one records failures itself; this re-raises crashes
                    bar.set_postfix_str(futures[future].name)
                    bar.update()
            except KeyboardInterrupt:
                # Leaving the pool would wait for the runs in progress: end them first.
                pool.shutdown(wait=False, cancel_futures=True)
                for worker in multiprocessing.active_children():
                    worker.terminate()
                raise
    bar.close()
    statuses = [json.loads((out / "runs" / f"{s.name}.json").read_text()) for s in specs]
    summarise(specs, statuses, out, window)
    return statuses


def set_threads(threads: int) -> None:
    if threads:
        torch.set_num_threads(threads)


def _init_worker(threads: int) -> None:
    """A worker ignores SIGINT: a Ctrl-C at the terminal reaches every process of its group,
    and the sweep's own process alone stops the sweep, ending the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_threads(threads)


def parse_seeds(text: str) -> list[int]:
    """``0-9``, ``0,3,5`` or a mix such as ``0,3-8``, in the order given; empty: none."""
    seeds = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        seeds += range(int(first), int(last or first) + 1)
    return seeds


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.jobs < 1 or args.threads < 0:
            raise ConfigError(f"--jobs must be >= 1 and --threads >= 0, got {args.jobs} and "
                              f"{args.threads}")
        base = MissionSetup.from_file(args.params or default_parameter_file())
        if args.quick:
            base.mission = base.mission.replace(eval_grid=25)
            base.mission_control = base.mission_control.replace(max_samples=700)
            base.mapping = base.mapping.replace(num_inducing=100, train_steps=3)
        window = _window(args.window_start, base.mission_control.max_samples)
        methods = args.methods.split(",")
        own = method_parameters(args.method_params, methods)
        specs = [RunSpec(name, method, kernel, seed, "" if path is None else str(path),
                         own.get(method, ()))
                 for name, path in map_files(args.maps, args.data_dir).items()
                 for method in methods for kernel in args.kernels.split(",")
                 for seed in args.seeds]
        check_setups(specs, base)
        if args.cluster is not None:
            from poam_ros.benchmark.ray_cluster import check_cluster

            check_cluster(args.cluster)
    except (ConfigError, MissionError, TerrainError) as error:
        return fail("bench sweep", error)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "setup.json").write_text(json.dumps(
        {**base.to_dict(), "method_params": {m: dict(v) for m, v in own.items()}}, indent=1))
    try:
        statuses = run_sweep(specs, base, args.out, set(args.figure_seeds),
                             progress=not args.no_progress, jobs=args.jobs,
                             threads=args.threads, window=window, cluster=args.cluster)
    except KeyboardInterrupt:
        done = sum((args.out / "runs" / f"{spec.name}.json").is_file() for spec in specs)
        return fail("bench sweep", f"interrupted; {done} of {len(specs)} runs finished, kept "
                                   f"in {args.out / 'runs'}; the same command resumes",
                    INTERRUPTED)
    print((args.out / "summary.md").read_text())
    failed = [s for s in statuses if s["status"] == "failed"]
    for status in failed:
        print(f"FAILED {status['run']}: {status['error']}")
    print(f"written to {args.out}/ (summary.md, summary.csv, curves_*.png, sizing_*.png, runs/, "
          "figures/)")
    return 1 if failed else 0


def _window(start: int | None, budget: int) -> tuple[int, int] | None:
    """The sample counts of the summary's second table (``--window-start`` to the budget)."""
    if start is None:
        start = 1000 if budget > 1000 else 0
    if start and not 0 < start < budget:
        raise ConfigError(f"--window-start must lie between 0 and the budget of {budget} "
                          f"samples, got {start}")
    return (start, budget) if start else None


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="poam-ros bench sweep", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--maps", default="N17E073,N47W124",
                        help="tile names (looked up as <data-dir>/<name>_360.npz) or files; "
                             f"{OWN_TERRAIN}: the parameter file's terrain")
    parser.add_argument("--methods", default="poam", help="comma-separated mapping methods")
    parser.add_argument("--kernels", default="attentive",
                        help="comma-separated kernels: attentive, rbf, matern52")
    parser.add_argument("--seeds", default="0-9", type=parse_seeds,
                        help="e.g. 0-9, 0,1,2 or 0,3-8")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), type=Path)
    parser.add_argument("--params", default=None, help="parameter file (default: the package's)")
    parser.add_argument("--method-params", action="append", default=[], metavar="METHOD=FILE",
                        help="FILE's mapper: mapping values for METHOD's runs alone, over "
                             "--params's (repeatable, one file per method)")
    parser.add_argument("--out", default="results/sweep", type=Path)
    parser.add_argument("--figure-seeds", default="0", type=parse_seeds,
                        help="seeds whose runs get a figure")
    parser.add_argument("--quick", action="store_true",
                        help="a small setting for CI: 700 samples, M = 100, 3 training steps")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="missions run in parallel")
    parser.add_argument("--cluster", metavar="ray|ray://HOST:PORT",
                        help="run each mission as a Ray task: ray starts a local Ray, "
                             "ray://HOST:PORT joins a cluster (needs Ray: pip install "
                             "'.[cluster]'); --jobs is then unused")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads per mission (0: torch's default)")
    parser.add_argument("--window-start", type=int, default=None,
                        help="the summary's second table averages each run over the sample "
                             "counts from this one to the budget, as the POAM authors' "
                             "scripts do (default 1,000 when the budget is larger; 0: no "
                             "second table)")
    return parser
