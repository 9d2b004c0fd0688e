"""A binary channel's map: the probability of class 1, its uncertainty and its scores.

A Bernoulli channel (``mapping.channel_likelihoods``: ``bernoulli``, a seabed class hard = 1
/ soft = 0) is modelled through a latent f with the probit link p(y = 1 | f) = Φ(f)
(:mod:`poam_ros.models.likelihoods`). Its map is not the latent: at a point where the model's
latent is N(μ, σ²) the predictive probability is the latent integrated out,

    p = P(y = 1) = ∫ Φ(f) N(f | μ, σ²) df = Φ(μ / √(1 + σ²))

(the probit's Gaussian integral, exact: what Gauss–Hermite quadrature of Φ converges to, and
not Φ(μ), which ignores σ and is overconfident where the map knows little). Its uncertainty
layer is the Bernoulli entropy of that probability, in nats,

    H(p) = −p ln p − (1 − p) ln(1 − p)     ∈ [0, ln 2]

the entropy of the next reading there: ln 2 where the map cannot tell (unexplored, where
μ = 0 and σ is large, or on a class boundary), 0 where it is sure. It is what the planner
scores (:mod:`poam_ros.planners.acquisition`) and, unlike the latent's σ, it is on one
fixed scale on every map ([0, ln 2]), as the probability is ([0, 1]): the occupancy grids and
the GeoTIFF of a binary channel use those (:data:`BINARY_SCALES`).

Scores against the truth P(y = 1 | p) at the evaluation points, t (G,), with the
predicted p̂ (G,), in the shape of the Gaussian channels' (:class:`~.metrics.MapMetrics`):
``nlpd`` the expected negative log probability of a reading, −[t ln p̂ + (1 − t) ln(1 − p̂)]
(the cross-entropy; ln 2 for p̂ = ½), ``msll`` that minus the same for the training labels'
frequency p̄ at every point, ``rmse`` and ``mae`` of t − p̂, ``smse`` the mean squared error
over the variance of t.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from poam_ros.mapping.metrics import MapMetrics, TargetBaseline

BERNOULLI = "bernoulli"
#: the mean grid's (0, 1) and the uncertainty grid's (0, ln 2) of a binary channel
BINARY_SCALES = ((0.0, 1.0), (0.0, math.log(2.0)))


class ChannelSpread(NamedTuple):
    """What the planner scores at N candidates of a map with a binary channel: the channels'
    predictive ``covariance`` (N, D, D), depth first (a binary channel's entries those of its
    latent), and each binary channel's ``probability`` P(y = 1) (N, D), NaN in the columns of
    the other channels."""

    covariance: np.ndarray
    probability: np.ndarray


def binary_channels(model) -> np.ndarray:
    """(D,) bool: which of ``model``'s channels are Bernoulli (its ``likelihoods``)."""
    return np.array([likelihood.name == BERNOULLI for likelihood in model.likelihoods])


def declared_binary(channel_likelihoods) -> tuple[bool, ...]:
    """Which channels ``mapping.channel_likelihoods`` declares Bernoulli (empty: none): how a
    scorer without the model (``poam-ros sim``'s monitor) knows them."""
    return tuple(name == BERNOULLI for name in channel_likelihoods)


def class_probability(mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """Φ(μ / √(1 + σ²)) elementwise: P(y = 1) of a latent N(μ, σ²) (see the docstring)."""
    mean, std = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
    return ndtr(mean / np.sqrt(1.0 + std ** 2))


def binary_entropy(probability: np.ndarray) -> np.ndarray:
    """H(p) [nats] elementwise, 0 at p = 0 and 1 (x ln x → 0); NaN stays NaN."""
    p = np.asarray(probability, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -(np.where(p > 0.0, p * np.log(p), 0.0)
                  + np.where(p < 1.0, (1.0 - p) * np.log1p(-p), 0.0))
    return np.where(np.isnan(p), np.nan, terms)


def binary_layers(mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The probability and entropy layers of latent means and standard deviations (any
    shape, NaN outside the map)."""
    probability = class_probability(mean, std)
    return probability, binary_entropy(probability)


def channel_spread(mean: np.ndarray, covariance: np.ndarray, binary: np.ndarray
                   ) -> ChannelSpread:
    """The :class:`ChannelSpread` of latent means (N, D) and covariances (N, D, D) for the
    ``binary`` (D,) channels."""
    std = np.sqrt(np.diagonal(covariance, axis1=1, axis2=2))
    probability = np.where(binary, class_probability(mean, std), np.nan)
    return ChannelSpread(covariance, probability)


def evaluate_binary(truth: np.ndarray, mean: np.ndarray, std: np.ndarray,
                    train_targets: np.ndarray | TargetBaseline) -> MapMetrics:
    """Scores of a binary channel (the module docstring) from the truth P(y = 1) (G,) and
    the latent's ``mean`` and ``std`` (G,); ``train_targets``: the labels held (or their
    baseline, whose mean is their frequency). ``ValueError`` for a constant truth or labels
    all of one class (SMSE, MSLL undefined) or non-finite values."""
    truth, mean, std = (np.asarray(v, dtype=float) for v in (truth, mean, std))
    if not (np.isfinite(truth).all() and np.isfinite(mean).all() and np.isfinite(std).all()):
        raise ValueError("a binary channel's truth and latent must be finite")
    baseline = (train_targets if isinstance(train_targets, TargetBaseline)
                else TargetBaseline.of(train_targets))
    if truth.var() == 0.0 or not 0.0 < baseline.mean < 1.0:
        raise ValueError("a constant truth or labels of one class: SMSE or MSLL undefined")
    predicted = class_probability(mean, std)
    error = truth - predicted
    nlpd = _cross_entropy(truth, predicted)
    return MapMetrics(smse=float(np.mean(error ** 2) / truth.var()),
                      msll=float(np.mean(nlpd - _cross_entropy(truth, baseline.mean))),
                      nlpd=float(np.mean(nlpd)), rmse=float(np.sqrt(np.mean(error ** 2))),
                      mae=float(np.mean(np.abs(error))))


def _cross_entropy(truth: np.ndarray, predicted) -> np.ndarray:
    """−[t ln p̂ + (1 − t) ln(1 − p̂)], p̂ kept off 0 and 1 by the float's resolution."""
    tiny = np.finfo(float).eps
    predicted = np.clip(predicted, tiny, 1.0 - tiny)
    return -(truth * np.log(predicted) + (1.0 - truth) * np.log1p(-predicted))
