"""Map-quality metrics on an evaluation grid (POAM paper: SMSE, MSLL, NLPD, RMSE, MAE).

All values are in the units of the mapped quantity (metres of elevation for the AUV), and
per-point arrays have shape (N,).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class MapMetrics:
    """Errors of a predictive map against the ground truth; lower is better for all five."""

    smse: float  # mean squared error / variance of the ground truth on the grid
    msll: float  # NLPD minus the NLPD of a Gaussian fitted to the training targets
    nlpd: float  # mean negative log predictive density
    rmse: float
    mae: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class TargetBaseline:
    """The MSLL baseline: mean and population standard deviation of the training targets
    (Rasmussen & Williams, GPML Sec. 2.5), in target units."""

    mean: float
    std: float

    @classmethod
    def of(cls, train_targets: np.ndarray) -> TargetBaseline:
        """The baseline of the targets (M,), which must be finite and not empty."""
        train_targets = _finite_vector("train_targets", train_targets)
        return cls(float(train_targets.mean()), float(train_targets.std()))


def evaluate_map(truth: np.ndarray, mean: np.ndarray, std: np.ndarray,
                 train_targets: np.ndarray | TargetBaseline) -> MapMetrics:
    """Compare a Gaussian predictive map with the ground truth on an evaluation grid.

    ``truth``, ``mean`` and ``std`` (N,) are the true value and the predictive mean and
    standard deviation at each grid point; ``train_targets`` are the measurements gathered
    so far (M,), or their :class:`TargetBaseline` (what a mapper reports of the samples it
    holds). Raises ``ValueError`` on shape mismatch, non-finite values, std <= 0, a constant
    ground truth (SMSE undefined) or constant training targets (MSLL undefined).
    """
    truth, mean, std = (_finite_vector(name, values) for name, values in
                        (("truth", truth), ("mean", mean), ("std", std)))
    baseline = (train_targets if isinstance(train_targets, TargetBaseline)
                else TargetBaseline.of(train_targets))
    if not truth.shape == mean.shape == std.shape:
        raise ValueError(f"truth, mean and std must have one shape, got {truth.shape}, "
                         f"{mean.shape}, {std.shape}")
    if (std <= 0.0).any():
        raise ValueError(f"std must be positive, got min {std.min()!r}")
    truth_variance = truth.var()
    if truth_variance == 0.0:
        raise ValueError("the ground truth is constant on the grid, so SMSE is undefined")
    if baseline.std == 0.0:
        raise ValueError("the training targets are all equal, so the MSLL baseline is "
                         "undefined")
    error = truth - mean
    nlpd = _gaussian_nll(error, std)
    baseline_nlpd = _gaussian_nll(truth - baseline.mean, baseline.std)
    return MapMetrics(
        smse=float(np.mean(error ** 2) / truth_variance),
        msll=float(np.mean(nlpd - baseline_nlpd)),
        nlpd=float(np.mean(nlpd)),
        rmse=float(np.sqrt(np.mean(error ** 2))),
        mae=float(np.mean(np.abs(error))),
    )


def evaluation_grid(extent: Sequence[float], nx: int = 50, ny: int = 50) -> np.ndarray:
    """Grid points (nx * ny, 2) over an extent (xmin, xmax, ymin, ymax), edges included.

    x varies fastest: point ``j * nx + i`` is (x_i, y_j), so ``values.reshape(ny, nx)``
    is an image with rows of constant y, from ymin up.
    """
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    if not (xmin < xmax and ymin < ymax):
        raise ValueError(f"extent needs xmin < xmax and ymin < ymax, got "
                         f"[{xmin}, {xmax}, {ymin}, {ymax}]")
    if nx < 2 or ny < 2:
        raise ValueError(f"the grid needs at least 2 points per axis, got nx={nx}, ny={ny}")
    x, y = np.meshgrid(np.linspace(xmin, xmax, nx), np.linspace(ymin, ymax, ny))
    return np.column_stack([x.ravel(), y.ravel()])


def evaluation_points(workspace, per_axis: int) -> np.ndarray:
    """The points a map is scored on: a ``per_axis`` × ``per_axis`` :func:`evaluation_grid`
    over the workspace's bounds, less the points outside its free area (M, 2).

    ``workspace`` is a :class:`~poam_ros.workspace.Workspace`. The mission, the offline
    remap and the mapper's ``map/evaluation`` all score on these, so their metrics compare.
    """
    grid = evaluation_grid(workspace.bounds, per_axis, per_axis)
    return grid[workspace.contains(grid)]


def _gaussian_nll(error: np.ndarray, std: np.ndarray | float) -> np.ndarray:
    """-log N(error | 0, std^2) per point."""
    return _HALF_LOG_2PI + np.log(std) + 0.5 * (error / std) ** 2


def _finite_vector(name: str, values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} has {np.count_nonzero(~np.isfinite(values))} non-finite "
                         "values")
    return values
