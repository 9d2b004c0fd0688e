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
  an absolute trace tolerance besides the relative one, and a stopping rule of the caller's
  (a host callback after each pivot, or a rule evaluated on the device a block of pivots at a
  time, so that a GPU waits for the host once per block, not per pivot).

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


@dataclass(frozen=True)
class PivotBlock:
    """What the ``on_block`` rule of :func:`greedy_pivots` sees: pivots ``start … end-1``,
    computed on the device and not yet read by the host (those past a stop are dropped).
    ``rows`` (≥ end, n) holds Lᵀ (row j is column j of L), ``pivots`` (≥ end,) their indices
    among the candidates and ``errors`` (≥ end,) the trace error after each; rows before
    ``start`` are kept ones, unchanged since the rule last saw them."""

    rows: Tensor
    pivots: Tensor
    errors: Tensor
    start: int
    end: int


#: Most greedy pivots computed ahead of one read of the device by the host.
PIVOT_BLOCK = 16


def failed_from(info: Tensor, size: int) -> Tensor:
    """Which of ``size`` pivots a Cholesky did not factorise (bool (size,), on the device):
    those from the first failed leading minor on (``torch.linalg.cholesky_ex``'s ``info``,
    1-based; 0 when none failed), read without waiting for the host."""
    return (info > 0) & (torch.arange(size, device=info.device) >= info - 1)


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
    return greedy_pivots(k.diagonal(), lambda i: k.index_select(1, i), rank, rel_tol, abs_tol)


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


def greedy_pivots(diagonal: Tensor, column: Callable[[Tensor], Tensor], max_rank: int,
                  rel_tol: float = 0.0, abs_tol: float = 0.0, forced: int = 0,
                  on_pivot: Callable[[PivotStep], bool] | None = None,
                  on_block: Callable[[PivotBlock], Tensor] | None = None) -> PivotedCholesky:
    """Greedy pivoted Cholesky from the diagonal (n,) and columns of K, never K itself.

    ``column(i)`` returns K[:, i] (n × m) for an int64 index tensor i (m,) on the diagonal's
    device (so that no pivot is read back). The candidates ``0 … forced-1`` are taken first,
    in order, whatever their residual (one with no residual variance left above round-off
    adds nothing and is skipped); after them each pivot is the candidate of largest residual
    variance. Stops after ``max_rank`` pivots, once the trace error is at most
    max(``rel_tol`` · tr(K), ``abs_tol``) (checked after the forced prefix), when no residual
    variance above round-off is left, or after a pivot for which a stopping rule holds (the
    pivot is kept): ``on_pivot`` (a host callback, one pivot at a time) or ``on_block`` (a
    device rule: a (end − start,) bool tensor for the block's pivots).

    In float64 on the diagonal's device. The host reads the device once per block of pivots
    (:class:`PivotBlock`). The forced prefix is one block: its columns asked at once and
    factorised by a Cholesky of their leading square (column by column, with a read at each
    candidate skipped, only when one has no residual variance left). Greedy pivots come one
    column at a time (each column from the ones before it, the residual diagonal updated
    after it), in blocks of 1, 2, 4, … up to ``PIVOT_BLOCK``, so
    that a GPU waits about log₂ b + r / b times (b = ``PIVOT_BLOCK``) and computes fewer than
    b pivots past the stop (dropped). With ``on_pivot`` every block holds one pivot, as the
    callback sees the residuals after it.
    """
    residual = diagonal.detach().to(torch.float64).clone()
    n = residual.shape[0]
    rank = min(int(max_rank), n)
    trace, peak = torch.stack([residual.sum(), residual.max()]).tolist() if n else (0.0, 0.0)
    tolerance = max(rel_tol * trace, abs_tol)
    # Residual variance below this is round-off, not information.
    run = _Factor(residual, column, rank, floor=1e-12 * max(peak, 1e-300), trace=trace)
    single = on_pivot is not None
    order = torch.arange(n, device=residual.device)
    position, forced = 0, min(forced, n)
    if forced and rank and not single:
        size = min(forced, rank)
        run.factorise_prefix(order[:size])
        kept, ended = run.accept(0, size, None, on_block, tolerance=None)
        if ended:
            return run.result()
        if kept == size:
            position = forced
        else:  # a forced candidate without residual variance: column by column, from scratch
            run.restart(diagonal.detach())
    while position < forced and run.count < rank:
        start = run.count
        size = 1 if single else min(forced - position, rank - start)
        saved = residual.clone()
        run.pivots[start:start + size] = order[position:position + size]
        for step in range(start, start + size):
            run.compute(step)
        kept, ended = run.accept(start, size, on_pivot, on_block, tolerance=None)
        if ended:
            return run.result()
        position += kept
        if kept < size:  # the next candidate has no residual variance left: skipped
            position += 1
            run.replay(saved, start)
    size = 1
    while run.count < rank and run.error > tolerance:
        start = run.count
        size = min(size, rank - start)
        for step in range(start, start + size):
            torch.argmax(residual, dim=0, keepdim=True, out=run.pivots[step:step + 1])
            run.compute(step)
        kept, ended = run.accept(start, size, on_pivot, on_block, tolerance)
        if ended or kept < size:
            break
        size = 1 if single else min(2 * size, PIVOT_BLOCK)
    return run.result()


