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

A binary channel (a :class:`~poam_ros.mapping.binary.ChannelSpread` carries its predictive
probability p) is scored by the entropy of its next reading, the Bernoulli entropy
H(p) = −p ln p − (1 − p) ln(1 − p) [nats] (:func:`~poam_ros.mapping.binary.binary_entropy`),
in place of ½ log(2πe σ²): its latent's σ says how little is known of f, not of the class
(a latent whose mean lies many σ from 0 is sure of the class however large σ is).
``weighted`` adds w_d H(p_d); ``joint`` adds Σ_d H(p_d) to the Gaussian channels' joint
entropy, which is the joint entropy were the classes independent of the rest given the map
(an upper bound of it).

Units: both are in nats, but a Gaussian's is a differential entropy, which depends on the
channel's unit (½ log(2πe) + ln σ: a depth in mm adds ln 1000 ≈ 6.9 nats) and is negative
for σ < 0.24 units, while a Bernoulli entropy is a discrete one, in [0, ln 2 ≈ 0.69]. Their
sum weighs them by an exchange rate the unit choice sets: the channel weights are that rate.
With the default unit weights and a depth in metres, the depth's term moves by about ln of
the ratio of its σ across candidates (a few nats over a survey) and a class term by at most
0.69, so the class steers the choice where the depth's uncertainty is about even; a larger
weight on it (``channel_weights``) makes it lead.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from poam_ros.mapping.binary import ChannelSpread, binary_entropy

DEPTH, WEIGHTED, JOINT = "depth", "weighted", "joint"
ACQUISITIONS = (DEPTH, WEIGHTED, JOINT)
HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)


def predictive_entropy(spread: np.ndarray | ChannelSpread, count: int,
                       acquisition: str = DEPTH, weights: Sequence[float] = ()) -> np.ndarray:
    """The entropy (N,) [nats] of each of ``count`` candidates from ``spread``: standard
    deviations (N,), covariances (N, D, D) or, with a binary channel, a
    :class:`~poam_ros.mapping.binary.ChannelSpread`; see the module docstring. ``weights``
    (D,) for ``weighted``; empty: all 1. ``ValueError`` for a spread of another shape,
    non-finite or non-positive variances of a channel in the model, or weights not one per
    channel."""
    probability = None
    if isinstance(spread, ChannelSpread):
        spread, probability = spread
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
    binary = np.zeros(channels, dtype=bool) if probability is None else \
        ~np.isnan(np.asarray(probability, dtype=float)).all(axis=0)
    active = ~np.isnan(variances).all(axis=0)  # channels the model holds
    entropies = {d: binary_entropy(probability[:, d]) if binary[d] else
                 _entropy(_checked_std(np.sqrt(variances[:, d]), count, f"channel {d}"))
                 for d in np.flatnonzero(active)}
    if acquisition == WEIGHTED:
        weight = np.asarray(weights, dtype=float) if len(weights) else np.ones(channels)
        return sum(weight[d] * entropy for d, entropy in entropies.items())
    if acquisition != JOINT:
        raise ValueError(f"unknown acquisition {acquisition!r}; known: {list(ACQUISITIONS)}")
    gaussian = active & ~binary
    sign, logdet = np.linalg.slogdet(spread[:, gaussian][:, :, gaussian])
    if not (sign > 0).all():
        raise ValueError("a predictive covariance across channels is not positive definite")
    return (gaussian.sum() * HALF_LOG_2PIE + 0.5 * logdet
            + sum(entropies[d] for d in np.flatnonzero(active & binary)))


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
