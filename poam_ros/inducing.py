"""Inducing-input selection: greedy pivoted Cholesky decomposition (PCD) and k-means.

At each update POAM runs PCD on the candidates [Z_old; X_new] (never the whole data set) and
keeps the pivots. Greedy PCD picks, at every step, the candidate whose variance is least
explained by the points chosen so far, which spreads inducing inputs where the kernel says the
field varies (Burt et al. 2020 analyse it for sparse GPs). Ties (the attentive kernel's constant
diagonal at the first pivot) go to the lowest index.

Two exact algorithms give the same greedy pivots:

* :func:`pivoted_cholesky` factorises a kernel matrix held in memory, by LAPACK's blocked
  ``dpstrf`` (complete pivoting is the greedy rule; O(n³/3) in matrix-matrix kernels) when n
  is at most ``BLOCKED_RATIO`` times the rank, by :func:`greedy_pivots` on its columns
  otherwise: the steady state of a mission, where n = M + N_new is not much larger than M;
* :func:`greedy_pivots` reads only the diagonal and the r chosen columns, each asked of a
  callable: memory O(n r) for the factor, time O(n r²) in memory-bound matrix-vector steps
  (it reads about n r²/2 numbers). A batch of any size, whose n² kernel matrix would not fit,
  goes this way. It also takes a forced prefix of pivots (old inducing inputs kept first),
  an absolute trace tolerance besides the relative one, and a callback after each pivot, so
  that a method may stop on its own criterion.

:func:`kmeans` (Lloyd's algorithm from k-means++ seeds) serves the POAM-Z-KMEANS ablation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from scipy.linalg import lapack
from torch import Tensor


@dataclass(frozen=True)
class PivotedCholesky:
    """Result of :func:`pivoted_cholesky` and :func:`greedy_pivots` (float64 tensors).

    Attributes:
        pivots: (r,) indices of the chosen rows, in the order chosen.
        factor: (n, r) matrix L with K ≈ L Lᵀ; L[pivots] is lower triangular and
            L L[pivots]ᵀ reproduces the chosen columns K[:, pivots].
        trace_error: tr(K - L Lᵀ), the variance left unexplained.
        trace: tr(K).
    """

    pivots: Tensor
    factor: Tensor
    trace_error: float
    trace: float


@dataclass(frozen=True)
class PivotStep:
    """What the ``on_pivot`` callback of :func:`greedy_pivots` sees after each pivot."""

    rank: int  # pivots chosen so far, this one included
    pivot: int  # index of this pivot among the candidates
    column: Tensor  # (n,) its column of L
    residual: Tensor  # (n,) residual variances diag(K - L Lᵀ) after it (read only)
    trace_error: float  # their sum
    trace: float


#: Up to this ratio of candidates to pivots, factorising the whole matrix beats the loop.
BLOCKED_RATIO = 4


def pivoted_cholesky(matrix, max_rank: int, rel_tol: float = 0.0,
                     abs_tol: float = 0.0) -> PivotedCholesky:
    """Greedy pivoted Cholesky of a symmetric PSD matrix (n × n, array or tensor) in memory.

    Stops after ``max_rank`` pivots, or earlier once the trace error tr(K - L Lᵀ) is at most
    max(``rel_tol`` · tr(K), ``abs_tol``), or when no candidate has residual variance above
    round-off left (the rest are numerically spanned by the chosen ones, e.g. duplicates).
    """
    k = torch.as_tensor(matrix, dtype=torch.float64)
    n = k.shape[0]
    if k.ndim != 2 or k.shape[1] != n:
        raise ValueError(f"pivoted_cholesky needs a square matrix, got shape {tuple(k.shape)}")
    rank = min(int(max_rank), n)
    if n <= BLOCKED_RATIO * rank:
        host = k.cpu().numpy()
        if not np.isfinite(host).all():
            raise ValueError("the matrix is not finite")
        return _blocked(host, rank, rel_tol, abs_tol)
    return greedy_pivots(k.diagonal(), lambda i: k[:, i], rank, rel_tol, abs_tol)


def _blocked(k: np.ndarray, rank: int, rel_tol: float, abs_tol: float) -> PivotedCholesky:
    """LAPACK's blocked factorisation P K Pᵀ = L Lᵀ, then the prefix meeting the stopping rule."""
    trace = float(np.trace(k))
    factor_p, piv, lapack_rank, info = lapack.dpstrf(k, lower=1, tol=-1.0)
    if info < 0:
        raise ValueError(f"dpstrf rejected argument {-info}")
    lower = np.tril(factor_p[:, :lapack_rank])  # the trailing block is not factorised
    errors = trace - np.concatenate([[0.0], np.cumsum((lower ** 2).sum(0))])  # after j pivots
    meets = np.flatnonzero(errors <= max(rel_tol * trace, abs_tol))
    chosen = min(rank, int(meets[0]) if len(meets) else lapack_rank)
    factor = np.empty((k.shape[0], chosen))
    factor[piv - 1] = lower[:, :chosen]
    return PivotedCholesky(torch.as_tensor(piv[:chosen] - 1), torch.as_tensor(factor),
                           float(max(errors[chosen], 0.0)), trace)


