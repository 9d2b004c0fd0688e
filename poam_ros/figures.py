"""Figures of missions and benchmark sweeps (matplotlib, written to files, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (folders created) and release it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_mission(result, path: str | Path, title: str = "") -> Path:
    """:func:`plot_map` of a finished mission (a :class:`~poam_ros.mission.MissionResult`),
    on its evaluation grid."""
    model, points = result.model, result.eval_points
    mean, std = model.predict(points)
    return plot_map(path, points, result.truth, mean, std, model.lengthscale_map(points),
                    track=result.path[:, :2], samples=result.samples_x,
                    inducing=model.inducing_inputs, title=title)


def plot_map(path: str | Path, points: np.ndarray, truth: np.ndarray, mean: np.ndarray,
             std: np.ndarray, lengthscale: np.ndarray | None, *, track: np.ndarray,
             samples: np.ndarray, inducing: np.ndarray, title: str = "") -> Path:
    """Ground truth, predicted mean, standard deviation and learned lengthscale (when not
    None) at the grid ``points`` (N, 2) [m], each (N,) with NaN where there is nothing to
    show, with the vehicle's ``track`` (P, 2), the ``samples`` (S, 2) and the ``inducing``
    inputs (M, 2) [m]."""
    xs, ys = np.unique(points[:, 0]), np.unique(points[:, 1])
    half_x = (xs[-1] - xs[0]) / max(len(xs) - 1, 1) / 2  # pixels centred on their points
    half_y = (ys[-1] - ys[0]) / max(len(ys) - 1, 1) / 2
    extent = (xs[0] - half_x, xs[-1] + half_x, ys[0] - half_y, ys[-1] + half_y)

    def image(values):
        grid = np.full((len(ys), len(xs)), np.nan)
        grid[np.searchsorted(ys, points[:, 1]), np.searchsorted(xs, points[:, 0])] = values
        return grid

    vmin, vmax = np.nanmin(truth), np.nanmax(truth)
    panels = [("ground truth", truth, "terrain", (vmin, vmax)),
              ("predicted mean", mean, "terrain", (vmin, vmax)),
              ("standard deviation", std, "viridis", (None, None))]
    if lengthscale is not None:
        panels.append(("lengthscale [m]", lengthscale, "plasma", (None, None)))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.75 * len(panels), 4.6),
                             constrained_layout=True)
    for ax, (name, values, cmap, (lo, hi)) in zip(axes, panels):
        shown = ax.imshow(image(values), origin="lower", extent=extent, cmap=cmap, vmin=lo, vmax=hi)
        fig.colorbar(shown, ax=ax, shrink=0.85)
        ax.set_title(name)
        ax.set_xlabel("x [m]")
    axes[0].set_ylabel("y [m]")
    axes[0].plot(track[:, 0], track[:, 1], color="white", lw=0.6, alpha=0.8)
    axes[1].plot(samples[:, 0], samples[:, 1], ".", color="k", ms=0.6)
    axes[2].plot(*inducing.T, "+", color="r", ms=3, label="inducing inputs")
    axes[2].legend(loc="upper right", fontsize=7)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def plot_curves(curves: Mapping[str, Sequence[dict]], path: str | Path,
                keys: Sequence[str] = ("smse", "msll", "update_time")) -> Path:
    """Metric against the number of samples, one line per label (mean over seeds, shaded ±1 std).

    ``curves`` maps a label to its runs, each run a list of epoch records (dicts).
    """
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 3.8), constrained_layout=True)
    for label, runs in curves.items():
        grid = np.linspace(max(r[0]["num_samples"] for r in runs),
                           min(r[-1]["num_samples"] for r in runs), 60)
        for ax, key in zip(np.atleast_1d(axes), keys):
            values = np.array([np.interp(grid, [e["num_samples"] for e in r], [e[key] for e in r])
                               for r in runs])
            mean, spread = values.mean(0), values.std(0)
            ax.plot(grid, mean, label=label)
            ax.fill_between(grid, mean - spread, mean + spread, alpha=0.2)
    for ax, key in zip(np.atleast_1d(axes), keys):
        ax.set_xlabel("number of samples")
        ax.set_title(key)
        if key.endswith("time"):
            ax.set_ylabel("seconds")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    return save_figure(fig, path)


def plot_speed(rows: Sequence[dict], path: str | Path) -> Path:
    """Median update time (and its parts) against the number of samples."""
    n = [r["num_samples"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for key, label in (("update", "update (total)"), ("inducing", "PCD"),
                       ("variational", "variational"), ("training", "training steps")):
        ax.plot(n, [r[key] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("samples in the model")
    ax.set_ylabel("median seconds per update")
    ax.legend()
    return save_figure(fig, path)
