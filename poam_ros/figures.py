"""Figures of missions, remaps and benchmarks (matplotlib, written to files, no display).

Every colour bar and axis carries its unit, and a map's title names the map, the method, the
sample count and, where ground truth scored it, the final SMSE and MSLL, so that a figure
read on its own says what it shows. A map whose frame has a geodetic anchor (``geo.*``) is
drawn in eastings and northings of the anchor's CRS, with a caption naming the CRS, the map
origin's latitude and longitude and the vertical reference; else in map metres."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import patheffects  # noqa: E402

from poam_ros.sim.water_temperature import CHANNEL as TEMPERATURE  # noqa: E402

#: axis labels of the metrics the curves plot
METRIC_LABELS = {"smse": "SMSE", "msll": "MSLL [nats]", "nlpd": "NLPD [nats]",
                 "rmse": "RMSE [m]", "mae": "MAE [m]", "update_time": "update time [s]",
                 "predict_time": "prediction time [s]", "num_inducing": "inducing inputs M"}


def save_figure(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (folders created) and release it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def map_title(map_name: str, method: str, samples: int, smse: float | None = None,
              msll: float | None = None, note: str = "") -> str:
    """``<map> · <method> · N samples[ · SMSE s, MSLL m][ · note]``; the scores are left out
    where unknown (None or NaN: no ground truth)."""
    parts = [map_name, method, f"{samples:,} samples"]
    if smse is not None and msll is not None and not (math.isnan(smse) or math.isnan(msll)):
        parts.append(f"final SMSE {smse:.4f}, MSLL {msll:.3f}")
    return " · ".join(parts + ([note] if note else []))


#: what a survey channel's panels show: quantity, unit, colour map (depth: the elevation)
CHANNEL_QUANTITIES = {"depth": ("elevation", "m", "terrain"),
                      TEMPERATURE: ("temperature", "°C", "inferno")}


def scored_channels(extra: dict) -> list[str]:
    """The channels an epoch record scores one by one, in the model's order, from its
    ``extra`` (``smse_<channel>`` entries); empty for a single-channel map."""
    return [key[len("smse_"):] for key in extra if key.startswith("smse_")]


def channel_figure(path: str | Path, channel: str) -> Path:
    """Where :func:`plot_mission` writes a further channel's figure: ``<stem>_<channel>``."""
    path = Path(path)
    return path.with_name(f"{path.stem}_{channel}{path.suffix}")


def plot_mission(result, path: str | Path, map_name: str, note: str = "",
                 georeference=None) -> Path:
    """:func:`plot_map` of a finished mission (a :class:`~poam_ros.mission.MissionResult`) on
    its evaluation grid, titled by :func:`map_title` with the final epoch's scores; returns
    ``path``. With several channels ``path`` shows the first (depth), its scores and the
    samples that measured it, and each further channel gets a figure of its own at
    :func:`channel_figure` (truth, mean and std in its unit, its own scores and samples)."""
    model, points, final = result.model, result.eval_points, result.final
    mean, std = model.predict(points)
    truth, track = result.truth, result.path[:, :2]
    common = dict(track=track, inducing=model.inducing_inputs, georeference=georeference)
    if truth.ndim == 1:
        title = map_title(map_name, model.method, final.num_samples, final.smse, final.msll,
                          note)
        return plot_map(path, points, mean, std, model.lengthscale_map(points), truth=truth,
                        samples=result.samples_x, title=title, **common)
    for d, channel in enumerate(scored_channels(final.extra)):
        measured = np.isfinite(result.samples_y[:, d])
        title = map_title(f"{map_name}, {channel}", model.method, int(measured.sum()),
                          final.extra[f"smse_{channel}"], final.extra[f"msll_{channel}"], note)
        plot_map(path if d == 0 else channel_figure(path, channel), points, mean[:, d],
                 std[:, d], model.lengthscale_map(points) if d == 0 else None,
                 truth=truth[:, d], samples=result.samples_x[measured], title=title,
                 quantity=CHANNEL_QUANTITIES.get(channel, (channel, "", "viridis")), **common)
    return Path(path)


def plot_remap(grid, layers, track: np.ndarray, path: str | Path, title: str,
               georeference=None) -> Path:
    """:func:`plot_map` of a map without ground truth: the ``layers``
    (:class:`~poam_ros.mapping.map_grid.MapLayers`) on their ``grid`` (a
    :class:`~poam_ros.mapping.map_grid.MapGrid`), with the vehicle's ``track`` (P, 2) [m]."""
    lengthscale = None if layers.lengthscale is None else layers.lengthscale.ravel()
    return plot_map(path, grid.points, layers.mean.ravel(), layers.std.ravel(), lengthscale,
                    track=track, inducing=layers.inducing, title=title,
                    georeference=georeference)


