"""The entropy the max-entropy planner scores a candidate by, for one channel or several.

A single-channel map gives the predictive standard deviation σ of a new measurement per
candidate, (N,), and the entropy is H = ½ log(2πe σ²) (the POAM paper). A multi-channel
map (depth first, then the ingest's channels) gives the D × D predictive covariance Σ of a
new measurement of every channel per candidate, (N, D, D), and ``acquisition`` chooses:

* ``depth``: the depth channel's H alone, as with one channel;
* ``weighted``: Σ_d w_d · ½ log(2πe σ_d²), the channels' entropies weighted by
  ``weights`` (one per channel, depth first);
* ``joint``: ½ log det(2πe Σ), the joint predictive entropy of the channels (Moreno-Muñoz et
  al., "Continual Multi-task Gaussian Processes", 2019, the LMC's cross-channel covariance):
  it counts what the channels share once, where ``weighted`` counts it per channel.

A channel not in the model yet (its covariance NaN at every candidate, see
:meth:`~poam_ros.models.multitask.MultiTaskSparseGP.predict`) is left out of both.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

DEPTH, WEIGHTED, JOINT = "depth", "weighted", "joint"
ACQUISITIONS = (DEPTH, WEIGHTED, JOINT)
HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)


def predictive_entropy(spread: np.ndarray, count: int, acquisition: str = DEPTH,
                       weights: Sequence[float] = ()) -> np.ndarray:
    """The entropy (N,) [nats] of each of ``count`` candidates from ``spread``: standard
    deviations (N,) or covariances (N, D, D), see the module docstring. ``weights`` (D,)
    for ``weighted``; empty: all 1. ``ValueError`` for a spread of another shape, non-finite
    or non-positive variances of a channel in the model, or weights not one per channel."""
    spread = np.asarray(spread, dtype=float)
    if spread.ndim == 1:
        return _entropy(_checked_std(spread, count, "the depth channel"))
    if spread.ndim != 3 or spread.shape[0] != count or spread.shape[1] != spread.shape[2]:
        raise ValueError(f"the predictive spread must have shape ({count},) or "
                         f"({count}, D, D), got {spread.shape}")
    channels = spread.shape[1]
    if acquisition == WEIGHTED and len(weights) not in (0, channels):
        raise ValueError(f"channel_weights {list(weights)!r} must give one weight per "
                         f"channel, depth first ({channels} channels)")
    variances = np.diagonal(spread, axis1=1, axis2=2)
    if acquisition == DEPTH:
        return _entropy(_checked_std(np.sqrt(variances[:, 0]), count, "the depth channel"))
    active = ~np.isnan(variances).all(axis=0)  # channels the model holds
    stds = [_checked_std(np.sqrt(variances[:, d]), count, f"channel {d}")
            for d in np.flatnonzero(active)]
    if acquisition == WEIGHTED:
        weight = np.asarray(weights, dtype=float)[active] if len(weights) else \
            np.ones(len(stds))
        return sum(w * _entropy(std) for w, std in zip(weight, stds))
    if acquisition != JOINT:
        raise ValueError(f"unknown acquisition {acquisition!r}; known: {list(ACQUISITIONS)}")
    sign, logdet = np.linalg.slogdet(spread[:, active][:, :, active])
    if not (sign > 0).all():
        raise ValueError("a predictive covariance across channels is not positive definite")
    return len(stds) * HALF_LOG_2PIE + 0.5 * logdet


def _entropy(std: np.ndarray) -> np.ndarray:
    # log(std) rather than log(std**2): squaring a tiny std could underflow to zero.
    return HALF_LOG_2PIE + np.log(std)


def _checked_std(std: np.ndarray, n: int, what: str) -> np.ndarray:
    if std.shape != (n,):
        raise ValueError(f"predict_std must return shape ({n},), got {std.shape}")
    bad = ~(np.isfinite(std) & (std > 0.0))
    if bad.any():
        raise ValueError(f"predict_std returned {bad.sum()} non-finite or non-positive "
                         f"values for {what}, e.g. {std[bad][0]!r}")
    return std
