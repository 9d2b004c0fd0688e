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
generator); the old inducing inputs stay first, in order, and the added ones follow in arrival
order. The size is not chosen, so ``num_inducing`` bounds it, in one of two ways
(``oips.at_capacity``):

* ``stop``: a hard cap. Once Z is full the remaining samples of the batch add nothing, and the
  update reports that the cap bound. Under the attentive kernel two nearby samples with
  different attention weights have k ≈ 0, so without the cap M would grow with the data.
* ``prune``: the bounded mode of the authors' library (InducingPoints.jl's ``OIPS`` with
  ``kmax`` = ``num_inducing``). A sample that would make Z exceed it is added, then Z is
  pruned (:func:`prune`) with ρ_remove = η · the largest correlation between two of its inputs,
  and where ρ_remove < ρ the threshold drops to ρ = η · ρ_remove; this repeats until Z fits,
  and the samples after it are tested with the new ρ. ρ only decreases; the model keeps it
  (state files too).

The OIPS paper's own configuration (its App. E): an isotropic SE kernel whose lengthscale is
the median pairwise distance of the first batch (``oips.median_lengthscale``), hyper-parameters
and noise fixed (``lr_hyper: 0``, ``initial_noise_variance: 0.01``, ``m_step: adam``), and for
"OIPS/opt" the inducing inputs moved by Adam at rate 0.01 after each selection
(``oips.move_inducing``, ``lr_inducing``).

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
import math
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
                        x: Tensor, rho: float, capacity: int) -> tuple[Tensor, int | None]:
    """OIPS's Alg. 1 over the samples x (N × D) in order, from the set ``inducing`` (M × D).

    ``correlation(x1, x2)`` gives the kernel over its amplitude (N1 × N2, unit diagonal). A
    sample joins the set when its largest correlation with the set so far is below ``rho``;
    the set never exceeds ``capacity``. Returns the indices of the samples added (in order) and
    the index of the first sample the full set refused (one the rule would have added; the
    samples after it are not tested), None when the cap stopped nothing.
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
        room = capacity - size
        kept = torch.as_tensor(taken[:room], dtype=torch.int64, device=x.device)
        chosen.append(index[kept] + start)
        z = torch.cat([z, candidates[kept]])
        size += len(kept)
        if len(taken) > room:
            return torch.cat(chosen), start + int(index[taken[room]])
    return (torch.cat(chosen) if chosen else torch.zeros(0, dtype=torch.int64, device=x.device),
            None)


def prune(correlation: Callable[[Tensor, Tensor], Tensor], inducing: Tensor, kmin: int,
          eta: float, generator: torch.Generator) -> tuple[Tensor, float]:
    """The authors' library's pruning of a full set Z (M × D): returns the kept inputs (in
    their order) and ρ_remove.

    ρ_remove = η · max_{i≠j} k̃(z_i, z_j). While some pair is correlated above ρ_remove and more
    than ``kmin`` inputs remain, one input of such a pair goes, drawn with probability
    proportional to its number of neighbours above ρ_remove (``generator``): afterwards no
    kept pair exceeds ρ_remove unless ``kmin`` stopped it. A set with no correlated pair
    (max = 0) loses its newest input, so that a full set always shrinks.
    """
    k = correlation(inducing, inducing)
    k.fill_diagonal_(0.0)
    rho_remove = eta * float(k.max())
    close = (k > rho_remove).cpu().numpy()
    neighbours = close.sum(1)
    keep = np.ones(len(close), dtype=bool)
    while neighbours.any() and keep.sum() > kmin:
        crowded = np.flatnonzero(neighbours)
        weights = torch.as_tensor(neighbours[crowded], dtype=torch.float64)
        i = crowded[int(torch.multinomial(weights, 1, generator=generator))]
        keep[i] = False
        neighbours[close[i]] -= 1
        neighbours[i] = 0
        close[i, :] = close[:, i] = False
    if keep.all():
        keep[-1] = False
    return inducing[torch.as_tensor(np.flatnonzero(keep), device=inducing.device)], rho_remove


def median_distance(x: Tensor, generator: torch.Generator, most: int = 2000) -> float:
    """The median of the pairwise distances |x_i − x_j|, i < j, of x (N × D): the OIPS paper's
    lengthscale h of k = exp(−|x − x'|² / h²) (App. E). Beyond ``most`` rows, of a random
    subset of that many (``generator``): O(most²) memory."""
    if x.shape[0] > most:
        x = x[torch.randperm(x.shape[0], generator=generator)[:most].to(x.device)]
    rows, cols = torch.triu_indices(x.shape[0], x.shape[0], offset=1, device=x.device)
    return float((x[rows] - x[cols]).norm(dim=1).median())


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
    """Mixin: OIPS's selection as :meth:`_choose_inducing` of a method, with its options
    (``oips.*``).

    ``UpdateReport.extra`` keys: ``inducing_added`` (inputs added in this update, the initial
    ``oips.kmin`` included at the first), ``inducing_pruned`` (removed by pruning),
    ``rho`` (the threshold ρ after the update, lowered by pruning), ``rho_bar`` (ρ·a, or ρ·σ²
    on the constant + Matérn kernel's Matérn part, a variance in standardised target units) and
    ``cap_bound`` (1 when ``num_inducing`` stopped an addition, else 0).
    """

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        #: ρ as pruning lowered it; None while it is ``oips.rho``.
        self.rho: float | None = None

    @property
    def optimizes_inducing(self) -> bool:
        """OIPS/opt: the M-step moves the selected inputs (``oips.move_inducing``)."""
        return self.config.oips.move_inducing

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        config, old = self.config, self.inducing
        options, cap = config.oips, config.num_inducing
        base = self.kernel.base_kernel
        if old is None:  # distinct positions: a copy would hold a slot of the cap for good
            if options.median_lengthscale:  # h of exp(−r²/h²) is √2 l of exp(−r²/(2 l²))
                base.lengthscale = median_distance(x_new, self.generator) / math.sqrt(2.0)
            distinct = first_occurrences(x_new)
            old = x_new[distinct[self._random_rows(len(distinct), min(options.kmin, cap))]]
        rho = options.rho if self.rho is None else min(self.rho, options.rho)
        correlation = base.distance_correlation
        if options.at_capacity == "prune":
            z, rho, pruned = self._select_pruning(correlation, old, x_new, rho)
            self.rho, refused = (rho if rho < options.rho else None), None
        else:
            added, refused = threshold_selection(correlation, old, x_new, rho, cap)
            z, pruned = torch.cat([old, x_new[added]]), 0
        previous = 0 if self.inducing is None else self.inducing.shape[0]
        report.extra.update(inducing_added=z.shape[0] - previous + pruned,
                            inducing_pruned=pruned, rho=rho,
                            rho_bar=float(rho * self.amplitude * base.distance_share),
                            cap_bound=int(refused is not None))
        if refused is not None:
            log.info("%s: the cap of %d inducing inputs stopped the selection", self.method, cap)
        return self._inducing_blocks(z, x_new)

    def _select_pruning(self, correlation, z: Tensor, x: Tensor,
                        rho: float) -> tuple[Tensor, float, int]:
        """Alg. 1 with ``oips.at_capacity`` prune: each time a sample overfills Z, Z is pruned
        (:func:`prune`) and ρ lowered before the next samples are tested. Returns Z, the new ρ
        (the caller keeps it as :attr:`rho`) and how many inputs pruning removed. A failed
        update restores :attr:`rho` with the rest of the method's state
        (:meth:`_method_state`)."""
        options, cap = self.config.oips, self.config.num_inducing
        kmin, start, pruned = min(options.kmin, cap), 0, 0
        while True:
            added, refused = threshold_selection(correlation, z, x[start:], rho, cap)
            z = torch.cat([z, x[start:][added]])
            if refused is None:
                break
            z = torch.cat([z, x[start + refused:start + refused + 1]])
            while z.shape[0] > cap:
                size = z.shape[0]
                z, rho_remove = prune(correlation, z, kmin, options.eta, self.generator)
                pruned += size - z.shape[0]
                if rho_remove < rho:
                    rho = options.eta * rho_remove
            start += refused + 1
        if pruned:
            log.info("%s: pruned %d inducing inputs, rho now %.4g", self.method, pruned, rho)
        return z, rho, pruned

    def _method_state(self) -> dict[str, Tensor]:
        state = super()._method_state()
        if self.rho is not None:
            state["oips_rho"] = torch.tensor(self.rho, dtype=torch.float64)
        return state

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        super()._load_method_state(state)
        self.rho = float(state["oips_rho"]) if "oips_rho" in state else None


class Oips(ThresholdSelection, SSGPPlusPlus):
    """OIPS with SSGP++'s streaming E- and M-steps (the papers' setting). ``extra``: see
    :class:`ThresholdSelection`."""

    method = "oips"


class PoamOips(ThresholdSelection, POAM):
    """OIPS's selection with POAM's E- and M-steps (this project's combination). ``extra``:
    see :class:`ThresholdSelection`."""

    method = "poam-oips"
