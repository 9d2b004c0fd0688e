"""CV: the conditional-variance baseline of the VIPS paper (Pescador-Barrios, Filippi, van der
Wilk, "Adjusting Model Size in Continual Gaussian Processes: How Big is Big Enough?", Sec. 5).

Per batch, greedy pivoted Cholesky over the pool [Z_o; X_new] (old inducing inputs and new
samples, none forced) picks the candidate of largest conditional variance given those chosen
so far, until the variance left unexplained,

    tr(K − L Lᵀ) = Σ_i Var[f(c_i) | f(Z')]   over the candidates c_i (amplitude included),

is at most the absolute tolerance η = ``cv.tolerance`` (standardised target units). The
number of inducing inputs then follows the data: it grows where new samples are not
explained, and may shrink, since old inducing inputs compete with the new samples.
``num_inducing`` is a hard cap. The relative ``pcd_tolerance`` stays in force as well, so with
η = 0 the selection is SSGP++'s. q(u) and the hyper-parameters are SSGP++'s streaming E- and
M-steps (Bui et al.'s update and online bound), as the paper's baselines share VIPS's.

``UpdateReport.extra`` keys: ``inducing_added`` (new samples made inducing inputs; old ones
may have been dropped), ``trace_error`` (the unexplained trace after the selection),
``cap_bound`` (1 when the cap stopped the selection above η, else 0), and the shared
``pcd_trace_error`` (the same relative to the candidates' trace).
"""

from __future__ import annotations

from typing import Callable

from torch import Tensor

from poam_ros.inducing import PivotBlock, PivotedCholesky
from poam_ros.models.report import UpdateReport
from poam_ros.models.ssgp import SSGPPlusPlus


class ConditionalVariance(SSGPPlusPlus):
    """SSGP++ with its pivoted Cholesky stopped at an absolute trace tolerance."""

    method = "cv"

    def _pivoted_selection(self, candidates: Tensor, report: UpdateReport, forced: int = 0,
                           on_block: Callable[[PivotBlock], Tensor] | None = None
                           ) -> tuple[PivotedCholesky, Tensor | None]:
        """The shared selection, stopped after the first pivot that brings the trace error to
        η (a rule on the device; it takes the column route of the selection)."""
        tolerance = self.config.cv.tolerance

        def explained(block: PivotBlock) -> Tensor:
            within = block.errors[block.start:block.end] <= tolerance
            return within if on_block is None else within | on_block(block)

        pcd, k_cc = super()._pivoted_selection(candidates, report, forced, explained)
        full = len(pcd.pivots) == self.config.num_inducing
        num_old = 0 if self.inducing is None else self.inducing.shape[0]
        report.extra.update(inducing_added=int((pcd.pivots >= num_old).sum()),
                            trace_error=pcd.trace_error,
                            cap_bound=int(full and pcd.trace_error > tolerance))
        return pcd, k_cc
