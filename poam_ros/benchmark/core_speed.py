"""Speed and memory of the mapping core: per-update cost as the data grow, the cost of one
batch against its size, prediction cost, and the map's accuracy beside them.

* **Data size.** The model is filled with samples of a synthetic field up to each size N (not
  timed), then a few updates with a decision epoch's worth of new samples are timed; each
  update is PCD + variational update + the training steps. The core's claim is that this cost
  does not grow with N. Prediction is timed at 2,000 and 10,000 query points, and the map
  scored against the true field (RMSE, mean negative log-likelihood of a new measurement).
* **Batch size.** One first update of B samples, each B in a fresh process: its time and the
  peak resident memory it adds to the built model with its data (``ru_maxrss``). The claims:
  time linear in B, memory O(B·M).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

from poam_ros.benchmark.dispatch import count_update, profile_device_update
from poam_ros.cli.common import ArgumentParser
from poam_ros.models import METHODS, MappingConfig, make_model
from poam_ros.models.compiled import compiled_step
from poam_ros.models.linalg import NumericalError
from poam_ros.models.objectives import fixed_posterior_blocks

SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
BATCH_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)
#: Measurement noise (standard deviation) of the synthetic samples, in field units.
NOISE = 1.0


def synthetic_field(xy: np.ndarray) -> np.ndarray:
    """A rough, non-stationary test surface over [-30, 30]² m."""
    x, y = xy[:, 0], xy[:, 1]
    return (20 * np.sin(x / 7) * np.cos(y / 9) + 15 * np.tanh((x - y) / 3)
            + 5 * np.sin(x * y / 40))


def measure(config: MappingConfig, sizes=SIZES, batch: int = 60, repeats: int = 5,
            fill_chunk: int = 2_000, seed: int = 0, log=print) -> dict:
    """Median timings per data size; returns a JSON-ready dict."""
    rng = np.random.default_rng(seed)

    def samples(n):
        return noisy_samples(rng, n)

    model = make_model(config)
    rows = []
    failures = 0

    def update():
        """The update's report, or None after a NumericalError (counted; its samples wait
        for the next update, as in a mission)."""
        nonlocal failures
        try:
            return model.update()
        except NumericalError as error:
            failures += 1
            log(f"update failed at N={model.num_samples}: {error}")
            return None

    for size in sizes:
        while model.num_samples < size:  # fill, untimed, in chunks that keep PCD small
            model.add_data(*samples(min(fill_chunk, size - model.num_samples)))
            update()
        reports = []
        for _ in range(repeats):
            model.add_data(*samples(batch))
            if config.device == "cuda" or model.device.type == "cuda":
                torch.cuda.synchronize()
            reports.append(update())
        reports = [r for r in reports if r is not None]
        row = {"num_samples": size,
               "update": _median([r.total_time for r in reports]),
               "inducing": _median([r.inducing_time for r in reports]),
               "variational": _median([r.variational_time for r in reports]),
               "training": _median([r.training_time for r in reports]),
               "num_inducing": model.inducing.shape[0] if model.ready else 0}
        rows.append(row)
        log(f"N={size:>6}  update {row['update']:.3f} s  (PCD {row['inducing']:.3f}, "
            f"variational {row['variational']:.3f}, training {row['training']:.3f})")
    predict = {}
    for count in (2_000, 10_000):
        query = rng.uniform(-30, 30, (count, 2))
        model.predict(query)
        times = []
        for _ in range(repeats):
            tic = time.perf_counter()
            model.predict(query)
            times.append(time.perf_counter() - tic)
        predict[str(count)] = float(np.median(times))
        log(f"predict {count:>6} points  {predict[str(count)] * 1e3:.1f} ms")
    flat = rows[-1]["update"] / rows[0]["update"]
    return {"config": config.to_dict(), "device": str(model.device), "batch": batch,
            "repeats": repeats, "torch": torch.__version__, "threads": torch.get_num_threads(),
            "machine": platform.processor() or platform.machine(), "updates": rows,
            "predict": predict, "accuracy": accuracy(model, rng),
            "largest_over_smallest": flat, "failed_updates": failures}


#: The update variants that ``--variants`` times beside each other: the options each sets.
VARIANTS = {"eager": {}, "padded": {"static_shapes": True},
            "compiled": {"static_shapes": True, "compile": "cpu"},
            "captured": {"static_shapes": True, "cuda_graphs": True}}


def measure_variants(config: MappingConfig, names, size: int = 5_000, batch: int = 60,
                     repeats: int = 5, fill_chunk: int = 2_000, seed: int = 0,
                     log=print) -> dict:
    """The update variants ``names`` (keys of :data:`VARIANTS`) side by side: one model each,
    filled with the same samples up to ``size``, then ``repeats`` rounds in which each model in
    turn takes the same new batch (interleaved, so that a change of the machine's load touches
    all alike). Per variant the median update and training times, the map's accuracy, the
    one-off cost of compilation (seconds and graphs, this process's first updates included)
    or capture (count), and the update median over the eager one's."""
    models = {name: make_model(config.replace(**VARIANTS[name])) for name in names}
    rng = np.random.default_rng(seed)
    filled = 0
    while filled < size:  # untimed, the same samples for every variant
        chunk = noisy_samples(rng, min(fill_chunk, size - filled))
        filled += len(chunk[1])
        for model in models.values():
            model.add_data(*chunk)
            model.update()
    times = {name: [] for name in names}
    for _ in range(repeats):
        chunk = noisy_samples(rng, batch)
        for name, model in models.items():
            model.add_data(*chunk)
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            report = model.update()
            times[name].append((report.total_time, report.training_time))
    scoring = rng.bit_generator.state
    rows = {}
    for name, model in models.items():
        rng.bit_generator.state = scoring  # every variant scored on the same points
        rows[name] = {"update": _median([t[0] for t in times[name]]),
                      "training": _median([t[1] for t in times[name]]),
                      "num_inducing": model.inducing.shape[0], **accuracy(model, rng)}
        if name == "captured":
            rows[name]["captures"] = sum(model.trainer.graphs.captures.values())
    if "compiled" in rows:
        step = compiled_step(fixed_posterior_blocks)
        rows["compiled"].update(compile_time=step.compile_time, graphs=step.graphs,
                                compile_failure=str(step.failure or ""))
    base = rows.get("eager", {}).get("update")
    for name, row in rows.items():
        row["over_eager"] = row["update"] / base if base else math.nan
        log(f"{name:>9}  update {row['update']:.3f} s  training {row['training']:.3f} s  "
            f"({row['over_eager']:.2f}x eager)  RMSE {row['rmse']:.3f}  NLL {row['nll']:.3f}")
    return {"num_samples": size, "batch": batch, "repeats": repeats, "rows": rows}


def noisy_samples(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n samples of :func:`synthetic_field` at uniform positions, with noise ``NOISE``."""
    x = rng.uniform(-30, 30, (n, 2))
    return x, synthetic_field(x) + rng.normal(0, NOISE, n)


def accuracy(model, rng: np.random.Generator, count: int = 2_000) -> dict:
    """RMSE of the mean against the true field and the mean negative log-likelihood of a new
    measurement (noise included), at ``count`` uniform points."""
    x = rng.uniform(-30, 30, (count, 2))
    truth = synthetic_field(x)
    mean, std = model.predict(x, include_noise=True)
    y = truth + rng.normal(0, NOISE, count)
    nll = 0.5 * np.log(2 * np.pi * std ** 2) + 0.5 * ((y - mean) / std) ** 2
    return {"rmse": float(np.sqrt(np.mean((mean - truth) ** 2))), "nll": float(nll.mean())}


def first_update(config: MappingConfig, size: int, threads: int, seed: int = 0) -> dict:
    """One first update of ``size`` samples, in the calling process (run it in a fresh one):
    its report's times, the map's accuracy, and the growth of the peak resident memory over
    the built model with its data added."""
    if threads:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    model = make_model(config)
    on_gpu = model.device.type == "cuda"
    if on_gpu:
        _warm_up(config)
    model.add_data(*noisy_samples(rng, size))
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(model.device)
        device_before = torch.cuda.memory_allocated(model.device)
    before = _reset_peak_rss()
    row = {"batch": size}
    try:
        report = model.update()
    except NumericalError as error:  # e.g. a batch the method refuses
        return {**row, "failure": str(error)}
    if on_gpu:
        row["peak_device_growth_bytes"] = (torch.cuda.max_memory_allocated(model.device)
                                           - device_before)
    return {**row, "update": report.total_time, "inducing": report.inducing_time,
            "variational": report.variational_time, "training": report.training_time,
            "num_inducing": report.num_inducing, "peak_growth_bytes": peak_rss() - before,
            **accuracy(model, rng)}


def _warm_up(config: MappingConfig) -> None:
    """One small update on a throw-away model: a fresh process's first use of a GPU loads its
    kernels and creates the BLAS and solver handles, a one-off cost that is not the batch's."""
    model = make_model(config)
    model.add_data(*noisy_samples(np.random.default_rng(), 200))
    model.update()


def _reset_peak_rss() -> int:
    """Reset the process's peak resident memory to its current one (Linux: ``clear_refs``
    5; ``ru_maxrss`` would carry the parent's peak into a spawned child) and return it [B]."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:  # not Linux: the peak since the start
        pass
    return peak_rss()


def peak_rss() -> int:
    """Peak resident memory of this process [B] (``VmHWM``, else ``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_batches(config: MappingConfig, sizes=BATCH_SIZES, threads: int = 0,
                    log=print) -> list[dict]:
    """:func:`first_update` for each batch size, each in a fresh process."""
    rows = []
    for size in sizes:
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            row = pool.submit(first_update, config, size, threads).result()
        rows.append(row)
        if "failure" in row:
            log(f"batch {size:>7}  failed: {row['failure']}")
        else:
            log(f"batch {size:>7}  update {row['update']:.2f} s  (PCD {row['inducing']:.2f}, "
                f"variational {row['variational']:.2f}, training {row['training']:.2f})  "
                f"peak +{row['peak_growth_bytes'] / 1e9:.2f} GB  RMSE {row['rmse']:.2f}")
    return rows


def _median(times: list[float]) -> float:
    """Median of the successful updates' times; NaN when every one failed."""
    return float(np.median(times)) if times else math.nan


def markdown_table(result: dict) -> str:
    lines = ["| samples N | M | update (s) | PCD (s) | variational (s) | training (s) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in result["updates"]:
        lines.append(f"| {r['num_samples']:,} | {r['num_inducing']} | {r['update']:.3f} | "
                     f"{r['inducing']:.3f} | {r['variational']:.3f} | {r['training']:.3f} |")
    lines.append("")
    accuracy = result["accuracy"]
    lines.append(f"Largest N over smallest N: {result['largest_over_smallest']:.2f}×. Predict "
                 f"2,000 points: {result['predict']['2000'] * 1e3:.1f} ms; 10,000 points: "
                 f"{result['predict']['10000'] * 1e3:.1f} ms ({result['device']}, "
                 f"{result['threads']} threads). Map at the largest N: RMSE "
                 f"{accuracy['rmse']:.3f}, NLL {accuracy['nll']:.3f}. Failed updates "
                 f"(NumericalError): {result.get('failed_updates', 0)}.")
    if result.get("dispatch"):
        count = result["dispatch"]
        lines.append(f"Launch budget of one update at N = 5,000 on the GPU code path, counted on "
                     f"CPU tensors: {count['ops']:,} kernel-launching ops, {count['syncs']} host "
                     f"synchronisations, {count['uploads']} uploads.")
    for key, what in (("cuda_profile", "One update"),
                      ("cuda_profile_captured", "One captured update")):
        if result.get(key):
            cuda = result[key]
            lines.append(f"{what} at N = 5,000 profiled on the device: "
                         f"{cuda['launches']:,.0f} kernel launches, {cuda['waits']:.0f} host "
                         f"waits, {cuda['copies']:.0f} copies; the device busy "
                         f"{cuda['gpu_busy'] * 1e3:.1f} ms of {cuda['update'] * 1e3:.1f} ms.")
    if result.get("variants"):
        lines += _variant_lines(result["variants"])
    if result.get("batches"):
        lines += ["", "| first batch B | update (s) | PCD (s) | variational (s) | training (s) "
                      "| peak memory added, host (GPU) (GB) | RMSE | NLL |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in result["batches"]:
            if "failure" in r:
                lines.append(f"| {r['batch']:,} | failed: {r['failure']} |||||||")
                continue
            memory = f"{r['peak_growth_bytes'] / 1e9:.2f}"
            if "peak_device_growth_bytes" in r:
                memory += f" (GPU {r['peak_device_growth_bytes'] / 1e9:.2f})"
            lines.append(f"| {r['batch']:,} | {r['update']:.2f} | {r['inducing']:.2f} | "
                         f"{r['variational']:.2f} | {r['training']:.2f} | {memory} | "
                         f"{r['rmse']:.3f} | {r['nll']:.3f} |")
    return "\n".join(lines)


def _variant_lines(variants: dict) -> list[str]:
    """The markdown table of :func:`measure_variants`'s result."""
    lines = ["", f"Variants side by side at N = {variants['num_samples']:,} (interleaved, "
                 f"{variants['repeats']} updates each):", "",
             "| variant | M | update (s) | training (s) | over eager | RMSE | NLL | one-off |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in variants["rows"].items():
        once = ""
        if "compile_time" in r:
            once = (f"compiled {r['graphs']} graphs in {r['compile_time']:.1f} s"
                    + (f" (failed: {r['compile_failure']})" if r["compile_failure"] else ""))
        if "captures" in r:
            once = f"{r['captures']} captures"
        lines.append(f"| {name} | {r['num_inducing']} | {r['update']:.3f} | "
                     f"{r['training']:.3f} | {r['over_eager']:.2f} | {r['rmse']:.3f} | "
                     f"{r['nll']:.3f} | {once} |")
    return lines


def _sizes(text: str) -> tuple[int, ...]:
    """``--sizes``: positive integers, comma-separated."""
    try:
        sizes = tuple(int(size) for size in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers such as 1000,5000")
    if min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench core", description=__doc__)
    parser.add_argument("--out", default="results/core_speed", help="output folder")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--method", default="poam", choices=sorted(METHODS),
                        help="the mapping method to time (default: %(default)s)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), type=_sizes,
                        help="comma-separated data sizes (default: %(default)s)")
    parser.add_argument("--batch-sizes", default=",".join(map(str, BATCH_SIZES)), type=_sizes,
                        help="comma-separated sizes of a first batch, each updated in a fresh "
                             "process (default: %(default)s)")
    parser.add_argument("--no-batches", action="store_true",
                        help="skip the batch-size measurement")
    parser.add_argument("--variants", default="",
                        help="comma-separated update variants to time side by side at "
                             "--variants-size samples, each against eager: "
                             f"{', '.join(VARIANTS)} (default: none)")
    parser.add_argument("--variants-size", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--num-inducing", type=int, default=500)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch intra-op threads (0: torch's default); one thread is "
                             "faster than two when other processes share the cores")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    config = MappingConfig(method=args.method, device=args.device, dtype=args.dtype,
                           num_inducing=args.num_inducing)
    variants = [name for name in args.variants.split(",") if name]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: unknown {unknown}, choose from {list(VARIANTS)}")
    result = measure(config, tuple(args.sizes), repeats=args.repeats)
    if variants:
        names = ["eager", *(name for name in variants if name != "eager")]
        result["variants"] = measure_variants(config, names, args.variants_size,
                                              repeats=args.repeats)
    result["dispatch"] = count_update(config)
    if result["device"].startswith("cuda"):
        result["cuda_profile"] = profile_device_update(config)
        if "captured" in variants:
            result["cuda_profile_captured"] = profile_device_update(
                config.replace(**VARIANTS["captured"]))
    if not args.no_batches:
        result["batches"] = measure_batches(config, tuple(args.batch_sizes), args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "core_speed.json").write_text(json.dumps(result, indent=2))
    (out / "core_speed.md").write_text(markdown_table(result) + "\n")
    from poam_ros.figures import plot_speed
    plot_speed(result["updates"], out / "core_speed.png")
    print(markdown_table(result))
    print(f"written to {out}/core_speed.{{json,md,png}}")
    return 0
