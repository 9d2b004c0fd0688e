"""Greedy pivoted-Cholesky selection of inducing inputs among candidates (POAM, Sec. IV-B).

The pivots of a greedy pivoted Cholesky decomposition (PCD) of the candidates' kernel matrix
are the inducing inputs: each next pivot is the candidate the chosen ones explain least. Two
routes compute the same pivots:

* dense: the n × n matrix, formed while n ≤ ``BLOCKED_RATIO`` · M and it takes at most
  ``DENSE_SELECTION_BYTES`` (the steady state, where LAPACK's blocked factorisation is
  fastest), factorised on the host in float64; the E-step then reads its blocks from it;
* columns: beyond, :func:`~poam_ros.inducing.greedy_pivots` asks the kernel for the M chosen
  columns only, each one pass over the candidates with their attention weights computed once:
  memory O(n M), and no pivot read back from the device.

The kernel is the model's: ``outputscale`` a and ``base_kernel`` (``forward``, ``features``,
``columns``) of unit diagonal, in scaled units. A selection hands the E-step the chosen inputs
with their kernel blocks, :class:`InducingUpdate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from poam_ros.inducing import (
    BLOCKED_RATIO,
    PivotBlock,
    PivotedCholesky,
    greedy_pivots,
    pivoted_cholesky,
)
from poam_ros.models.batch_terms import CrossCovariance, DenseCross, FactorCross
from poam_ros.models.linalg import NumericalError


@dataclass
class InducingUpdate:
    """New inducing inputs Z' with the kernel blocks an E-step needs (current hyper-parameters).

    ``k_old`` is K(Z, Z') for the inducing inputs Z before the update, with the jitter of K_uu
    as a white-noise term where Z and Z' share a point (None at the first update). ``cross``
    gives K(Z', X_new) in blocks of bounded memory (:mod:`.batch_terms`).
    """

    inducing: Tensor  # Z' (M' × D)
    k_new: Tensor  # K(Z', Z') without jitter
    cross: CrossCovariance  # K(Z', X_new), M' × N_new, never formed whole
    k_old: Tensor | None


#: The largest candidates' kernel matrix the selection forms (beyond, it asks for columns).
DENSE_SELECTION_BYTES = 256 << 20


def pivoted_selection(kernel, candidates: Tensor, rank: int, tolerance: float, forced: int = 0,
                      on_block: Callable[[PivotBlock], Tensor] | None = None
                      ) -> tuple[PivotedCholesky, Tensor | None]:
    """At most ``rank`` greedy PCD pivots of ``candidates`` (n × D), stopped at the relative
    trace ``tolerance``, and their kernel matrix a · k (n × n) when it was formed (None
    otherwise). ``forced`` and ``on_block`` are those of
    :func:`~poam_ros.inducing.greedy_pivots` (and force the column route). A non-finite kernel
    or no pivot at all is a :class:`~.linalg.NumericalError`."""
    n, base = candidates.shape[0], kernel.base_kernel
    dense = (n <= BLOCKED_RATIO * rank and n * n * 8 <= DENSE_SELECTION_BYTES
             and not forced and on_block is None)
    k_cc = None
    if dense:
        k_cc = kernel.outputscale * base.forward(candidates, candidates)
        # The unit diagonal exactly, as the column route takes it: its round-off would
        # otherwise pick the first pivot among candidates that all tie.
        k_cc.diagonal().copy_(kernel.outputscale.detach())
        try:  # the finiteness is checked on the host copy, where it reads nothing back
            pcd = pivoted_cholesky(k_cc.double(), rank, tolerance)
        except ValueError as err:
            raise NumericalError(f"the kernel matrix of the inducing candidates: {err}")
    else:
        amplitude = kernel.outputscale
        features = base.features(candidates)
        if not torch.isfinite(features).all():
            raise NumericalError("the kernel features of the inducing candidates are not finite")

        def column(i: Tensor) -> Tensor:  # device indices: no pivot is read back
            return amplitude * base.columns(candidates, features, candidates[i], features[i])

        diagonal = amplitude.expand(n)  # both kernels have unit diagonal
        pcd = greedy_pivots(diagonal, column, rank, tolerance, forced=forced, on_block=on_block)
        if not math.isfinite(pcd.trace_error):  # a non-finite column reaches the residuals
            raise NumericalError("the kernel columns of the inducing candidates are not finite")
    if len(pcd.pivots) == 0:
        raise NumericalError("pivoted Cholesky found no inducing input")
    return pcd, k_cc


def pivot_blocks(candidates: Tensor, old: Tensor | None, pcd: PivotedCholesky,
                 k_cc: Tensor | None, covariance: Callable[[Tensor, Tensor], Tensor],
                 cross_covariance: Callable[[Tensor, Tensor], Tensor],
                 white: Callable[[], Tensor]) -> InducingUpdate:
    """The E-step's blocks for the pivots ``pcd`` of ``candidates`` = [Z; X_new] (Z = ``old``,
    None at the first update): read from the candidates' kernel matrix ``k_cc`` when it was
    formed, K(Z, Z') then carrying the white-noise term of K_uu, ``white()`` (jitter · a),
    where Z' kept a point of Z; else K(Z', X_new) from the factor, K(Z', Z') by
    ``covariance`` and K(Z, Z') by ``cross_covariance`` (which carries that term itself)."""
    num_old = 0 if old is None else old.shape[0]
    device = candidates.device
    host_pivots = pcd.pivots.numpy() if pcd.pivots.device.type == "cpu" else None
    pivots = pcd.pivots.to(device)
    z = candidates[pivots]
    if k_cc is None:
        k_old = None if old is None else cross_covariance(old, z)
        factor = pcd.factor.to(device)
        return InducingUpdate(z, covariance(z, z), FactorCross(factor[pivots], factor[num_old:]),
                              k_old)
    k_old = None
    if old is not None:
        k_old = k_cc[:num_old][:, pivots].clone()
        survivors = torch.as_tensor(np.flatnonzero(host_pivots < num_old), device=device)
        k_old[pivots[survivors], survivors] += white()
    return InducingUpdate(z, k_cc[pivots][:, pivots], DenseCross(k_cc[pivots, num_old:]), k_old)
