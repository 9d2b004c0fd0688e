"""The sweep's summary (:mod:`poam_ros.benchmark.sweep` runs the sweep): Table I per map,
method and kernel from the runs' status files and epoch records (``runs/<run>.jsonl``).

``summary.md`` and ``summary.csv``: each run's metrics averaged over its decision epochs, then
mean ± sample std over seeds; with a window of sample counts, the same for the averages over
that window, as the POAM authors' released scripts compute the paper's figures. Methods that
size themselves add their model size (final M, inducing inputs added per update, updates the
cap stopped); runs that score several channels one by one (``extra``: ``smse_<channel>``,
``msll_<channel>``) add each channel's SMSE and MSLL, averaged over the epochs where the
channel was scored. Figures: ``curves_<map>.png``, ``curves_<map>_<channel>.png`` and
``sizing_<map>.png``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from poam_ros.figures import scored_channels
from poam_ros.mapping.epochs import AVERAGED_METRICS, EpochRecord, sample_averages

if TYPE_CHECKING:
    from poam_ros.benchmark.sweep import RunSpec

#: the per-channel metrics tabulated and plotted
CHANNEL_METRICS = ("smse", "msll")


def summarise(specs: list[RunSpec], statuses: list[dict], out: Path,
              window: tuple[int, int] | None = None) -> None:
    """Table I per map, method and kernel: each run's metrics averaged over its decision
    epochs, then mean ± sample std over seeds; with a ``window`` of sample counts, the same
    for the averages over that window (:func:`~poam_ros.mapping.epochs.sample_averages`)."""
    runs = {spec: _records(out, spec) for spec, status in zip(specs, statuses)
            if status["status"] == "done"}  # each run's epoch records, read once
    channels = list(dict.fromkeys(c for records in runs.values()
                                  for c in scored_channels(records[0]["extra"])))
    groups: dict[tuple, list[tuple[RunSpec, dict]]] = {}
    for spec, status in zip(specs, statuses):
        groups.setdefault((spec.map, spec.method, spec.kernel), []).append((spec, status))
    rows = []
    for (map_name, method, kernel), group in groups.items():
        done = [(spec, s) for spec, s in group if s["status"] == "done"]
        row = {"map": map_name, "method": method, "kernel": kernel, "seeds": len(done),
               "failed": len(group) - len(done)}
        row.update(_mean_std([s["averages"] for _, s in done]))
        # the model's size at the end (methods that size themselves: vips, oips, cv, ...)
        row["final_inducing"] = (float(np.mean([runs[spec][-1]["num_inducing"]
                                                for spec, _ in done])) if done else math.nan)
        row.update(_sizing_figures([runs[spec] for spec, _ in done]))
        row.update(_mean_std([_channel_averages(runs[spec]) for spec, _ in done],
                             keys=[f"{m}_{c}" for c in channels for m in CHANNEL_METRICS]))
        if window:
            spanned = [a for a in (sample_averages([EpochRecord(**r) for r in runs[spec]],
                                                   *window) for spec, _ in done)
                       if a is not None]
            row["window_seeds"] = len(spanned)
            row.update(_mean_std(spanned, prefix="window_"))
        rows.append(row)
    with open(out / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["Averaged over decision epochs; mean ± sample std over seeds.", "",
             "| map | method | kernel | seeds | SMSE | MSLL | NLPD | RMSE | MAE | "
             "update (s/epoch) | final M | failed |",
             "|---|---|---|---:|---|---|---|---|---|---|---:|---:|"]
    for r in rows:
        cells = [_cell(r, key) for key in AVERAGED_METRICS[:5]]
        lines.append(f"| {r['map']} | {r['method']} | {r['kernel']} | {r['seeds']} | "
                     f"{' | '.join(cells)} | {r['update_time']:.3f} | "
                     f"{r['final_inducing']:.0f} | {r['failed']} |")
    if channels:
        lines += ["", "Per channel, averaged over the epochs where the channel was scored; mean "
                  "± sample std over seeds.", "",
                  "| map | method | kernel | seeds | channel | SMSE | MSLL |",
                  "|---|---|---|---:|---|---|---|"]
        lines += [f"| {r['map']} | {r['method']} | {r['kernel']} | {r['seeds']} | {c} | "
                  f"{_cell(r, f'smse_{c}')} | {_cell(r, f'msll_{c}')} |"
                  for r in rows for c in channels]
    sized = [r for r in rows if not math.isnan(r["inducing_added"])]
    if sized:
        lines += ["", "Model size of the methods that size themselves; mean over seeds.", "",
                  "| map | method | kernel | seeds | final M | added per update | "
                  "updates the cap stopped |", "|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r['map']} | {r['method']} | {r['kernel']} | {r['seeds']} | "
                  f"{r['final_inducing']:.0f} | {r['inducing_added']:.1f} | "
                  f"{r['cap_bound_updates']:.1f} |" for r in sized]
    if window:
        lines += ["", f"Averaged over samples {window[0]:,}–{window[1]:,} (interpolated between "
                  "epochs, as the POAM authors' metrics scripts average); runs that do not "
                  "span the window are left out.", "",
                  "| map | method | kernel | seeds | SMSE | MSLL | update (s/epoch) |",
                  "|---|---|---|---:|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['map']} | {r['method']} | {r['kernel']} | {r['window_seeds']} | "
                         f"{_cell(r, 'window_smse')} | {_cell(r, 'window_msll')} | "
                         f"{r['window_update_time']:.3f} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    _plot_curves(runs, out, channels)


def _sizing_figures(runs: list[list[dict]]) -> dict[str, float]:
    """Mean over runs of the inducing inputs added per update and of the updates the cap
    stopped (``extra``: ``inducing_added``, ``cap_bound``, in the records of the epochs that
    updated); NaN where the method reports none (it does not size itself) or no run is done."""
    def per_run(key, reduce):
        reported = [[r["extra"][key] for r in records if key in r["extra"]] for records in runs]
        values = [reduce(figures) for figures in reported if figures]
        return float(np.mean(values)) if values else math.nan

    return {"inducing_added": per_run("inducing_added", np.mean),
            "cap_bound_updates": per_run("cap_bound", np.sum)}


def _channel_averages(records: list[dict]) -> dict[str, float]:
    """A run's per-channel metrics averaged over the epochs where the channel was scored (a
    channel enters the model once it has enough samples); NaN where it never was."""
    averages = {}
    for channel in scored_channels(records[0]["extra"]):
        for metric in CHANNEL_METRICS:
            key = f"{metric}_{channel}"
            values = np.array([r["extra"].get(key, math.nan) for r in records], dtype=float)
            averages[key] = float(np.mean(values[np.isfinite(values)])) \
                if np.isfinite(values).any() else math.nan
    return averages


def _mean_std(averages: list[dict], prefix: str = "",
              keys=AVERAGED_METRICS) -> dict[str, float]:
    """Mean and sample standard deviation (NaN for fewer than two runs) of each metric."""
    row = {}
    for key in keys:
        values = np.array([a.get(key, math.nan) for a in averages])
        row[prefix + key] = float(values.mean()) if values.size else float("nan")
        row[f"{prefix}{key}_std"] = float(values.std(ddof=1)) if values.size > 1 else float("nan")
    return row


def _cell(row: dict, key: str) -> str:
    mean, std = row[key], row[f"{key}_std"]
    if np.isnan(mean):
        return "–"
    return f"{mean:.4g}" + ("" if np.isnan(std) else f" ± {std:.2g}")


def _records(out: Path, spec: RunSpec) -> list[dict]:
    lines = (out / "runs" / f"{spec.name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _plot_curves(runs: dict[RunSpec, list[dict]], out: Path, channels: list[str]) -> None:
    """One figure per map of the done runs' curves, one per map and channel of the
    channel's metrics (``curves_<map>_<channel>.png``) from the runs that score it, and one
    per map of how the methods that size themselves grew (``sizing_<map>.png``), where any
    did."""
    from poam_ros.figures import plot_curves, plot_sizing

    for map_name in sorted({spec.map for spec in runs}):
        curves: dict[str, list] = {}
        for spec, records in runs.items():
            if spec.map == map_name:
                curves.setdefault(f"{spec.method} ({spec.kernel})", []).append(records)
        plot_curves(curves, out / f"curves_{map_name}.png",
                    keys=("smse", "msll", "update_time", "num_inducing"),
                    title=f"{map_name}: mean ± 1 std over seeds")
        plot_sizing({label: [_figures(run) for run in label_runs]
                     for label, label_runs in curves.items()},
                    out / f"sizing_{map_name}.png",
                    title=f"{map_name}, model size: mean ± 1 std over seeds")
        for channel in channels:
            keys = [f"{metric}_{channel}" for metric in CHANNEL_METRICS]
            scored = {label: [points for points in (_scored(run, keys) for run in label_runs)
                              if points] for label, label_runs in curves.items()}
            scored = {label: label_runs for label, label_runs in scored.items() if label_runs}
            if scored:
                plot_curves(scored, out / f"curves_{map_name}_{channel}.png", keys=keys,
                            title=f"{map_name}, {channel}: mean ± 1 std over seeds")


def _scored(records: list[dict], keys: list[str]) -> list[dict]:
    """A run's curve points of per-channel metrics: the epochs where all ``keys`` of
    ``extra`` are finite, each with its sample count."""
    return [point for point in _figures(records)
            if all(math.isfinite(point.get(key, math.nan)) for key in keys)]


def _figures(records: list[dict]) -> list[dict]:
    """A run's epochs as curve points: each one's ``extra`` with its sample count."""
    return [{**r["extra"], "num_samples": r["num_samples"]} for r in records]
