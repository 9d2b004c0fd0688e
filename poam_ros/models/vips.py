"""VIPS: inducing inputs added until the collapsed bound is close enough to its best value.

Pescador-Barrios, Filippi, van der Wilk, "Adjusting Model Size in Continual Gaussian
Processes: How Big is Big Enough?" (Sec. 4, Algs. 1 and 4). Per batch (X_new, y_new), the old
inducing inputs Z_o are kept, never removed, and points of X_new are added. (One exception, of
arithmetic: an old inducing input whose conditional variance given those before it has fallen
below round-off under the current kernel, 1e-12 of the largest, say after a lengthscale grew
tenfold, adds nothing to the span and cannot be factorised: the selection skips it and the
update counts it in ``inducing_dropped``.)

1. L* = the collapsed bound (:mod:`.vips_bound`) at Z = Z_o ∪ X_new, the best it can be
   (Eqs. 8-9), from a full pivoted Cholesky of the candidates' kernel matrix: O(n³) time and
   O(n²) memory for n = M_o + N_new. A batch of more than ``vips.bound_subset`` samples is
   represented by a random subset of that size (as the authors' reference code; not the
   upper bound Û of App. F): L*, L̂, L_noise and the candidates to add all come from it,
   q(u) and the M-step from the whole batch.
2. L_noise = Σ log N(y_n; μ̂, σ̂²) over the batch, μ̂ and σ̂² the running mean and variance of
   every target seen, this batch included (kept in the state file, scaled units).
3. Candidates in greedy-variance order (pivoted Cholesky on [Z_o; X_new] with Z_o forced
   first) are added while L* − L̂(Z) > δ |L* − L_noise| (δ = ``vips.delta``). Algs. 1 and 4
   print the loop condition with the opposite sign; the text and the authors' code continue
   while the gap exceeds the threshold, as here. L̂ is updated by a bordered Cholesky as
   pivots are added, a block at a time on the device (:class:`~.vips_bound.IncrementalBound`,
   :func:`grow_by_bound`): the host reads it once per block. At least one inducing input is
   kept; ``num_inducing`` is a hard cap (``cap_bound`` reports when it stops the loop). The
   selection's ``pcd_tolerance`` and round-off floor also end it (set the tolerance to 0 for
   the paper's rule alone).
4. q(u) and the hyper-parameters by the method's E- and M-steps.

``UpdateReport.extra`` (besides ``pcd_trace_error``):

* ``inducing_added``: points of X_new added to Z;
* ``inducing_dropped``: old inducing inputs skipped as spanned to round-off (see above);
* ``bound_best``: L* (nats, scaled targets);
* ``bound_gap``: L* − L̂ at the chosen Z;
* ``bound_threshold``: δ |L* − L_noise|;
* ``cap_bound``: 1 if ``num_inducing`` stopped the loop while the gap exceeded the threshold
  and candidates were left.

At fixed hyper-parameters the gap equals KL[q_Z ‖ q*] between the variational posterior at Z
and the one at Z_o ∪ X_new (the augmented model's exact posterior): tested on ``vips``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from poam_ros.inducing import PivotBlock, PivotedCholesky, pivoted_cholesky
from poam_ros.models.batch_terms import FactorCross, KernelCross
from poam_ros.models.linalg import NumericalError, robust_cholesky
from poam_ros.models.poam import POAM
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.ssgp import SSGPPlusPlus
from poam_ros.models.vips_bound import (
    DTYPE,
    BoundSite,
    IncrementalBound,
    RunningMoments,
    collapsed_bound,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BoundStop:
    """Where VIPS's rule ends the greedy order (step 3 of the module docstring)."""

    count: int  # pivots kept
    gap: float  # L* − L̂ at them
    added: int  # of them points of the batch
    surplus_square: float | None  # Σ L[:, j]² of the dropped surplus pivot j; None: none