def greedy_pivots(diagonal: Tensor, column: Callable[[int], Tensor], max_rank: int,
                  rel_tol: float = 0.0, abs_tol: float = 0.0, forced: int = 0,
                  on_pivot: Callable[[PivotStep], bool] | None = None) -> PivotedCholesky:
    """Greedy pivoted Cholesky from the diagonal (n,) and columns of K, never K itself.

    ``column(i)`` returns K[:, i] (n,); it is asked once for each pivot. The candidates
    ``0 … forced-1`` are taken first, in order, whatever their residual (one with no residual
    variance left above round-off adds nothing and is skipped); after them each pivot is the
    candidate of largest residual variance. Stops after ``max_rank`` pivots, once the trace
    error is at most max(``rel_tol`` · tr(K), ``abs_tol``) (checked after the forced prefix),
    when no residual variance above round-off is left, or when ``on_pivot`` returns True
    after a pivot (which is kept). Right-looking, one column at a time, in float64 on the
    diagonal's device.
    """
    residual = diagonal.detach().to(torch.float64).clone()
    n = residual.shape[0]
    rank = min(int(max_rank), n)
    trace = float(residual.sum())
    tolerance = max(rel_tol * trace, abs_tol)
    # Residual variance below this is round-off, not information.
    floor = 1e-12 * max(float(residual.max()) if n else 0.0, 1e-300)
    rows = residual.new_empty(rank, n)  # Lᵀ: row j is column j of L, read contiguously
    pivots: list[int] = []
    error = trace
    for candidate in range(min(forced, n)):
        if len(pivots) == rank:
            break
        if residual[candidate] > floor:
            error = _eliminate(rows, residual, column, pivots, candidate)
            if on_pivot is not None and on_pivot(_step(rows, residual, pivots, error, trace)):
                return _result(rows, pivots, error, trace)
    while len(pivots) < rank and error > tolerance:
        candidate = int(torch.argmax(residual))
        if residual[candidate] <= floor:
            break
        error = _eliminate(rows, residual, column, pivots, candidate)
        if on_pivot is not None and on_pivot(_step(rows, residual, pivots, error, trace)):
            break
    return _result(rows, pivots, error, trace)


def _eliminate(rows: Tensor, residual: Tensor, column: Callable[[int], Tensor],
               pivots: list[int], pivot: int) -> float:
    """Add ``pivot``: its column of L into ``rows``, the residuals updated; the trace error."""
    step = len(pivots)
    done = rows[:step]
    col = column(pivot).to(residual)
    if step:
        col = col - done.transpose(0, 1) @ done[:, pivot]  # gemv on Lᵀ: twice vecmat's speed
    col = col / residual[pivot].sqrt()
    rows[step] = col
    residual.sub_(col.square()).clamp_(min=0.0)
    residual[pivot] = 0.0
    pivots.append(pivot)
    return float(residual.sum())


def _step(rows: Tensor, residual: Tensor, pivots: list[int], error: float,
          trace: float) -> PivotStep:
    return PivotStep(len(pivots), pivots[-1], rows[len(pivots) - 1], residual, error, trace)


def _result(rows: Tensor, pivots: list[int], error: float, trace: float) -> PivotedCholesky:
    return PivotedCholesky(torch.tensor(pivots, dtype=torch.int64, device=rows.device),
                           rows[:len(pivots)].transpose(0, 1), error, trace)


def kmeans(points: np.ndarray, k: int, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """k' = min(k, distinct points) centroids (k' × D) of ``points`` (n × D), by Lloyd's algorithm.

    Seeds by k-means++ (Arthur & Vassilvitskii 2007: each next seed drawn with probability
    proportional to its squared distance from the nearest seed so far), then alternates
    assignment to the nearest centroid and moving each centroid to the mean of its points, for
    at most ``iterations`` rounds or until no assignment changes. A cluster left empty is
    re-seeded at the point farthest from its centroid. Deterministic given ``rng``.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or len(points) == 0:
        raise ValueError(f"kmeans needs a non-empty n × D array, got shape {points.shape}")
    k = min(int(k), len(np.unique(points, axis=0)))
    n = len(points)
    centroids = np.empty((k, points.shape[1]))
    centroids[0] = points[rng.integers(n)]
    nearest = ((points - centroids[0]) ** 2).sum(1)
    for j in range(1, k):
        # nearest.sum() > 0: fewer seeds than distinct points so far
        centroids[j] = points[rng.choice(n, p=nearest / nearest.sum())]
        np.minimum(nearest, ((points - centroids[j]) ** 2).sum(1), out=nearest)
    labels = None
    for _ in range(iterations):
        new_labels, nearest = _nearest_centroid(points, centroids)
        if labels is not None and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, points)
        filled = counts > 0
        centroids[filled] = sums[filled] / counts[filled, None]
        if not filled.all():
            farthest = np.argsort(nearest)[::-1][: int((~filled).sum())]
            centroids[~filled] = points[farthest]
    return centroids


#: Points assigned to centroids at a time: the n × k × D differences stay about 32 MB.
ASSIGN_ELEMENTS = 1 << 22


def _nearest_centroid(points: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each point's nearest centroid and the squared distance to it, (n,) each, in
    chunks of points of bounded memory."""
    labels = np.empty(len(points), dtype=np.int64)
    nearest = np.empty(len(points))
    chunk = max(1, ASSIGN_ELEMENTS // (len(centroids) * points.shape[1]))
    for start in range(0, len(points), chunk):
        block = points[start:start + chunk]
        dist = ((block[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)  # chunk × k
        labels[start:start + chunk] = dist.argmin(1)
        nearest[start:start + chunk] = dist[np.arange(len(block)), labels[start:start + chunk]]
    return labels, nearest
