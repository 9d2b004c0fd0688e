"""CMOGP: the continual multi-task GP of Moreno-Muñoz, Artés-Rodríguez, Álvarez (2019), Alg. 2.

q(u) = Π_q q(u_q), each N(m_q, S_q) over the Q latents' outputs at the shared inducing inputs Z
(factorised as published). Per batch (heterotopic: a channel not measured has no term):

1. **Inducing inputs**: the shared pivoted-Cholesky selection on [Z_old; X_new] (the paper
   keeps Z fixed or optimises it; here it follows the data at bounded M, as POAM).
2. **Continual prior** (Sec. 2.2): each latent's old posterior q_old(a_q) enters as Bui et al.'s
   factor q_old(a)/p(a | θ_old), whose predictive at the new inducing inputs is the continual
   prior q̃(u_q) = ∫ p(u_q | a_q) q_old(a_q) da_q (:func:`~.lmc.continual_prior`).
3. **Variational E-step in closed form**: the continual bound (Eq. 10 per latent, Eqs. 22/24)

       F = Σ_d Σ_{n: y_nd measured} E_q[log N(y_nd | f_d, σ_d²)] − Σ_q KL(q(u_q) ‖ p(u_q))
           + Σ_q [KL(q(a_q) ‖ p(a_q)) − KL(q(a_q) ‖ q_old(a_q))]

   is maximised over the factors by coordinate ascent: given the others, q(u_q)'s optimum is
   Bui et al.'s closed form (:func:`~.posterior.streaming_posterior`) on the batch's residual
   targets y_d − Σ_{p≠q} a_{p,d} μ_p with weights a_{q,d}²/σ_d², from the batch's per-channel,
   per-latent terms (:func:`~.lmc.channel_terms`). The paper follows the gradient of F
   instead; the coordinate steps reach the same optimum without a learning rate. With Q = 1
   one step is exact; ``cmogp.sweeps`` sweeps otherwise, started from q̃'s means.
4. **M-step**: Adam (or L-BFGS) on −F/N_new over the latent kernels, the mixing weights and the
   noises, q fixed; the new batch only (the old data enter through q_old). Then step 3 again
   at the trained hyper-parameters; its q is the q_old of the next batch.

Where this differs from the authors' code: a and σ_d are learned (their scripts hold a at its
true value and σ_d fixed), and Z is selected, not optimised. Cost per update: Q M³ per sweep
and D (QM)² per sample of the batch; memory D (QM)² for the batch terms.
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.lmc import (
    LatentCross,
    channel_terms,
    continual_prior,
    expected_log_likelihood,
    kl_to_prior,
    old_site_term,
    whitened_posterior,
)
from poam_ros.models.multitask import MultiTaskSparseGP
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.posterior import StreamingPrior, VariationalPosterior, streaming_posterior
from poam_ros.models.selection import InducingUpdate

_PRIOR_KEYS = ("inducing", "mean", "cov_chol", "prior_chol")


class ContinualBound(TrainingObjective):
    """−F / N_new of the continual bound above on the whole batch (x, y: N × D with NaN), q(u)
    fixed, ``priors`` the latents' q_old (None at the first batch: the SVGP bound)."""

    def __init__(self, model: MultiTaskSparseGP, priors: list[StreamingPrior] | None, x: Tensor,
                 y: Tensor):
        self.model, self.priors, self.x, self.y = model, priors, x, y

    def loss(self) -> Tensor:
        return -self.bound() / self.x.shape[0]

    def bound(self) -> Tensor:
        model, z = self.model, self.model.inducing
        kernel, posterior = model.kernel, model.posterior
        chols = model.latent_choleskys(z)
        k_uf = [kernel.latent_covariance(q, z, self.x) for q in range(kernel.num_latents)]
        mean_w, sqrt_w = whitened_posterior(chols, posterior.mean, posterior.sqrt)
        value = (expected_log_likelihood(chols, k_uf, kernel.scales, kernel.mixing, model.noise,
                                         self.y, mean_w, sqrt_w)
                 - kl_to_prior(chols, mean_w, sqrt_w, posterior.logdet))
        for q, prior in enumerate(self.priors or ()):
            k_ab = model.latent_inducing_cross(q, prior.inducing, z)
            k_aa = model.latent_inducing_cross(q, prior.inducing, prior.inducing)
            value = value + old_site_term(prior, k_aa, k_ab, chols[q], mean_w[q], sqrt_w[q])
        return value


