"""``poam-ros bench journal``: what the mapper's crash journal costs, and how long a restart
after a crash takes to its first map. Needs no ROS.

* **Cost.** Two mapping loops over the same ``--updates`` batches of ``--batch`` samples, from
  the same new model, updated in turn: one without the journal, one with it as the mapper keeps
  it (each batch appended before its update and fsync'd at once, ``sync_period`` 0, the dearest
  setting; a checkpoint and an autosave every ``--autosave-every`` updates). Per update: the
  median time of each loop, and the journal's own times (append with fsync, autosave). On
  disk: bytes per sample of the journal and of an autosave.
* **Restart.** The journal a killed mapper leaves after a survey of ``--samples`` samples: an
  autosave holding all but the last ``--tail`` samples and the journal's tail after it (in
  ``--batch``-sample records), and the worst case, no autosave at all (the whole survey in the
  journal). Each restart runs in a fresh process, as a mapper's would: read the journal, load
  the autosave (or make a new model), replay the tail as one batch (one update), predict the
  first map on the default workspace's grid (60 m × 60 m, 2 m cells). Timed from opening the
  journal to the map; the process's start and imports are not included.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

from poam_ros.benchmark.core_speed import noisy_samples
from poam_ros.cli.common import ArgumentParser
from poam_ros.mapping.journal import Journal
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.models import MappingConfig, load_model, make_model

EXTENT = (-30.0, 30.0, -30.0, 30.0)  # m: the default workspace, where noisy_samples lie
RESOLUTION = 2.0  # m: the default map cell


def survey(samples: int, batch: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``samples`` noisy samples of the synthetic field in batches of ``batch``."""
    rng = np.random.default_rng(seed)
    return [noisy_samples(rng, min(batch, samples - start))
            for start in range(0, samples, batch)]


class _Run:
    """One of the two mapping loops of the cost measurement, journaled into ``folder`` as
    the mapper journals (each batch appended before its update) or not (None)."""

    def __init__(self, config: MappingConfig, autosave_every: int, folder: Path | None):
        self.model, self.journal, self.every = make_model(config), None, autosave_every
        if folder is not None:
            self.journal = Journal(folder, sync_period=0.0)
            self.journal.start_new()
        self.updates, self.appends, self.autosaves = [], [], []
        self.autosave_size = (0, 0)  # bytes, samples of the last autosave

    def update(self, index: int, xy: np.ndarray, z: np.ndarray, log) -> None:
        tic, checkpoint = time.perf_counter(), None
        if self.journal is not None:
            self.journal.append(xy, z)
            self.appends.append(time.perf_counter() - tic)
            if index % self.every == 0:
                checkpoint = self.journal.checkpoint()
        step = MappingLoop(self.model).step([(xy, z)])
        if step.failure:
            log(f"update {index} failed: {step.failure}")
        elif checkpoint is not None:
            before = time.perf_counter()
            path = self.journal.autosave(self.model, checkpoint)
            self.autosaves.append(time.perf_counter() - before)
            self.autosave_size = (path.stat().st_size, self.model.num_samples)
        self.updates.append(time.perf_counter() - tic)

    def result(self, samples: int) -> dict:
        result = {"update_median": statistics.median(self.updates), "updates": self.updates,
                  "num_samples": self.model.num_samples}
        if self.journal is not None:
            self.journal.close()
            result.update({
                "append_fsync_median": statistics.median(self.appends),
                "autosave_median": (statistics.median(self.autosaves) if self.autosaves
                                    else float("nan")),
                "journal_bytes_per_sample": self.journal.bytes / samples,
                "autosave_bytes": self.autosave_size[0],
                "autosave_samples": self.autosave_size[1]})
        return result


def loop_cost(config: MappingConfig, batches, autosave_every: int, folder: Path,
              log=print) -> tuple[dict, dict]:
    """Per-update times of the mapping loop over ``batches`` without and with the journal
    (in ``folder``): two models updated in turn, each batch first to one then to the other,
    so that both see the machine alike."""
    plain = _Run(config, autosave_every, None)
    journaled = _Run(config, autosave_every, folder)
    for index, (xy, z) in enumerate(batches, start=1):
        for run in (plain, journaled) if index % 2 else (journaled, plain):
            run.update(index, xy, z, log)
    samples = sum(len(z) for _, z in batches)
    return plain.result(samples), journaled.result(samples)


def restart(directory: Path, config: MappingConfig, threads: int) -> dict:
    """A restart from the journal in ``directory``, in the calling process (run it in a
    fresh one), to its first map: the times of its steps."""
    if threads:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    journal = Journal(directory)
    recovery = journal.recover()
    read = time.perf_counter()
    model = load_model(recovery.autosave) if recovery.autosave else make_model(config)
    loaded = time.perf_counter()
    saved = model.num_samples
    step = MappingLoop(model).step([(recovery.xy, recovery.z)])
    updated = time.perf_counter()
    MappingLoop(model).layers(MapGrid(EXTENT, RESOLUTION))
    mapped = time.perf_counter()
    journal.close()
    return {"from_autosave": saved, "from_journal": len(recovery.z),
            "num_samples": model.num_samples, "failure": step.failure,
            "read": read - start, "load": loaded - read, "replay": updated - loaded,
            "map": mapped - updated, "total": mapped - start}


