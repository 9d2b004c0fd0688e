"""Streaming sparse GP (Bui, Nguyen, Turner 2017): SSGP and SSGP++ of the POAM paper's benchmark.

T. D. Bui, C. V. Nguyen, R. E. Turner, "Streaming Sparse Gaussian Process Approximations",
NeurIPS 2017. The old data are summarised by the previous update's approximate posterior
q_old(a) = N(m_a, S_a) over the old inducing outputs a, carried as a prior together with the
prior it was computed under, p(a | θ_old) = N(0, K'_aa). Per batch (X_new, y_new):

1. **Inducing inputs b.** SSGP: initialised from the old inducing inputs and the new data (a
   random share ``ssgp.new_inducing_fraction`` of the M drawn from the batch, the rest from a;
   at the first batch M at random or, with ``ssgp.initial`` kmeans, M k-means centroids),
   then optimised by Adam together with θ (step 3). SSGP++ (the POAM paper's variant): greedy
   pivoted Cholesky on [a; X_new], as POAM, and not optimised.
2. **q(b)** in closed form, the optimum of the collapsed online ELBO
   (:func:`~.posterior.streaming_posterior`):
   Σ = K_bb + σ⁻² K_bf K_fb + K_ba (S_a⁻¹ − K'_aa⁻¹) K_ab,
   m = K_bb Σ⁻¹ (σ⁻² K_bf y + K_ba S_a⁻¹ m_a),  S = K_bb Σ⁻¹ K_bb.
3. **Hyper-parameters** (and b for SSGP): Adam on the collapsed online ELBO of the new batch
   (:func:`~.elbo.online_elbo`); old data are never revisited.
4. **q(b) again** at the final θ and b (the collapsed bound's optimum), factorised as
   S = L_S L_Sᵀ; with K'_bb = K_bb(θ) it becomes q_old and p(b | θ_old) of the next batch.

The cancellation in S_a⁻¹ − K'_aa⁻¹ as data accumulate (the POAM paper reports Cholesky
errors of SSGP++) is never formed: the site enters Σ as the Gram of a square root of
D_a⁻¹ and the batch as the Gram of its whitened cross-covariance
(:class:`~.posterior.StreamingPrior`), so I + A ≥ I survives round-off at any cond K_bb.
S_a's own factor goes through :func:`~.linalg.cholesky_exact_first`, and a failure that
escalated jitter cannot fix is a :class:`~.linalg.NumericalError` of that update with the
previous model kept.

Unlike the POAM authors' implementation, whose online ELBO takes as q_old the posterior that
already includes the new batch, q_old here is the previous update's posterior, as in Bui et al.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from poam_ros.inducing import kmeans
from poam_ros.models.batch_terms import KernelCross
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.objectives import OnlineElbo, TrainingObjective
from poam_ros.models.posterior import StreamingPrior, streaming_posterior
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sparse_gp import OnlineSparseGP

_PRIOR_KEYS = ("inducing", "mean", "cov_chol", "prior_chol")


class StreamingUpdate:
    """Mixin: Bui et al.'s variational update as the E-step (SSGP, SSGP++, POAM-VAR-SSGP).

    :attr:`prior` is q_old for the next batch; :attr:`streamed_from` the one the latest E-step
    used (the online ELBO of the M-step needs it).
    """

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self.prior: StreamingPrior | None = None
        self.streamed_from: StreamingPrior | None = None

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        posterior, prior = self._streaming_step(selection, y_new, self.prior)
        self.streamed_from, self.prior = self.prior, prior
        self.inducing, self.posterior = selection.inducing, posterior

    def _streaming_step(self, selection: InducingUpdate, y_new: Tensor, prior):
        """q(b) from the batch and q_old, and q(b) as the q_old of the next batch."""
        config = self.config
        k_chol = robust_cholesky(selection.k_new, config.jitter, config.max_jitter_tries,
                                 "K_bb of the new inducing inputs")
        k_ab = None
        if prior is not None:
            same = selection.k_old is not None and torch.equal(prior.inducing, self.inducing)
            k_ab = (selection.k_old if same
                    else self.inducing_cross_covariance(prior.inducing, selection.inducing))
        posterior = streaming_posterior(k_chol, selection.cross.whitened_terms(k_chol, y_new),
                                        self.noise, prior, k_ab, config.max_jitter_tries)
        following = StreamingPrior.from_posterior(selection.inducing, posterior, k_chol,
                                                  config.jitter, config.max_jitter_tries)
        return posterior, following

    def _method_state(self) -> dict[str, Tensor]:
        state = super()._method_state()
        if self.prior is not None:
            state.update({f"prior_{key}": getattr(self.prior, key) for key in _PRIOR_KEYS})
        return state

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        super()._load_method_state(state)
        self.prior = (StreamingPrior(*(state[f"prior_{key}"] for key in _PRIOR_KEYS))
                      if "prior_mean" in state else None)


class SSGP(StreamingUpdate, OnlineSparseGP):
    """SSGP: random initialisation of b from a and X_new, b and θ by Adam on the online ELBO."""

    method = "ssgp"
    optimizes_inducing = True
    trains_on_whole_batch = True

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        limit, old = self.config.num_inducing, self.inducing
        if old is None and self.config.ssgp.initial == "kmeans":
            seed = int(torch.randint(2 ** 31 - 1, (1,), generator=self.generator))
            centroids = kmeans(x_new.cpu().double().numpy(), limit,
                               self.config.kmeans.iterations, np.random.default_rng(seed))
            return self._inducing_blocks(torch.as_tensor(centroids, dtype=self.dtype,
                                                         device=self.device), x_new)
        if old is None:
            return self._inducing_blocks(x_new[self._random_rows(len(x_new), limit)], x_new)
        fresh = min(len(x_new), max(limit - len(old),
                                    math.ceil(self.config.ssgp.new_inducing_fraction * limit)))
        kept = min(len(old), limit - fresh)
        z = torch.cat([old[self._random_rows(len(old), kept)],
                       x_new[self._random_rows(len(x_new), fresh)]])
        return self._inducing_blocks(z, x_new)

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        return OnlineElbo(self, self.streamed_from, x_new, y_new,
                          train_inducing=self.optimizes_inducing and not self.fixed_inducing)

    def _after_training(self, x_new: Tensor, y_new: Tensor) -> None:
        """Step 4: the collapsed bound's optimal q(b) at the trained θ and b."""
        selection = InducingUpdate(self.inducing, self.covariance(self.inducing, self.inducing),
                                   KernelCross(self.covariance, self.inducing, x_new), None)
        posterior, prior = self._streaming_step(selection, y_new, self.streamed_from)
        self.posterior, self.prior = posterior, prior


class SSGPPlusPlus(SSGP):
    """SSGP++: inducing inputs by pivoted Cholesky on [a; X_new] (as POAM), not optimised."""

    method = "ssgp++"
    optimizes_inducing = False
    _choose_inducing = OnlineSparseGP._choose_inducing
