"""POAM-MT: POAM's constant-time update (Chen, Khardon, Liu) lifted to the LMC of :mod:`.lmc`.

Per update, with the newest batch and the inducing inputs Z shared by the Q latents:

1. **Inducing inputs**: greedy pivoted Cholesky on [Z; X_new] under the latents' summed kernel
   (the shared selection), at most M.
2. **Data terms per channel and latent pair** (:func:`~.lmc.channel_terms`): b_d = K_uf y_d and
   C_d = K_uf K_fu over the samples of channel d, with K_uf the latents' cross-covariances
   stacked (QM × N). The stored terms of all earlier data are carried to the new inputs by
   POAM's Nyström projection, per latent: P = diag(P_q), P_q = K_{q,bb}⁻¹ K_{q,bu'} (K_bb under
   the kernel that made the terms, K_bu' under the current one), b_d' = Pᵀ b_d and
   C_d' = Pᵀ C_d P; the terms are kept whitened by L = chol K (L⁻¹b_d, L⁻¹C_dL⁻ᵀ).
3. **Joint q(u) over all QM outputs in closed form**: the optimal q(u) of the collapsed bound
   with b = Σ_d σ_d⁻² A_d b_d and C = Σ_d σ_d⁻² A_d C_d A_d (:func:`~.lmc.combine_terms`):
   S = K Σ⁻¹ K, m = K Σ⁻¹ b with Σ = K + C (POAM Eqs. 7-8 with the channels' noises). Unlike
   the paper's factorised q(u), the joint q(u) keeps the posterior correlations between
   latents that heterotopic data create; it costs (QM)³ per update (M = 300, Q = 2: 600³).
4. **Hyper-parameters** (latent kernels, mixing weights a, noises σ_d²): Adam steps on the
   uncollapsed ELBO on mini-batches of all data with q(u) held fixed (POAM's M-step),
   −ELBO/N = −1/B Σ_b Σ_{d measured} E_q[log N(y_bd | f_d, σ_d²)] + KL(q(u) ‖ p(u))/N.

A non-Gaussian channel (``channel_likelihoods``: Bernoulli, Poisson; CMOGP Sec. 3.4) enters
step 3 through Gaussian sites of its new samples, iterated to the optimum of the batch's ELBO
given the carried terms (:mod:`.sites`), then frozen into the stored terms as the batch's data
terms (weighted by the sites' precisions, unit noise): the old data's sites are not revisited,
as POAM's terms are not. Step 4 takes their expected log-likelihoods by Gauss–Hermite
quadrature (:mod:`.likelihoods`).

No step reads old data except the M-step's mini-batches: an update costs
O(D (QM)³ + N_new D (QM)²) whatever the number of samples. With D = Q = 1 (a = 1) it is
POAM's update, M-step included. The stored terms stay valid while a and σ_d² are learned,
because these enter only when the terms are combined.
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.linalg import solve_lower
from poam_ros.models.lmc import (
    LatentCross,
    channel_marginals,
    channel_terms,
    combine_terms,
    expected_log_likelihood,
    kl_to_prior,
    whitened_posterior,
)
from poam_ros.models.multitask import MultiTaskSparseGP
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.posterior import (
    TERMS_DTYPE,
    WhitenedTerms,
    whiten_terms,
    whitened_optimal_posterior,
)
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sites import BatchSites, iterate_sites

_TERMS = ("data_vector", "data_matrix", "data_chol", "data_inducing")


class LatentElbo(TrainingObjective):
    """−ELBO / N of the LMC on a mini-batch of all data, q(u) = N(m, S) held fixed (POAM's
    M-step): differentiable in the latent kernels, the mixing weights and the noises."""

    uses_minibatches = True

    def __init__(self, model: MultiTaskSparseGP):
        self.model = model

    def loss(self) -> Tensor:
        model, z = self.model, self.model.inducing
        x, y = model.trainer.minibatch()
        kernel, posterior = model.kernel, model.posterior
        chols = model.latent_choleskys(z)
        k_uf = [kernel.latent_covariance(q, z, x) for q in range(kernel.num_latents)]
        mean_w, sqrt_w = whitened_posterior(chols, posterior.mean, posterior.sqrt)
        loglik = expected_log_likelihood(chols, k_uf, kernel.scales, kernel.mixing, model.noise,
                                         y, mean_w, sqrt_w, model.likelihoods)
        kl = kl_to_prior(chols, mean_w, sqrt_w, posterior.logdet)
        return -(loglik / x.shape[0] - kl / model.num_fitted)


class PoamMT(MultiTaskSparseGP):
    method = "poam-mt"

    def __init__(self, config=None, input_dim: int = 2, output_dim: int = 1):
        super().__init__(config, input_dim, output_dim)
        self.data_vector: Tensor | None = None  # L⁻¹ b_d, D × QM
        self.data_matrix: Tensor | None = None  # L⁻¹ C_d L⁻ᵀ, D × QM × QM
        self.data_chol: Tensor | None = None  # L = diag(L_q) of the terms' inducing inputs
        self.data_inducing: Tensor | None = None  # Z_b, the inputs the terms are expressed at

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        z = selection.inducing
        chol = self.k_uu_cholesky(z, dtype=TERMS_DTYPE)
        cross = LatentCross(self.kernel, z, x_new)
        sites = BatchSites(self.likelihoods, y_new)
        terms = whiten_terms(chol, *channel_terms(cross, sites.gaussian_targets()))
        vector, matrix = terms.vector, terms.matrix
        if self.data_vector is not None:
            carried_vector, carried_matrix = self._carried_terms(z, chol)
            vector, matrix = vector + carried_vector, matrix + carried_matrix

        def with_sites() -> tuple[Tensor, Tensor]:
            if not sites.any:
                return vector, matrix
            site = whiten_terms(chol, *channel_terms(cross, *sites.site_targets()))
            return vector + site.vector, matrix + site.matrix

        posterior = iterate_sites(sites, lambda: self._optimal_posterior(chol, *with_sites()),
                                  lambda q: self._marginals(z, x_new, q), self.config.site_steps,
                                  self.config.site_rate)
        self.inducing = self.data_inducing = z
        self.posterior = posterior
        self.data_chol = chol
        self.data_vector, self.data_matrix = with_sites()  # the batch's sites, now frozen

    def _marginals(self, z: Tensor, x: Tensor, posterior) -> tuple[Tensor, Tensor]:
        """q(f_d) at the batch's inputs x (N × D means and variances)."""
        kernel = self.kernel
        chols = self.latent_choleskys(z)
        k_uf = [kernel.latent_covariance(q, z, x) for q in range(kernel.num_latents)]
        mean_w, sqrt_w = whitened_posterior(chols, posterior.mean, posterior.sqrt)
        return channel_marginals(chols, k_uf, kernel.scales, self.mixing, mean_w, sqrt_w)

    def _carried_terms(self, z: Tensor, chol: Tensor) -> tuple[Tensor, Tensor]:
        """The stored terms carried to Z' = ``z`` (Pᵀ b_d, Pᵀ C_d P) and whitened by its
        L' = ``chol``: with W = L_b⁻¹ K_bu' L'⁻ᵀ (block diagonal), L'⁻¹Pᵀb_d = Wᵀ(L_b⁻¹b_d)
        and L'⁻¹PᵀC_dPL'⁻ᵀ = Wᵀ(L_b⁻¹C_dL_b⁻ᵀ)W. K_bu' carries the jitter of K_bb where Z_b
        and Z' share a point: nothing moved and the same kernel make W the identity."""
        cross = torch.block_diag(*[self.latent_inducing_cross(q, self.data_inducing, z)
                                   for q in range(self.kernel.num_latents)]).to(TERMS_DTYPE)
        w = solve_lower(chol, solve_lower(self.data_chol, cross).transpose(0, 1)).transpose(0, 1)
        vector = (w.transpose(0, 1) @ self.data_vector.unsqueeze(-1)).squeeze(-1)
        return vector, w.transpose(0, 1) @ self.data_matrix @ w

    def _optimal_posterior(self, chol: Tensor, vector: Tensor, matrix: Tensor):
        """The optimal joint q(u) from whitened per-channel terms, with the current a and σ_d²."""
        combined = WhitenedTerms(*combine_terms(vector, matrix, self.mixing.detach(),
                                                self.term_noise))
        one = torch.ones((), dtype=TERMS_DTYPE, device=chol.device)
        return whitened_optimal_posterior(chol, combined, one,
                                          self.config.max_jitter_tries).to(self.dtype)

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        return LatentElbo(self)

    def _method_state(self) -> dict[str, Tensor]:
        if self.data_vector is None:
            return {}
        return {name: getattr(self, name) for name in _TERMS}

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        if not state:  # no terms yet: the state before the first update
            self.data_vector = self.data_matrix = self.data_chol = self.data_inducing = None
            return
        self.data_vector, self.data_matrix, self.data_chol = (
            state[name].to(TERMS_DTYPE) for name in _TERMS[:3])
        self.data_inducing = state["data_inducing"].to(self.dtype)