def restart_cost(config: MappingConfig, batches, tail: int, threads: int, folder: Path,
                 log=print) -> tuple[dict, dict]:
    """The two restarts of the module docstring, each in a fresh process, and the cost of
    the autosave of the first."""
    samples = sum(len(z) for _, z in batches)
    split = len(batches) - max(1, round(tail / len(batches[0][1])))
    model = make_model(config)
    for xy, z in batches[:split]:
        model.add_data(xy, z)
    tic = time.perf_counter()
    model.update()
    log(f"built the autosave's model: {model.num_samples} samples in one update, "
        f"{time.perf_counter() - tic:.1f} s")
    tic = time.perf_counter()
    model.save(folder / "state.pt")
    save = {"time": time.perf_counter() - tic, "bytes": (folder / "state.pt").stat().st_size,
            "num_samples": model.num_samples}
    cases = {"autosave + tail": (folder / "autosaved", model, batches[split:]),
             "journal only": (folder / "journal_only", None, batches)}
    result = {}
    for name, (directory, base, records) in cases.items():
        journal = Journal(directory)
        journal.start_new(base)
        for xy, z in records:
            journal.append(xy, z)
        journal.close()  # as a SIGKILL leaves it, fsync'd
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            row = pool.submit(restart, directory, config, threads).result()
        if row["num_samples"] != samples:
            raise RuntimeError(f"the restart holds {row['num_samples']} samples, not {samples}")
        result[name] = row
        log(f"restart, {name}: {row['from_autosave']} + {row['from_journal']} samples, "
            f"first map after {row['total']:.1f} s (read {row['read']:.2f}, load "
            f"{row['load']:.2f}, replay {row['replay']:.1f}, map {row['map']:.2f})")
    return result, save


def markdown(result: dict) -> str:
    plain, journaled = result["without"], result["with"]
    lines = [
        f"Journal cost: {result['updates']} updates of {result['batch']} samples, M = "
        f"{result['num_inducing']}, {result['dtype']}, {result['threads']} torch threads:",
        "",
        "| | median update (s) | append + fsync (ms) | autosave (ms) | journal B/sample |",
        "|---|---:|---:|---:|---:|",
        f"| without journal | {plain['update_median']:.3f} | | | |",
        f"| with journal | {journaled['update_median']:.3f} | "
        f"{journaled['append_fsync_median'] * 1e3:.2f} | "
        f"{journaled['autosave_median'] * 1e3:.1f} | "
        f"{journaled['journal_bytes_per_sample']:.2f} |",
        "",
        f"Update with the journal minus the same update without, mean over the updates: "
        f"{result['overhead_mean'] * 1e3:+.1f} ms (sample std "
        f"{result['overhead_std'] * 1e3:.1f} ms).",
        "",
        f"Restart after a crash, {result['samples']:,}-sample survey, fresh process, "
        f"journal opened → first map:",
        "",
        "| journal left | samples from autosave | from journal | read (s) | load (s) "
        "| replay update (s) | map (s) | total (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in result["restart"].items():
        lines.append(f"| {name} | {row['from_autosave']:,} | {row['from_journal']:,} | "
                     f"{row['read']:.2f} | {row['load']:.2f} | {row['replay']:.2f} | "
                     f"{row['map']:.2f} | {row['total']:.2f} |")
    save = result["autosave"]
    lines += ["", f"An autosave of the {journaled['autosave_samples']:,}-sample model: "
                  f"{journaled['autosave_bytes'] / 1e6:.1f} MB; of the "
                  f"{save['num_samples']:,}-sample one: {save['time'] * 1e3:.0f} ms, "
                  f"{save['bytes'] / 1e6:.1f} MB."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench journal", description=__doc__)
    parser.add_argument("--out", default="results/journal_cost", help="output folder")
    parser.add_argument("--samples", type=int, default=50_000, help="the survey's samples")
    parser.add_argument("--tail", type=int, default=5_000,
                        help="samples in the journal after the last autosave")
    parser.add_argument("--batch", type=int, default=500, help="samples per batch")
    parser.add_argument("--updates", type=int, default=20, help="updates timed for the cost")
    parser.add_argument("--autosave-every", type=int, default=5,
                        help="updates between autosaves in the cost run")
    parser.add_argument("--num-inducing", type=int, default=500)
    parser.add_argument("--dtype", choices=("float64", "float32"),
                        help="the model's precision (default: MappingConfig's)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args(argv)
    if min(args.samples, args.batch, args.updates, args.autosave_every) < 1 \
            or not 0 < args.tail < args.samples:
        parser.error("sizes must be positive, and --tail below --samples")
    if args.threads:
        torch.set_num_threads(args.threads)
    config = MappingConfig(device="cpu", num_inducing=args.num_inducing,
                           **({"dtype": args.dtype} if args.dtype else {}))
    result = {"samples": args.samples, "tail": args.tail, "batch": args.batch,
              "updates": args.updates, "num_inducing": args.num_inducing,
              "dtype": config.dtype,
              "threads": torch.get_num_threads(), "torch": torch.__version__}
    batches = survey(args.batch * args.updates, args.batch, seed=1)
    with tempfile.TemporaryDirectory() as folder:
        result["without"], result["with"] = loop_cost(config, batches, args.autosave_every,
                                                      Path(folder) / "cost")
        differences = np.subtract(result["with"]["updates"], result["without"]["updates"])
        result["overhead_mean"] = float(differences.mean())
        result["overhead_std"] = float(differences.std(ddof=1)) if len(differences) > 1 \
            else float("nan")
        result["restart"], result["autosave"] = restart_cost(
            config, survey(args.samples, args.batch), args.tail, args.threads, Path(folder))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "journal_cost.json").write_text(json.dumps(result, indent=2))
    (out / "journal_cost.md").write_text(markdown(result) + "\n")
    print(markdown(result))
    print(f"written to {out}/journal_cost.{{json,md}}")
    return 0
