"""Numerically guarded linear algebra for the GP models."""

from __future__ import annotations

import logging

import torch
from torch import Tensor

log = logging.getLogger(__name__)


class NumericalError(RuntimeError):
    """An update could not be computed (a factorisation failed even after escalating the
    jitter, or the batch is beyond what the method takes); the model state is unchanged."""


class BatchTooLargeError(NumericalError):
    """The pending batch is larger than the method can take in one update in bounded memory."""


def robust_cholesky(matrix: Tensor, jitter: float, max_tries: int, what: str) -> Tensor:
    """Lower Cholesky factor of ``matrix + jitter·mean(diag)·I``.

    On failure the jitter grows tenfold, at most ``max_tries`` times, from at least the
    precision's resolution (1e-10 in float64, 10 ulp in float32: a smaller shift of the
    diagonal is lost to rounding), before :class:`NumericalError` names ``what`` failed. The
    relative jitter keeps the guard meaningful whatever the kernel amplitude.
    """
    finfo = torch.finfo(matrix.dtype)
    floor = max(1e-10, 10.0 * finfo.eps)
    scale = matrix.diagonal().mean().detach().abs().clamp_min(finfo.tiny)
    if not torch.isfinite(matrix).all():
        raise NumericalError(f"{what}: matrix has non-finite entries")
    amount = jitter
    for attempt in range(max_tries + 1):
        shifted = matrix
        if amount:
            shifted = matrix.clone()
            shifted.diagonal().add_(amount * scale)
        factor, info = torch.linalg.cholesky_ex(shifted)
        if int(info) == 0:
            if attempt:
                log.debug("%s: Cholesky needed relative jitter %.1e", what, amount)
            return factor
        last = amount
        amount = max(10.0 * amount, floor)
    raise NumericalError(f"{what}: Cholesky failed with relative jitter up to {last:.1e}")


def cholesky_exact_first(matrix: Tensor, jitter: float, max_tries: int, what: str) -> Tensor:
    """Lower Cholesky factor of ``matrix`` without jitter if it succeeds, else as
    :func:`robust_cholesky`. For covariances that are not kernel matrices (a posterior's S),
    where the kernel's jitter convention does not apply and any jitter would bias the result.
    """
    if torch.isfinite(matrix).all():
        factor, info = torch.linalg.cholesky_ex(matrix)
        if int(info) == 0:
            return factor
    return robust_cholesky(matrix, jitter, max_tries, what)


def solve_lower(lower: Tensor, rhs: Tensor) -> Tensor:
    """L⁻¹ rhs for lower-triangular L."""
    return torch.linalg.solve_triangular(lower, rhs, upper=False)