def grow_by_bound(select: Callable[[Callable[[PivotBlock], Tensor]], PivotedCholesky],
                  bound: IncrementalBound, best: float, threshold: float, num_old: int
                  ) -> tuple[PivotedCholesky, BoundStop]:
    """Step 3: the greedy order on [Z_o; X] (``select``, called with the rule as the
    ``on_block`` of :func:`~poam_ros.inducing.greedy_pivots`, Z_o forced first) stopped after
    the first new point that brings L* − L̂ to ``threshold`` or below, or at the first new
    point when Z_o alone met it: that pivot, computed to see it, is surplus and dropped.

    The rule runs on the device, L̂ a block of pivots at a time (:class:`IncrementalBound`),
    so that the selection reads the device once per block; the result is read once here.
    ``bound`` must be fresh (no pivot added)."""

    def stops(block: PivotBlock) -> Tensor:
        bound.truncate(block.start)
        bound.extend(block.rows[block.start:block.end])
        before = best - bound.history[block.start:block.end] <= threshold
        if block.start == 0:
            before[0] = False  # at least one inducing input is kept
        after = best - bound.history[block.start + 1:block.end + 1] <= threshold
        return (block.pivots[block.start:block.end] >= num_old) & (before | after)

    pcd = select(stops)
    taken = len(pcd.pivots)
    before, after, new, last_square = torch.stack([
        *bound.history[taken - 1:taken + 1], (pcd.pivots >= num_old).sum().to(DTYPE),
        pcd.factor[:, -1].square().sum()]).tolist()
    if not math.isfinite(after):
        raise NumericalError("I + A of the VIPS bound is not positive definite")
    surplus = taken > 1 and new > 0 and best - before <= threshold  # new pivots come last
    return pcd, BoundStop(taken - surplus, best - (before if surplus else after),
                          int(new) - surplus, last_square if surplus else None)