def plot_map(path: str | Path, points: np.ndarray, mean: np.ndarray, std: np.ndarray,
             lengthscale: np.ndarray | None = None, *, truth: np.ndarray | None = None,
             track: np.ndarray | None = None, samples: np.ndarray | None = None,
             inducing: np.ndarray | None = None, title: str = "", georeference=None,
             quantity: tuple[str, str, str] = CHANNEL_QUANTITIES["depth"]) -> Path:
    """Ground truth (when not None), predicted mean, standard deviation and learned
    lengthscale (when not None) at the grid ``points`` (N, 2) [m], each (N,) with NaN where
    there is nothing to show, in the unit of ``quantity`` (name, unit, colour map: the
    elevation in m by default; the lengthscale in m); the vehicle's ``track`` (P, 2) on the
    first panel, the ``samples`` (S, 2) on the mean and the ``inducing`` inputs (M, 2) on the
    std [m], all in map metres. With a ``georeference``
    (:class:`~poam_ros.geo.GeoReference`) the axes are its CRS's eastings and northings (map
    metres plus its origin)."""
    if georeference is not None:
        points, track, samples, inducing = (
            None if xy is None else np.asarray(xy)[:, :2] + georeference.origin
            for xy in (points, track, samples, inducing))
    xs, ys = np.unique(points[:, 0]), np.unique(points[:, 1])
    half_x = (xs[-1] - xs[0]) / max(len(xs) - 1, 1) / 2  # pixels centred on their points
    half_y = (ys[-1] - ys[0]) / max(len(ys) - 1, 1) / 2
    extent = (xs[0] - half_x, xs[-1] + half_x, ys[0] - half_y, ys[-1] + half_y)

    def image(values):
        grid = np.full((len(ys), len(xs)), np.nan)
        grid[np.searchsorted(ys, points[:, 1]), np.searchsorted(xs, points[:, 0])] = values
        return grid

    elevation = truth if truth is not None else mean
    limits = (np.nanmin(elevation), np.nanmax(elevation))
    name, unit, cmap = quantity
    panels = [("ground truth", truth, cmap, limits, f"{name} [{unit}]"),
              ("predicted mean", mean, cmap, limits, f"{name} [{unit}]"),
              ("standard deviation", std, "viridis", (None, None), f"std [{unit}]"),
              ("learned lengthscale", lengthscale, "plasma", _spread_limits(lengthscale),
               "lengthscale [m]")]
    panels = [panel for panel in panels if panel[1] is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.75 * len(panels), 4.6),
                             constrained_layout=True)
    named = {}
    for ax, (name, values, cmap, (lo, hi), unit) in zip(axes, panels):
        shown = ax.imshow(image(values), origin="lower", extent=extent, cmap=cmap, vmin=lo, vmax=hi)
        fig.colorbar(shown, ax=ax, shrink=0.85, label=unit)
        if georeference is None:
            ax.set(title=name, xlabel="x [m]", ylabel="y [m]")
        else:
            ax.set(title=name, xlabel="easting [m]", ylabel="northing [m]")
            ax.ticklabel_format(useOffset=False, style="plain")
            ax.tick_params(axis="x", labelrotation=30)
        named[name] = ax
    if samples is not None:
        named["predicted mean"].plot(samples[:, 0], samples[:, 1], ".", color="k", ms=0.6)
    if inducing is not None:  # hollow and beneath the track, so that neither hides the other
        named["standard deviation"].plot(*inducing.T, "o", mfc="none", mec="red", mew=0.6,
                                         ms=2.5, zorder=2, label="inducing inputs")
    if track is not None and len(track):
        for ax in (axes[0], named.get("standard deviation", axes[0])):
            # white on a black outline: visible over every colour map
            ax.plot(track[:, 0], track[:, 1], color="white", lw=0.7, zorder=3,
                    path_effects=[patheffects.withStroke(linewidth=1.9, foreground="black")],
                    label="track")
    if inducing is not None or track is not None:
        named.get("standard deviation", axes[0]).legend(loc="upper right", fontsize=7)
    if title:
        fig.suptitle(title)
    if georeference is not None:
        fig.supxlabel(georeference_caption(georeference), fontsize=8)
    return save_figure(fig, path)


def _spread_limits(values: np.ndarray | None, tail: float = 2.0) -> tuple[float | None, ...]:
    """Colour limits at the ``tail``-th and (100 − ``tail``)-th percentiles of the finite
    ``values``: a few extreme cells (a lengthscale at its bound) then do not flatten the rest
    of the panel into one colour."""
    finite = None if values is None else np.asarray(values)[np.isfinite(values)]
    if finite is None or not len(finite):
        return (None, None)
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return (None, None) if not high > low else (float(low), float(high))


def georeference_caption(georeference) -> str:
    """``<CRS> · map origin <lat>°, <lon>° (WGS 84) · elevations relative to <reference>``."""
    lon, lat = (float(v) for v in georeference.to_lonlat(0.0, 0.0))
    return (f"{georeference.crs.name} · map origin {lat:.6f}°, {lon:.6f}° (WGS 84) · "
            f"elevations relative to {georeference.vertical_reference}")


