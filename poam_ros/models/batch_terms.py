"""The new batch's data terms, accumulated in chunks of bounded memory.

Every E-step needs the newest batch only through K_u'f (M' × N_new, the covariance between the
new inducing inputs and the batch), and mostly only through

    b = K_u'f y   (M',)      and      C = K_u'f K_fu'   (M' × M')

(POAM Eqs. 12-21, OVC's cache, Bui et al.'s collapsed bound). K_u'f is never formed whole: a
:class:`CrossCovariance` yields it in column blocks of at most ``CHUNK_ELEMENTS`` numbers, so
a batch of 200,000 samples at M' = 500 needs 32 MB for it, not 800 MB. Three sources:

* :class:`DenseCross`: a block already in memory (the candidates' kernel matrix of a small
  batch holds it);
* :class:`FactorCross`: from the pivoted Cholesky factor of the candidates, K_u'f = L_P L_fᵀ
  with L_P the pivots' rows (lower triangular) and L_f the batch's rows: exact at the pivots'
  columns, so no kernel evaluation is repeated;
* :class:`KernelCross`: the kernel evaluated block by block, for inducing inputs chosen
  otherwise (random, k-means, fixed, trained).

Blocks and terms are in float64 (``TERMS_DTYPE`` of the models): the sums over many samples
must not lose C's positive definiteness to rounding.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch
from torch import Tensor

from poam_ros.models.linalg import solve_lower
from poam_ros.models.posterior import WhitenedTerms

#: Numbers in one block of K_u'f (32 MB of float64).
CHUNK_ELEMENTS = 1 << 22


class CrossCovariance:
    """K_u'f of a batch, block by block: :meth:`blocks` yields (row slice of the batch,
    M' × rows block in float64)."""

    num_data: int  # N
    num_inducing: int  # M'
    device: torch.device

    def blocks(self) -> Iterator[tuple[slice, Tensor]]:
        raise NotImplementedError

    def chunk_rows(self, num_inducing: int) -> int:
        return max(1, CHUNK_ELEMENTS // max(num_inducing, 1))

    def terms(self, y: Tensor) -> tuple[Tensor, Tensor]:
        """b = K_u'f y (M',) and C = K_u'f K_fu' (M' × M') in float64."""
        y = y.to(torch.float64)
        size = self.num_inducing
        vector = torch.zeros(size, dtype=torch.float64, device=self.device)
        matrix = torch.zeros(size, size, dtype=torch.float64, device=self.device)
        for rows, block in self.blocks():
            vector.addmv_(block, y[rows])
            matrix.addmm_(block, block.transpose(0, 1))
        return vector, matrix

    def whitened_terms(self, lower: Tensor, y: Tensor) -> WhitenedTerms:
        """L⁻¹b (M',) and W Wᵀ = L⁻¹C L⁻ᵀ (M' × M') with W = L⁻¹K_u'f, ``lower`` = L
        (M' × M', lower triangular), each block whitened before its Gram is summed.

        The same numbers as whitening C by two triangular solves in exact arithmetic, but W Wᵀ
        is the Gram of a computed matrix, positive semi-definite to round-off, where
        L⁻¹(K_u'f K_fu')L⁻ᵀ carries the rounding of C amplified by cond(K_u'u') (≈ 10⁸ on a
        dense memory: eigenvalues of −1 and below, and I + σ⁻²W Wᵀ fails to factorise).
        One more M'² N triangular solve than :meth:`terms`."""
        y = y.to(torch.float64)
        lower = lower.to(torch.float64)
        size = self.num_inducing
        vector = torch.zeros(size, dtype=torch.float64, device=self.device)
        matrix = torch.zeros(size, size, dtype=torch.float64, device=self.device)
        for rows, block in self.blocks():
            whitened = solve_lower(lower, block)
            vector.addmv_(whitened, y[rows])
            matrix.addmm_(whitened, whitened.transpose(0, 1))
        return WhitenedTerms(vector, matrix)

    def dense(self) -> Tensor:
        """The whole M' × N block (for small batches and tests)."""
        return torch.cat([block for _, block in self.blocks()], dim=1)


class DenseCross(CrossCovariance):
    """A block already in memory, M' × N."""

    def __init__(self, block: Tensor):
        self.block = block.to(torch.float64)
        self.num_inducing, self.num_data = block.shape
        self.device = block.device

    def blocks(self) -> Iterator[tuple[slice, Tensor]]:
        yield slice(0, self.num_data), self.block


class FactorCross(CrossCovariance):
    """K_u'f = L_P L_fᵀ from a pivoted Cholesky factor: ``pivot_rows`` L_P (M' × M', lower
    triangular), ``data_rows`` L_f (N × M')."""

    def __init__(self, pivot_rows: Tensor, data_rows: Tensor):
        self.pivot_rows, self.data_rows = pivot_rows, data_rows
        self.num_data, self.num_inducing = data_rows.shape
        self.device = data_rows.device

    def blocks(self) -> Iterator[tuple[slice, Tensor]]:
        step = self.chunk_rows(self.num_inducing)
        for start in range(0, self.num_data, step):
            rows = slice(start, min(start + step, self.num_data))
            yield rows, self.pivot_rows @ self.data_rows[rows].transpose(0, 1)


class KernelCross(CrossCovariance):
    """K(Z', X) evaluated block by block by ``covariance(z, x_block)``."""

    def __init__(self, covariance: Callable[[Tensor, Tensor], Tensor], inducing: Tensor,
                 data: Tensor):
        self.covariance, self.inducing, self.data = covariance, inducing, data
        self.num_inducing, self.num_data = inducing.shape[0], data.shape[0]
        self.device = data.device

    def blocks(self) -> Iterator[tuple[slice, Tensor]]:
        step = self.chunk_rows(self.num_inducing)
        for start in range(0, self.num_data, step):
            rows = slice(start, min(start + step, self.num_data))
            yield rows, self.covariance(self.inducing, self.data[rows]).to(torch.float64)
