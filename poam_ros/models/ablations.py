"""Ablations of POAM (the POAM paper's Fig. 8): one component of POAM replaced at a time.

Inducing inputs (POAM: greedy pivoted Cholesky on [Z; X_new]):

* **POAM-Z-OPT**: drawn once from the first data, then only moved by Adam on the ELBO together
  with the hyper-parameters (rate ``lr_inducing``); the stored terms are carried from the
  inducing inputs of the previous E-step to the moved ones.
* **POAM-Z-RAND**: a random subset of M of the candidates [Z; X_new].
* **POAM-Z-KMEANS**: M k-means centroids of the candidates (Lloyd's algorithm from k-means++
  seeds, ``kmeans.iterations`` of them, :func:`~poam_ros.inducing.kmeans`).

Variational parameters (POAM: closed form from the carried terms, Eqs. 7-8):

* **POAM-VAR-OPT**: learned by Adam (whitened, rate ``lr_variational``) on the mini-batch ELBO
  together with the hyper-parameters; at each update q(u) is carried to the new inducing inputs
  by the sparse GP's own predictive q(u') = ∫ p(u' | u) q(u) du.
* **POAM-VAR-SSGP**: Bui et al.'s streaming update (:class:`~.ssgp.StreamingUpdate`): the
  previous q(u) and its prior as the prior of the new batch. Each batch then stays weighted by
  the noise variance of its time; this is the same conditioning as OVC++'s cached terms, in
  moments (S_a⁻¹ − K'_aa⁻¹, a Cholesky factor of S_a) rather than in data terms, so the two
  differ only in round-off and in how they fail numerically (as in the authors' code).

Hyper-parameters (POAM: mini-batch ELBO over all data with q(u) fixed):

* **POAM-ONLINE-ELBO**: Bui et al.'s collapsed online ELBO of the newest batch, with POAM's
  previous q(u) and K_uu (of its E-step) as q_old and p(a | θ_old).

Draws are made with the model's seeded generator, so runs repeat exactly.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from poam_ros.inducing import kmeans
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.objectives import OnlineElbo, TrainingObjective, WhitenedElbo
from poam_ros.models.poam import POAM
from poam_ros.models.posterior import (
    StreamingPrior,
    carried_whitened,
    posterior_from_whitened,
    whitened_from_posterior,
)
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sparse_gp import OnlineSparseGP
from poam_ros.models.ssgp import StreamingUpdate


class PoamZOpt(POAM):
    method = "poam-z-opt"
    optimizes_inducing = True

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        if self.inducing is None:
            z = x_new[self._random_rows(len(x_new), self.config.num_inducing)]
        else:
            z = self.inducing  # where the previous M-step moved them
        return self._inducing_blocks(z, x_new)


class PoamZRand(POAM):
    method = "poam-z-rand"

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        candidates = x_new if self.inducing is None else torch.cat([self.inducing, x_new])
        chosen = self._random_rows(len(candidates), self.config.num_inducing)
        return self._inducing_blocks(candidates[chosen], x_new)


class PoamZKmeans(POAM):
    method = "poam-z-kmeans"

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        candidates = x_new if self.inducing is None else torch.cat([self.inducing, x_new])
        seed = int(torch.randint(2 ** 31 - 1, (1,), generator=self.generator))
        centroids = kmeans(candidates.cpu().double().numpy(), self.config.num_inducing,
                           self.config.kmeans.iterations, np.random.default_rng(seed))
        z = torch.as_tensor(centroids, dtype=self.dtype, device=self.device)
        return self._inducing_blocks(z, x_new)


class PoamVarOpt(OnlineSparseGP):
    method = "poam-var-opt"

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        config = self.config
        k_chol = robust_cholesky(selection.k_new, config.jitter, config.max_jitter_tries,
                                 "K_u'u' of the new inducing inputs")
        if self.posterior is None:  # the prior, N(0, I) whitened
            mean_w = selection.inducing.new_zeros(len(selection.inducing))
            sqrt_w = torch.eye(len(mean_w), dtype=self.dtype, device=self.device)
        else:
            mean_w, sqrt_w = carried_whitened(self.k_uu_cholesky(self.inducing), self.posterior,
                                              selection.k_old, k_chol, config.jitter,
                                              config.max_jitter_tries)
        self.inducing = selection.inducing
        self.posterior = posterior_from_whitened(k_chol, mean_w, sqrt_w)

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        config = self.config
        with torch.no_grad():
            mean_w, sqrt_w = whitened_from_posterior(self.k_uu_cholesky(self.inducing),
                                                     self.posterior, config.jitter,
                                                     config.max_jitter_tries)
        return WhitenedElbo(self, mean_w.requires_grad_(True), sqrt_w.requires_grad_(True))


class PoamVarSsgp(StreamingUpdate, OnlineSparseGP):
    method = "poam-var-ssgp"


class PoamOnlineElbo(POAM):
    method = "poam-online-elbo"
    trains_on_whole_batch = True

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self._previous = None  # (Z, q(u), chol K_uu) before the latest E-step

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        previous = None
        if self.posterior is not None:
            previous = (self.inducing, self.posterior, self.data_chol.to(self.dtype))
        super()._update_variational(selection, x_new, y_new)
        self._previous = previous

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        prior = None
        if self._previous is not None:
            config, previous = self.config, self._previous
            prior = lambda: StreamingPrior.from_posterior(  # noqa: E731
                *previous, config.jitter, config.max_jitter_tries)
        return OnlineElbo(self, prior, x_new, y_new)