class VipsSelection:
    """Mixin: VIPS's selection and stopping rule as the E-step's choice of inducing inputs.

    A method supplies :meth:`_bound_site`, the old data's site on Z_o in the bound."""

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self.target_moments = RunningMoments.empty(self.device)

    def _bound_site(self) -> BoundSite | None:
        raise NotImplementedError

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        self.target_moments = self.target_moments.merged(y_new)
        if self.fixed_inducing:
            super()._update_posterior(x_new, y_new, report)
            return
        start = time.perf_counter()
        selection = self._grow_inducing(x_new, y_new, report)
        report.inducing_time = time.perf_counter() - start
        self._update_variational(selection, x_new, y_new)

    def _grow_inducing(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> InducingUpdate:
        """Steps 1-3 of the module docstring."""
        config, old = self.config, self.inducing
        num_old = 0 if old is None else old.shape[0]
        subset = x_new.shape[0] > config.vips.bound_subset
        if subset:
            rows = self._random_rows(x_new.shape[0], config.vips.bound_subset).sort().values
            x_bound, y_bound = x_new[rows], y_new[rows]
        else:
            x_bound, y_bound = x_new, y_new
        candidates = x_bound if old is None else torch.cat([old, x_bound])
        y = y_bound.to(DTYPE)
        noise, amplitude = self.noise.detach().to(DTYPE), self.amplitude.detach().to(DTYPE)
        site = self._bound_site()
        best = self._best_bound(candidates, num_old, y, noise, amplitude, site)
        noise_fit = float(self.target_moments.log_likelihood(y, config.min_noise_variance))
        threshold = config.vips.delta * abs(best - noise_fit)
        bound = IncrementalBound(num_old, y, noise, amplitude, site,
                                 min(config.num_inducing, candidates.shape[0]))
        pcd, stop = grow_by_bound(
            lambda rule: self._pivoted_selection(candidates, report, num_old, rule)[0],
            bound, best, threshold, num_old)
        count, gap = stop.count, stop.gap
        pivots = pcd.pivots[:count].to(self.device)
        factor = pcd.factor[:, :count].to(self.device)
        if stop.surplus_square is not None:
            report.extra["pcd_trace_error"] = (pcd.trace_error + stop.surplus_square) / pcd.trace
        cap_bound = (count == config.num_inducing < candidates.shape[0]) and gap > threshold
        if cap_bound:
            log.info("%s: the cap of %d inducing inputs binds (gap %.4g > threshold %.4g)",
                     self.method, count, gap, threshold)
        dropped = num_old - (count - stop.added)
        if dropped:
            log.info("%s: %d old inducing inputs dropped, spanned by the others to round-off "
                     "under the current kernel", self.method, dropped)
        report.extra.update(inducing_added=stop.added, inducing_dropped=dropped,
                            bound_best=best, bound_gap=gap, bound_threshold=threshold,
                            cap_bound=int(cap_bound))
        z = candidates[pivots]
        cross = (KernelCross(self.covariance, z, x_new) if subset
                 else FactorCross(factor[pivots], factor[num_old:]))
        k_old = None if old is None else self.inducing_cross_covariance(old, z)
        return InducingUpdate(z, self.covariance(z, z), cross, k_old)

    def _best_bound(self, candidates: Tensor, num_old: int, y: Tensor, noise: Tensor,
                    amplitude: Tensor, site: BoundSite | None) -> float:
        """L* (Eq. 9): the bound with every candidate an inducing input, from LAPACK's pivoted
        Cholesky of the n × n kernel matrix (candidates numerically spanned by others add
        nothing and are left out, so duplicates cannot break it)."""
        k_cc = self.covariance(candidates, candidates).to(DTYPE)
        k_cc.diagonal().copy_(amplitude)  # as the selection's columns take it
        try:
            full = pivoted_cholesky(k_cc, candidates.shape[0])
        except ValueError as err:
            raise NumericalError(f"the kernel matrix of the VIPS candidates: {err}") from None
        rows = full.factor.transpose(0, 1).to(y.device)
        return float(collapsed_bound(rows, num_old, y, noise, amplitude, site,
                                     self.config.max_jitter_tries))

    def _method_state(self) -> dict[str, Tensor]:
        return {**super()._method_state(), **self.target_moments.state()}

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        own = set(RunningMoments.KEYS)
        super()._load_method_state({k: v for k, v in state.items() if k not in own})
        self.target_moments = (RunningMoments.from_state(state) if own <= state.keys()
                               else RunningMoments.empty(self.device))


class Vips(VipsSelection, SSGPPlusPlus):
    """``vips``: the paper's streaming variant. Bui et al.'s online bound (as ``ssgp++``): q(u)
    in closed form (App. E) and the hyper-parameters by the online bound of the new batch; the
    old data enter the selection's bound as q_old(a) / p(a | θ_old) on Z_o."""

    method = "vips"

    def _bound_site(self) -> BoundSite | None:
        """q_old(a) / p(a | θ_old) with a = Z_o (``ssgp++`` never moves Z, so q_old lives on
        Z_o) and K_aa under the current kernel (:meth:`BoundSite.streaming`)."""
        prior = self.prior
        if prior is None:
            return None
        k_aa = self.covariance(prior.inducing, prior.inducing).to(DTYPE)
        k_aa.diagonal().copy_(self.amplitude.detach())
        return BoundSite.streaming(prior, k_aa)


class PoamVips(VipsSelection, POAM):
    """``poam-vips`` (this project's extension of VIPS, not in the paper): POAM's E- and M-steps
    (stored data terms carried by the Nyström projection, all-data mini-batch ELBO) with VIPS's
    selection and stopping rule on POAM's collapsed bound over all data.

    The old data are known only through the stored terms b = K_of y and C = K_of K_fo at Z_o,
    so their part of the bound at new inducing inputs u' is that of the projection
    K_u'f ≈ K_u'o K_oo⁻¹ K_of, the same one the E-step carries b and C by: a site on Z_o with
    Λ = σ⁻² K_oo⁻¹ C K_oo⁻¹ and s = σ⁻² K_oo⁻¹ b (K_oo that of the kernel that stored them;
    Λ from a square root of C, :meth:`~.vips_bound.BoundSite.stored_terms`).
    The exact bound would need the new points against every stored sample. L* and L̂ are the
    all-data bound minus the old data's own bound at Z_o under the current kernel (a constant:
    the gap is unchanged), so that |L* − L_noise| compares the batch with the noise model, as
    in ``vips``. Cost per update: O(n³) time and O(n²) memory for L* (n = M_o + N_new, N_new
    capped by ``vips.bound_subset``), O(n M'² + M_o² M') for the selection, O(M_o³) for the
    site; independent of the number of samples seen."""

    method = "poam-vips"

    def _bound_site(self) -> BoundSite | None:
        if self.data_vector is None:
            return None
        if not torch.equal(self.data_inducing, self.inducing):
            raise NumericalError("poam-vips: the stored terms are not at the inducing inputs")
        config = self.config
        k_oo = self.covariance(self.inducing, self.inducing).to(DTYPE)
        current = robust_cholesky(k_oo, config.jitter, config.max_jitter_tries,
                                  "K_oo of the poam-vips bound")
        return BoundSite.stored_terms(self.data_chol, self.data_vector, self.data_matrix,
                                      self.noise.detach().to(DTYPE), current,
                                      config.max_jitter_tries)
