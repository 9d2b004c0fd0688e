"""Numerically guarded linear algebra for the GP models."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

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
    relative jitter keeps the guard meaningful whatever the kernel amplitude. The first attempt
    and the finiteness of ``matrix`` are read in one transfer; inside :func:`deferred_checks`
    not at all (the first attempt is returned and its status recorded).
    """
    finfo = torch.finfo(matrix.dtype)
    floor = max(1e-10, 10.0 * finfo.eps)
    scale = matrix.diagonal().mean().detach().abs().clamp_min(finfo.tiny)
    finite = torch.isfinite(matrix).all()
    amount = jitter
    for attempt in range(max_tries + 1):
        shifted = matrix
        if amount:
            shifted = matrix.clone()
            shifted.diagonal().add_(amount * scale)
        factor, info = torch.linalg.cholesky_ex(shifted)
        if attempt == 0:
            checks = _DEFERRED.get()
            if checks is not None:
                checks.record(finite, info)
                return factor
            is_finite, info = torch.stack([finite.to(info.dtype), info]).tolist()
            if not is_finite:
                raise NumericalError(f"{what}: matrix has non-finite entries")
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
    Inside :func:`deferred_checks`, the attempt without jitter is returned and recorded.
    """
    finite = torch.isfinite(matrix).all()
    factor, info = torch.linalg.cholesky_ex(matrix)
    checks = _DEFERRED.get()
    if checks is not None:
        checks.record(finite, info)
        return factor
    if finite & (info == 0):
        return factor
    return robust_cholesky(matrix, jitter, max_tries, what)


class DeferredChecks:
    """Statuses kept on the device until one :meth:`read` (see :func:`deferred_checks`)."""

    def __init__(self):
        self._finite: list[Tensor] = []  # boolean scalars that must be true
        self._infos: list[Tensor] = []  # Cholesky statuses that must be 0

    def record(self, finite: Tensor, info: Tensor | None = None) -> None:
        """A factorisation's input finiteness and status, or (``info`` None) a scalar's
        finiteness: pass ``torch.isfinite(value)``."""
        self._finite.append(finite)
        if info is not None:
            self._infos.append(info)

    def flags(self) -> list[Tensor]:
        """Boolean scalars on the device, all true when everything recorded passed."""
        flags = [torch.stack(self._finite).all()] if self._finite else []
        if self._infos:
            flags.append(torch.stack(self._infos).eq(0).all())
        return flags

    def read(self, *values: Tensor) -> tuple[bool, list[float]]:
        """Whether everything recorded passed, and ``values`` (scalars) as floats: one
        transfer from the device."""
        flags = self.flags()
        parts = [part.detach().reshape(()).double() for part in (*flags, *values)]
        if not parts:
            return True, []
        numbers = torch.stack([part.to(parts[0].device) for part in parts]).tolist()
        return all(numbers[:len(flags)]), numbers[len(flags):]


_DEFERRED: ContextVar[DeferredChecks | None] = ContextVar("deferred_checks", default=None)


@contextmanager
def deferred_checks() -> Iterator[DeferredChecks]:
    """Factorise without reading the device, and check everything once afterwards.

    Inside, :func:`robust_cholesky` and :func:`cholesky_exact_first` make their first attempt
    only and record its status in the yielded :class:`DeferredChecks` instead of reading it;
    they never raise. On a GPU every such read is a host synchronisation that drains the
    launch queue; a loop of training steps so needs one instead of two per step. The caller
    must :meth:`~DeferredChecks.read` the checks and, if they failed, discard everything
    computed inside and redo it with the checks in place (jitter escalation included).
    """
    checks = DeferredChecks()
    token = _DEFERRED.set(checks)
    try:
        yield checks
    finally:
        _DEFERRED.reset(token)


def solve_lower(lower: Tensor, rhs: Tensor) -> Tensor:
    """L⁻¹ rhs for lower-triangular L."""
    return torch.linalg.solve_triangular(lower, rhs, upper=False)
