"""OIPS: online inducing-point selection by a kernel threshold (Galy-Fajou, Opper).

T. Galy-Fajou, M. Opper, "Adaptive Inducing Points Selection for Gaussian Processes", 2020,
Alg. 1. Every sample x, in arrival order, becomes an inducing input when no inducing input
explains it well enough:

    add x to Z   if   max_j k(x, z_j) < ρ̄,   ρ̄ = ρ · a   (ρ = ``oips.rho``),

with a the kernel amplitude (the prior variance k(x, x)): the original assumes unit variance;
the threshold scaled by the amplitude is that of the VIPS paper's App. B.3 (Alg. 6), so that Z
does not depend on a. With this project's unit-diagonal kernels the test is max_j k̃(x, z_j) < ρ
on the correlation k̃ = k / a, which is how it is evaluated. For the RBF kernel a sample is
added exactly when it lies farther than ℓ √(−2 ln ρ) from every inducing input. Under the
constant + Matérn kernel c_v + σ² m(r/ℓ) every correlation is at least c_v / (c_v + σ²), so
a learned constant would hide every new point: there the test is on the Matérn part,
m(r/ℓ) < ρ (threshold ρ·σ²), as the VIPS authors' code tests it.

Z starts from ``oips.kmin`` random distinct positions of the first batch (the model's seeded
generator) and is never pruned: the old inducing inputs stay first, in order, and the added
ones follow in arrival order. The size is not chosen, so ``num_inducing`` is a hard cap: once Z
is full the remaining samples of the batch add nothing, and the update reports that the cap
bound. Under the attentive kernel two nearby samples with different attention weights have
k ≈ 0, so without the cap M would grow with the data.

Samples are processed in chunks of bounded memory: a chunk's kernel values with Z (chunk × M)
reject most samples at once; the few left are tested against each other (the order within the
chunk decides, as one sample at a time would) and the accepted ones join Z before the next
chunk: O(N_new · M) kernel values per update. An exact copy of an inducing input is never
added (the attentive kernel's k(x, x) rounds to 1 ± 1e-16, which ρ = 1 would otherwise
admit).

Two methods, the selection being the only change:

* ``oips``: SSGP++'s streaming E- and M-steps (Bui et al.'s update and online bound), as in
  both papers' experiments;
* ``poam-oips``: POAM's E- and M-steps (carried data terms, all-data mini-batch ELBO).
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.batch_terms import CHUNK_ELEMENTS
from poam_ros.models.poam import POAM
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.ssgp import SSGPPlusPlus

log = logging.getLogger(__name__)

#: The most samples of a batch tested at once (their kernel values with each other, at most
#: this squared, are formed).
MAX_CHUNK_ROWS = 1024


def threshold_selection(correlation: Callable[[Tensor, Tensor], Tensor], inducing: Tensor,
                        x: Tensor, rho: float, capacity: int) -> tuple[Tensor, bool]:
    """OIPS's Alg. 1 over the samples x (N × D) in order, from the set ``inducing`` (M × D).

    ``correlation(x1, x2)`` gives the kernel over its amplitude (N1 × N2, unit diagonal). A
    sample joins the set when its largest correlation with the set so far is below ``rho``;
    the set never exceeds ``capacity``. Returns the indices of the samples added (in order) and
    whether the cap stopped a sample that would otherwise have been added.
    """
    z, chosen, size = inducing, [], inducing.shape[0]
    rows = min(MAX_CHUNK_ROWS, max(64, CHUNK_ELEMENTS // max(capacity, 1)))
    for start in range(0, x.shape[0], rows):
        chunk = x[start:start + rows]
        index = torch.arange(chunk.shape[0], device=x.device)
        if z.shape[0]:  # a sample the set explains now stays explained as the set grows
            index = index[correlation(chunk, z).amax(1) < rho]
            index = index[~_copies(chunk[index], z).any(1)]
        if not len(index):
            continue
        candidates = chunk[index]
        close = (correlation(candidates, candidates) >= rho) | _copies(candidates, candidates)
        taken = _in_order(close.cpu().numpy())
        bound = len(taken) > capacity - size
        taken = torch.as_tensor(taken[:capacity - size], dtype=torch.int64, device=x.device)
        chosen.append(index[taken] + start)
        z = torch.cat([z, candidates[taken]])
        size += len(taken)
        if bound:
            return torch.cat(chosen), True
    return (torch.cat(chosen) if chosen else torch.zeros(0, dtype=torch.int64, device=x.device),
            False)


def first_occurrences(x: Tensor) -> Tensor:
    """The row index of each distinct row of x (N × D) where it first occurs, ascending."""
    _, inverse = torch.unique(x, dim=0, return_inverse=True)
    rows = torch.arange(x.shape[0], device=x.device)
    first = torch.full((int(inverse.max()) + 1,), x.shape[0], dtype=rows.dtype, device=x.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin").sort().values


def _copies(x1: Tensor, x2: Tensor) -> Tensor:
    """Whether x1_i equals x2_j exactly, N1 × N2."""
    return (x1[:, None, :] == x2[None, :, :]).all(-1)


def _in_order(close: np.ndarray) -> list[int]:
    """The candidates taken one at a time in order, each unless an earlier taken one is close
    to it (``close``: n × n, symmetric)."""
    blocked = np.zeros(close.shape[0], dtype=bool)
    taken = []
    for i in range(close.shape[0]):
        if not blocked[i]:
            taken.append(i)
            blocked |= close[i]
    return taken


class ThresholdSelection:
    """Mixin: OIPS's selection as :meth:`_choose_inducing` of a method.

    ``UpdateReport.extra`` keys: ``inducing_added`` (inputs added in this update, the initial
    ``oips.kmin`` included at the first), ``rho_bar`` (the threshold ρ·a, or ρ·σ² on the
    constant + Matérn kernel's Matérn part, a variance in standardised target units) and
    ``cap_bound`` (1 when ``num_inducing`` stopped an addition, else 0).
    """

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        config, old = self.config, self.inducing
        cap, rho = config.num_inducing, config.oips.rho
        if old is None:  # distinct positions: a copy would hold a slot of the cap for good
            distinct = first_occurrences(x_new)
            old = x_new[distinct[self._random_rows(len(distinct), min(config.oips.kmin, cap))]]
        base = self.kernel.base_kernel
        added, bound = threshold_selection(base.distance_correlation, old, x_new, rho, cap)
        z = torch.cat([old, x_new[added]])
        num_added = z.shape[0] - (0 if self.inducing is None else self.inducing.shape[0])
        report.extra.update(inducing_added=num_added,
                            rho_bar=float(rho * self.amplitude * base.distance_share),
                            cap_bound=int(bound))
        if bound:
            log.info("%s: the cap of %d inducing inputs stopped the selection", self.method, cap)
        return self._inducing_blocks(z, x_new)


class Oips(ThresholdSelection, SSGPPlusPlus):
    """OIPS with SSGP++'s streaming E- and M-steps (the papers' setting). ``extra``: see
    :class:`ThresholdSelection`."""

    method = "oips"


class PoamOips(ThresholdSelection, POAM):
    """OIPS's selection with POAM's E- and M-steps (this project's combination). ``extra``:
    see :class:`ThresholdSelection`."""

    method = "poam-oips"