class _Factor:
    """The factor :func:`greedy_pivots` builds on the device: rows of Lᵀ, the pivots, the
    trace error after each and the residual variance each had when chosen; ``count`` of them
    kept so far (the host's view, updated once per block)."""

    def __init__(self, residual: Tensor, column: Callable[[Tensor], Tensor], rank: int,
                 floor: float, trace: float):
        self.residual, self.column, self.floor, self.trace = residual, column, floor, trace
        self.rows = residual.new_empty(rank, residual.shape[0])  # Lᵀ: row j is column j of L
        self.pivots = torch.empty(rank, dtype=torch.int64, device=residual.device)
        self.errors = residual.new_empty(rank)
        self.variances = residual.new_empty(rank)
        self.count = 0
        self.error = trace

    def compute(self, step: int) -> None:
        """Pivot ``step`` at the candidate ``pivots[step]``: its column of L into the rows,
        the residuals updated; nothing read back (past round-off the numbers are garbage,
        never kept)."""
        at = self.pivots[step:step + 1]
        variance = torch.index_select(self.residual, 0, at, out=self.variances[step:step + 1])
        col = self.column(at).to(self.residual).squeeze(1)
        if step:
            done = self.rows[:step]
            col = col - done.transpose(0, 1) @ done.index_select(1, at).squeeze(1)  # gemv on Lᵀ
        col = torch.div(col, variance.sqrt(), out=self.rows[step])
        self.residual.sub_(col.square()).clamp_(min=0.0)
        self.residual.index_fill_(0, at, 0.0)
        torch.sum(self.residual, dim=0, out=self.errors[step])

    def factorise_prefix(self, prefix: Tensor) -> None:
        """The candidates ``prefix`` (the first m, in order) as pivots 0 … m-1 at once:
        L[prefix] = chol K[prefix, prefix] (the diagonal's values on its diagonal, as the
        columns take them) and the other rows K[:, prefix] L[prefix]⁻ᵀ; the trace error
        after each pivot from the cumulated squares."""
        size = prefix.shape[0]
        cols = self.column(prefix).to(self.residual)  # n × m
        head = cols[:size].clone()
        head.diagonal().copy_(self.residual[:size])
        chol, info = torch.linalg.cholesky_ex(head)
        rows = self.rows[:size]
        rows[:, :size] = chol.transpose(0, 1)
        rows[:, size:] = torch.linalg.solve_triangular(chol, cols[size:].transpose(0, 1),
                                                       upper=False)
        left = (self.residual - rows.square().cumsum(0)).clamp_(min=0.0)  # m × n, after each
        left[:, :size].triu_(1)  # a pivot explains its own variance exactly
        torch.sum(left, dim=1, out=self.errors[:size])
        self.residual.copy_(left[-1])
        self.pivots[:size] = prefix
        # A failed leading minor leaves no variance from that pivot on.
        self.variances[:size] = chol.diagonal().square().masked_fill_(failed_from(info, size),
                                                                       0.0)

    def restart(self, diagonal: Tensor) -> None:
        self.residual.copy_(diagonal)
        self.count, self.error = 0, self.trace

    def accept(self, start: int, size: int, on_pivot: Callable[[PivotStep], bool] | None,
               on_block: Callable[[PivotBlock], Tensor] | None,
               tolerance: float | None) -> tuple[int, bool]:
        """Read the block of pivots ``start … start+size-1`` once; keep those before the first
        without residual variance above round-off. Returns how many are kept and whether the
        selection ends after them (a stopping rule, or the trace error within ``tolerance``
        when given)."""
        end = start + size
        read = [self.variances[start:end] > self.floor, self.errors[start:end],
                self.pivots[start:end]]
        if on_block is not None:
            read.append(on_block(PivotBlock(self.rows, self.pivots, self.errors, start, end)))
        host = torch.stack([part.to(torch.float64) for part in read]).tolist()
        for k in range(size):
            if not host[0][k]:
                return k, False
            self.count, self.error = start + k + 1, host[1][k]
            if ((on_block is not None and host[3][k])
                    or (on_pivot is not None and on_pivot(PivotStep(
                        self.count, int(host[2][k]), self.rows[start + k], self.residual,
                        self.error, self.trace)))
                    or (tolerance is not None and not self.error > tolerance)):
                return k + 1, True
        return size, False

    def replay(self, saved: Tensor, start: int) -> None:
        """Residuals after the kept pivots from ``start`` on, from ``saved`` (those before
        the block), by the same operations as :meth:`compute`."""
        self.residual.copy_(saved)
        for step in range(start, self.count):
            self.residual.sub_(self.rows[step].square()).clamp_(min=0.0)
            self.residual.index_fill_(0, self.pivots[step:step + 1], 0.0)

    def result(self) -> PivotedCholesky:
        return PivotedCholesky(self.pivots[:self.count], self.rows[:self.count].transpose(0, 1),
                               self.error, self.trace)


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
