"""CMOGP: the continual multi-task GP of Moreno-Muñoz, Artés-Rodríguez, Álvarez (2019), Alg. 1-2.

q(u) = Π_q q(u_q), each N(m_q, S_q) over the Q latents' outputs at the shared inducing inputs Z
(factorised as published). Per batch (heterotopic: a channel not measured has no term):

1. **Inducing inputs** Z_new: the shared pivoted-Cholesky selection on [Z_old; X_new] (the
   paper keeps Z fixed or optimises it; here it follows the data at bounded M, as POAM). Z_new
   may share points with Z_old, or none.
2. **Continual prior** (Sec. 2.2, Eq. 7): each latent's old posterior q(u_old) = N(m, S) is
   carried to the new inducing inputs by the old prior's conditional,

       q̃(u_new) = ∫ p(u_new | u_old, ψ_old) q(u_old) du_old
                = N(K_ba K_aa⁻¹ m, K_bb + K_ba K_aa⁻¹ (S − K_aa) K_aa⁻¹ K_ab)

   (a = Z_old, b = Z_new, every K under ψ_old: the kernel before this batch's M-step), kept
   beside p(u_new | ψ_old) = N(0, K_bb) (:meth:`CMOGP._continual_priors`). Both are fixed
   for the batch; nothing of Z_old is kept.
3. **Variational E-step**: the continual bound (Eq. 10 per latent; Eqs. 22 and 24 for the LMC)

       F = Σ_d Σ_{n: y_nd measured} E_q[log p_d(y_nd | f_d)] − Σ_q KL(q(u_q) ‖ p(u_q | ψ_new))
           + Σ_q [KL(q(u_q) ‖ p(u_q | ψ_old)) − KL(q(u_q) ‖ q̃(u_q))]

   with all three KL terms over u_new, is maximised over the factors. The last two are
   E_q[log q̃(u) − log p(u | ψ_old)]: q̃/p_old acts on u_new as a Gaussian site of precision
   Σ̃⁻¹ − K_bb⁻¹ and shift Σ̃⁻¹ μ̃, so that for Gaussian channels q(u_q)'s optimum given the
   other factors is the closed form of :func:`~.posterior.streaming_posterior` with that site
   on b itself (the residual targets y_d − Σ_{p≠q} a_{p,d} μ_p, weights a_{q,d}²/σ_d²). The
   paper follows the gradient of F; coordinate ascent reaches the same optimum without a
   learning rate. With Q = 1 one step is exact; otherwise at most ``cmogp.sweeps`` sweeps,
   started from q̃'s means, until no mean moves. At unchanged ψ, p_new and p_old cancel: q is
   q̃ conditioned on the batch.
   A non-Gaussian channel (Sec. 3.4: Bernoulli, Poisson; ``channel_likelihoods``) has its
   expected log-likelihood by Gauss–Hermite quadrature (:mod:`.likelihoods`) and enters the
   E-step through Gaussian sites iterated to the bound's stationary point (:mod:`.sites`).
4. **M-step**: Adam (or L-BFGS) on −F/N_new over the latent kernels ψ_new, the mixing weights
   and the noises, q fixed; the new batch only (the old data enter through q̃). The gradient
   is that of the whole F; its continual terms depend on ψ_old alone, fixed. Then step 3 again
   at the trained hyper-parameters; its q is the q(u_old) of the next batch.

``cmogp-bui`` (:class:`CMOGPBui`) is the form of Bui, Nguyen, Turner (2017) that the paper
departs from (Sec. 2.3): the old posterior enters as the factor q(u_old)/p(u_old | ψ_old) over
the old inducing outputs, projected through p(u_old | u_new, ψ_new), i.e. the continual terms
E_q[log q(a) − log p(a | ψ_old)] over a = u_old, whose gradient reaches ψ_new. The two are one
method whenever Z_new ⊇ Z_old, whatever ψ_new: q̃ is then q(u_old) times the old prior's
conditional of the other points, so that q̃/p(u_new | ψ_old) = q(u_old)/p(u_old | ψ_old);
otherwise they are different posteriors (tests/core/models/test_continual_prior.py).

Where this differs from the authors' code: a and σ_d are learned (their scripts hold a at its
true value and σ_d fixed), and Z is selected, not optimised. Cost per update: Q M³ per sweep
(times the site iterations with a non-Gaussian channel) and D (QM)² per sample of the batch;
memory D (QM)² for the batch terms.
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.linalg import cholesky_exact_first
from poam_ros.models.lmc import (
    LatentCross,
    channel_marginals,
    channel_terms,
    continual_prior,
    expected_log_likelihood,
    kl_to_prior,
    old_site_term,
    whitened_posterior,
)
from poam_ros.models.multitask import MultiTaskSparseGP
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.posterior import (
    StreamingPrior,
    VariationalPosterior,
    streaming_posterior,
    whiten_terms,
)
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sites import BatchSites, iterate_sites

#: relative change of the means below which the coordinate sweeps stop
SWEEP_TOLERANCE = 1e-12


class ContinualBound(TrainingObjective):
    """−F / N_new of the continual bound above on the whole batch (x, y: N × D with NaN), q(u)
    fixed. ``priors``: the latents' continual factors (None at the first batch: the SVGP
    bound), at b = Z_new for ``cmogp`` (the term is then E_q[log q̃(b) − log p(b | ψ_old)]),
    at a = Z_old for ``cmogp-bui``; :func:`~.lmc.old_site_term` evaluates both."""

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
                                         self.y, mean_w, sqrt_w, model.likelihoods)
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
        self.streamed_from: list[StreamingPrior] | None = None  # the latest E-step's priors
        self._sites: BatchSites | None = None  # that E-step's sites, the warm start of step 4

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        priors = self._continual_priors(selection.inducing)
        sites = BatchSites(self.likelihoods, y_new)
        posterior = self._e_step(selection.inducing, x_new, sites, priors)
        self.streamed_from, self._sites = priors, sites
        self.inducing, self.posterior = selection.inducing, posterior

    def _old_factors(self) -> list[StreamingPrior] | None:
        """q_old(u_q) = N(m_q, S_q) at Z_old with p(u_q | ψ_old) = N(0, K_q(Z_old)), per latent
        (None before the first batch). Read before the M-step, the kernel is ψ_old's."""
        if self.posterior is None:
            return None
        config, z = self.config, self.inducing
        size = z.shape[0]
        factors = []
        for q, chol in enumerate(self.latent_choleskys(z)):
            rows = slice(q * size, (q + 1) * size)
            factor = VariationalPosterior(self.posterior.mean[rows], self.posterior.sqrt[rows],
                                          self.posterior.logdet)
            factors.append(StreamingPrior.from_posterior(z, factor, chol, config.jitter,
                                                         config.max_jitter_tries))
        return factors

    def _continual_priors(self, z: Tensor) -> list[StreamingPrior] | None:
        """Step 2: q̃(u_q) = N(μ̃_q, Σ̃_q) at the new inducing inputs z under ψ_old (Eq. 7), with
        p(u_q | ψ_old) = N(0, K_q(z)) beside it (None at the first batch)."""
        olds = self._old_factors()
        if olds is None:
            return None
        config, priors = self.config, []
        for q, (old, chol) in enumerate(zip(olds, self.latent_choleskys(z))):
            mean, correction = continual_prior(old, self.latent_inducing_cross(q, old.inducing,
                                                                               z))
            cov = chol @ chol.transpose(0, 1) + correction
            priors.append(StreamingPrior(z, mean, cholesky_exact_first(
                0.5 * (cov + cov.transpose(0, 1)), config.jitter, config.max_jitter_tries,
                "continual prior q̃(u)"), chol))
        return priors

    def _e_step(self, z: Tensor, x: Tensor, sites: BatchSites,
                priors: list[StreamingPrior] | None) -> VariationalPosterior:
        """Step 3, with the sites of the non-Gaussian channels iterated (:mod:`.sites`)."""
        config, kernel = self.config, self.kernel
        cross = LatentCross(kernel, z, x)
        fixed = channel_terms(cross, sites.gaussian_targets())
        latest: list[VariationalPosterior] = []  # the previous iteration's q, a warm start

        def solve() -> VariationalPosterior:
            terms = fixed if not sites.any else tuple(
                a + b for a, b in zip(fixed, channel_terms(cross, *sites.site_targets())))
            latest[:] = [self._mean_field(z, terms, priors,
                                          latest[0].mean if latest else None)]
            return latest[0]

        def marginals(posterior: VariationalPosterior) -> tuple[Tensor, Tensor]:
            chols = self.latent_choleskys(z)
            k_uf = [kernel.latent_covariance(q, z, x) for q in range(kernel.num_latents)]
            mean_w, sqrt_w = whitened_posterior(chols, posterior.mean, posterior.sqrt)
            return channel_marginals(chols, k_uf, kernel.scales, self.mixing, mean_w, sqrt_w)

        return iterate_sites(sites, solve, marginals, config.site_steps, config.site_rate)

    def _mean_field(self, z: Tensor, terms: tuple[Tensor, Tensor],
                    priors: list[StreamingPrior] | None,
                    start: Tensor | None = None) -> VariationalPosterior:
        """The factorised q(u) at inducing inputs z from the batch's per-channel terms
        (:func:`~.lmc.channel_terms`, sites included) and ``priors``: at most ``cmogp.sweeps``
        sweeps from the means ``start`` (QM; default q̃'s), fewer once no mean moves by more
        than ``SWEEP_TOLERANCE`` of the largest."""
        config, kernel = self.config, self.kernel
        num_latents, size = kernel.num_latents, z.shape[0]
        chols = self.latent_choleskys(z)
        vector, matrix = (term.to(self.dtype) for term in terms)
        vector = vector.reshape(self.output_dim, num_latents, size)
        matrix = matrix.reshape(self.output_dim, num_latents, size, num_latents, size)
        mixing, noise = self.mixing.detach(), self.term_noise
        one = torch.ones((), dtype=self.dtype, device=self.device)
        k_ab = [None] * num_latents if priors is None else [
            self.latent_inducing_cross(q, prior.inducing, z) for q, prior in enumerate(priors)]
        if start is not None:
            means = list(start.reshape(num_latents, size))
        elif priors is None:
            means = [torch.zeros(size, dtype=self.dtype, device=self.device)] * num_latents
        else:
            means = [continual_prior(prior, k)[0] for prior, k in zip(priors, k_ab)]
        alphas = [torch.cholesky_solve(m.unsqueeze(-1), chol).squeeze(-1)
                  for m, chol in zip(means, chols)]  # K_q⁻¹ m_q
        factors = [None] * num_latents
        for _ in range(1 if num_latents == 1 else config.cmogp.sweeps):
            previous = torch.cat(means)
            for q in range(num_latents):
                residual = vector[:, q] - sum(
                    mixing[p].unsqueeze(1) * (matrix[:, q, :, p] @ alphas[p])
                    for p in range(num_latents) if p != q)
                weights = mixing[q] / noise
                terms = ((weights.unsqueeze(1) * residual).sum(0),
                         ((weights * mixing[q]).reshape(-1, 1, 1) * matrix[:, q, :, q]).sum(0))
                factors[q] = streaming_posterior(chols[q], whiten_terms(chols[q], *terms), one,
                                                 None if priors is None else priors[q], k_ab[q],
                                                 config.max_jitter_tries)
                alphas[q] = torch.cholesky_solve(factors[q].mean.unsqueeze(-1),
                                                 chols[q]).squeeze(-1)
                means[q] = factors[q].mean
            moved = (torch.cat(means) - previous).abs().max()
            if moved <= SWEEP_TOLERANCE * previous.abs().max().clamp_min(1.0):
                break
        return VariationalPosterior(torch.cat([f.mean for f in factors]),
                                    torch.block_diag(*[f.sqrt for f in factors]),
                                    sum(f.logdet for f in factors))

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        """The continual bound on the E-step's batch (the new samples, and the earlier ones of a
        channel that has just entered the model)."""
        x, y = self._estep_batch if self._estep_batch is not None else (x_new, y_new)
        return ContinualBound(self, self.streamed_from, x, y)

    def _after_training(self, x_new: Tensor, y_new: Tensor) -> None:
        """Step 3 again at the trained hyper-parameters, the priors and sites as they were."""
        x, y = self._estep_batch if self._estep_batch is not None else (x_new, y_new)
        sites = self._sites if self._sites is not None else BatchSites(self.likelihoods, y)
        self.posterior = self._e_step(self.inducing, x, sites, self.streamed_from)


class CMOGPBui(CMOGP):
    """CMOGP with Bui et al.'s streaming factor over the old inducing outputs instead of the
    paper's continual prior at the new ones (see the module docstring)."""

    method = "cmogp-bui"

    def _continual_priors(self, z: Tensor) -> list[StreamingPrior] | None:
        """q_old(a_q) / p(a_q | ψ_old) at the old inducing inputs a, as they are."""
        return self._old_factors()