class CMOGP(MultiTaskSparseGP):
    method = "cmogp"
    trains_on_whole_batch = True

    def __init__(self, config=None, input_dim: int = 2, output_dim: int = 1):
        super().__init__(config, input_dim, output_dim)
        self.priors: list[StreamingPrior] | None = None  # q_old per latent for the next batch
        self.streamed_from: list[StreamingPrior] | None = None  # those of the latest E-step

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        posterior, priors = self._mean_field(selection.inducing, x_new, y_new, self.priors)
        self.streamed_from, self.priors = self.priors, priors
        self.inducing, self.posterior = selection.inducing, posterior

    def _mean_field(self, z: Tensor, x: Tensor, y: Tensor, priors: list[StreamingPrior] | None
                    ) -> tuple[VariationalPosterior, list[StreamingPrior]]:
        """Step 3: the factorised q(u) at inducing inputs z from the batch and ``priors``, and
        the priors it makes for the next batch."""
        config, kernel = self.config, self.kernel
        num_latents, size = kernel.num_latents, z.shape[0]
        chols = self.latent_choleskys(z)
        vector, matrix = (term.to(self.dtype) for term in
                          channel_terms(LatentCross(kernel, z, x), y))
        vector = vector.reshape(self.output_dim, num_latents, size)
        matrix = matrix.reshape(self.output_dim, num_latents, size, num_latents, size)
        mixing, noise = self.mixing.detach(), self.noise.detach()
        one = torch.ones((), dtype=self.dtype, device=self.device)
        k_ab = [None] * num_latents if priors is None else [
            self.latent_inducing_cross(q, prior.inducing, z) for q, prior in enumerate(priors)]
        means = ([torch.zeros(size, dtype=self.dtype, device=self.device)] * num_latents
                 if priors is None else
                 [continual_prior(prior, k)[0] for prior, k in zip(priors, k_ab)])
        alphas = [torch.cholesky_solve(m.unsqueeze(-1), chol).squeeze(-1)
                  for m, chol in zip(means, chols)]  # K_q⁻¹ m_q
        factors = [None] * num_latents
        for _ in range(1 if num_latents == 1 else config.cmogp.sweeps):
            for q in range(num_latents):
                residual = vector[:, q] - sum(
                    mixing[p].unsqueeze(1) * (matrix[:, q, :, p] @ alphas[p])
                    for p in range(num_latents) if p != q)
                weights = mixing[q] / noise
                terms = ((weights.unsqueeze(1) * residual).sum(0),
                         ((weights * mixing[q]).reshape(-1, 1, 1) * matrix[:, q, :, q]).sum(0))
                factors[q] = streaming_posterior(chols[q], terms, one,
                                                 None if priors is None else priors[q], k_ab[q],
                                                 config.max_jitter_tries)
                alphas[q] = torch.cholesky_solve(factors[q].mean.unsqueeze(-1),
                                                 chols[q]).squeeze(-1)
        posterior = VariationalPosterior(torch.cat([f.mean for f in factors]),
                                         torch.block_diag(*[f.sqrt for f in factors]),
                                         sum(f.logdet for f in factors))
        following = [StreamingPrior.from_posterior(z, f, chol, config.jitter,
                                                   config.max_jitter_tries)
                     for f, chol in zip(factors, chols)]
        return posterior, following

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        """The continual bound on the E-step's batch (the new samples, and the earlier ones of a
        channel that has just entered the model)."""
        x, y = self._estep_batch if self._estep_batch is not None else (x_new, y_new)
        return ContinualBound(self, self.streamed_from, x, y)

    def _after_training(self, x_new: Tensor, y_new: Tensor) -> None:
        """Step 3 again at the trained hyper-parameters."""
        x, y = self._estep_batch if self._estep_batch is not None else (x_new, y_new)
        self.posterior, self.priors = self._mean_field(self.inducing, x, y, self.streamed_from)

    def _method_state(self) -> dict[str, Tensor]:
        return {f"prior_{q}_{key}": getattr(prior, key)
                for q, prior in enumerate(self.priors or ()) for key in _PRIOR_KEYS}

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        if not state:
            self.priors = None
            return
        self.priors = [StreamingPrior(*(state[f"prior_{q}_{key}"].to(self.dtype)
                                        for key in _PRIOR_KEYS))
                       for q in range(self.kernel.num_latents)]