def plot_curves(curves: Mapping[str, Sequence[dict]], path: str | Path,
                keys: Sequence[str] = ("smse", "msll", "update_time"), title: str = "") -> Path:
    """Metric against the number of samples, one line per label (mean over seeds, shaded ±1 std).

    ``curves`` maps a label to its runs, each run a list of epoch records (dicts).
    """
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 3.8), constrained_layout=True)
    axes = np.atleast_1d(axes)
    for label, runs in curves.items():
        for ax, key in zip(axes, keys):
            _draw_band(ax, runs, key, label)
    for ax, key in zip(axes, keys):
        ax.set(xlabel="number of samples", ylabel=METRIC_LABELS.get(key, key))
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


#: The panels of :func:`plot_sizing`: y label and the per-update figures (``extra`` keys) drawn
#: on it, the first solid, the second dashed in the same colour.
SIZING_PANELS = (
    ("inducing inputs added per update", ("inducing_added",)),
    ("VIPS bound gap L* − L̂ (—), threshold (--) [nats]",
     ("bound_gap", "bound_threshold")),
    ("OIPS: threshold ρ̄ [standardised variance]", ("rho_bar",)),
    ("updates the cap stopped (cumulative)", ("cap_bound_total",)),
)


def plot_sizing(curves: Mapping[str, Sequence[dict]], path: str | Path,
                title: str = "") -> Path | None:
    """How the methods that size themselves (VIPS, OIPS, CV) grew, against the number of
    samples: one panel of :data:`SIZING_PANELS` per figure some label reports, each label drawn
    on the panels whose figures every one of its runs reports (mean over seeds, shaded ±1 std).

    ``curves`` maps a label to its runs, each a list of records with ``num_samples`` and the
    update's figures; a record without them (an epoch without an update) is passed over. The
    cap's panel counts the updates it stopped so far (from ``cap_bound``). Returns None,
    writing nothing, when no label reports any of them."""
    def updates(run, keys):
        return [record for record in run if all(key in record for key in keys)]

    def reports(runs, keys):
        return all(updates(run, keys) for run in runs)

    curves = {label: [_with_cap_total(run) for run in runs]
              for label, runs in curves.items()}
    panels = [(ylabel, keys) for ylabel, keys in SIZING_PANELS
              if any(reports(runs, keys) for runs in curves.values())]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8),
                             constrained_layout=True)
    axes = np.atleast_1d(axes)
    for ax, (ylabel, keys) in zip(axes, panels):
        for index, (label, runs) in enumerate(curves.items()):
            if reports(runs, keys):
                drawn = [updates(run, keys) for run in runs]
                for key, style in zip(keys, ("-", "--")):
                    _draw_band(ax, drawn, key, label if style == "-" else None, f"C{index}",
                               style)
        if keys[0] == "bound_gap":
            ax.set_yscale("symlog", linthresh=1e-2)
        elif keys[0] == "cap_bound_total":  # a count: from 0, whole numbers
            ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1]))
            ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set(xlabel="number of samples", ylabel=ylabel)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def _with_cap_total(run: Sequence[dict]) -> list[dict]:
    """The records, those that report ``cap_bound`` with ``cap_bound_total``: the updates the
    cap stopped up to and including theirs."""
    total, out = 0, []
    for record in run:
        if "cap_bound" in record:
            total += record["cap_bound"]
            record = {**record, "cap_bound_total": total}
        out.append(record)
    return out


def _draw_band(ax, runs: Sequence[Sequence[dict]], key: str, label: str | None,
               color: str | None = None, style: str = "-") -> None:
    """The mean over ``runs`` of ``key`` against the number of samples, shaded ±1 std, on the
    sample counts all runs span."""
    grid = np.linspace(max(r[0]["num_samples"] for r in runs),
                       min(r[-1]["num_samples"] for r in runs), 60)
    values = np.array([np.interp(grid, [e["num_samples"] for e in r], [e[key] for e in r])
                       for r in runs])
    mean, spread = values.mean(0), values.std(0)
    [line] = ax.plot(grid, mean, style, label=label, color=color)
    ax.fill_between(grid, mean - spread, mean + spread, alpha=0.2, color=line.get_color())


def plot_speed(rows: Sequence[dict], path: str | Path) -> Path:
    """Median update time (and its parts) against the number of samples."""
    n = [r["num_samples"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for key, label in (("update", "update (total)"), ("inducing", "PCD"),
                       ("variational", "variational"), ("training", "training steps")):
        ax.plot(n, [r[key] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set(xlabel="samples in the model", ylabel="median time per update [s]",
           title="update time of the mapping core")
    ax.legend()
    return save_figure(fig, path)
