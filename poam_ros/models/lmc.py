"""The linear model of coregionalisation (LMC) with inducing inputs shared by its latents.

Moreno-Muñoz, Artés-Rodríguez, Álvarez, "Continual Multi-task Gaussian Processes" (2019),
Eq. 13: D channels f_d(x) = Σ_q a_{q,d} u_q(x) of Q independent latent GPs u_q ~ GP(0, s_q k_q)
with unit-diagonal kernels k_q, so that cov(f_d(x), f_d'(x')) = Σ_q a_{q,d} a_{q,d'} s_q k_q(x, x')
(B_q = a_q a_qᵀ of rank one). Gaussian likelihood per channel, y_d = f_d + ε_d, ε_d ~ N(0, σ_d²)
(Eq. 12), or another of :mod:`.likelihoods` (Sec. 3.4). The Q latents share the M inducing
inputs Z; u = [u_1(Z); …; u_Q(Z)] (QM, latent-major) has the block-diagonal prior covariance
K = diag(K_1, …, K_Q) with K_q = s_q k_q(Z, Z), so that L = chol K = diag(L_q) costs Q M³ and
a joint q(u) = N(m, S) over all QM outputs (QM)³.

A sample of channel d at x sees u through φ_d(x) = [a_{1,d} k_1(x, Z) … a_{Q,d} k_Q(x, Z)] K⁻¹.
The data terms of a batch are therefore kept per channel and per latent pair,

    b_d = K_uf y_d  (QM),    C_d = K_uf K_fu  (QM × QM)   over the samples of channel d,

with K_uf = [K_1(Z, X); …; K_Q(Z, X)] stacked: a and σ_d enter only when they are combined,
b = Σ_d σ_d⁻² A_d b_d and C = Σ_d σ_d⁻² A_d C_d A_d with A_d = diag(a_d ⊗ 1_M), so the mixing
weights and noises can be learned while the terms are stored (:func:`combine_terms`). A_d is
constant on each diagonal block and commutes with L⁻¹: whitened terms combine the same way.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import torch
from gpytorch.kernels import ScaleKernel
from torch import Tensor

from poam_ros.models.batch_terms import CHUNK_ELEMENTS, CrossCovariance
from poam_ros.models.likelihoods import Gaussian, Likelihood
from poam_ros.models.linalg import solve_lower
from poam_ros.models.posterior import StreamingPrior


class LatentSum:
    """Σ_q (s_q / Σ s) k_q: the latents' summed kernel over its amplitude (unit diagonal), with
    the kernels' selection interface (``forward``, ``features``, ``columns``), so that the shared
    pivoted-Cholesky selection picks inducing inputs that serve all latents."""

    def __init__(self, lmc: "LMCKernel"):
        self.lmc = lmc

    def _shares(self) -> Tensor:
        scales = self.lmc.scales
        return scales / scales.sum()

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        shares = self._shares()
        return sum(share * latent.base_kernel.forward(x1, x2)
                   for share, latent in zip(shares, self.lmc.latents))

    def features(self, x: Tensor) -> Tensor:
        """The latents' features side by side (N × Σ widths)."""
        return torch.cat([latent.base_kernel.features(x) for latent in self.lmc.latents], 1)

    def columns(self, x1: Tensor, f1: Tensor, x2: Tensor, f2: Tensor) -> Tensor:
        shares, total, start = self._shares(), 0.0, 0
        for share, latent in zip(shares, self.lmc.latents):
            width = latent.base_kernel.features(x2[:0]).shape[1]
            part = slice(start, start + width)
            total = total + share * latent.base_kernel.columns(x1, f1[:, part], x2, f2[:, part])
            start += width
        return total

    def lengthscale_map(self, x: Tensor) -> Tensor:
        """The latents' lengthscales at x averaged by their shares of the amplitude (N,)."""
        return sum(share * latent.base_kernel.lengthscale_map(x)
                   for share, latent in zip(self._shares(), self.lmc.latents))


class LMCKernel(torch.nn.Module):
    """The Q latent kernels (each a ScaleKernel of amplitude s_q) and the mixing weights a (Q × D)
    with rows of unit length, a_q = r_q / |r_q| of the learned ``raw_mixing`` r.

    The LMC is the same model under a_q → c a_q, s_q → s_q / c². Learned freely, a's scale is a
    second route to every channel's variance Σ_q a_{q,d}² s_q, quadratic and without s_q's
    softplus, on which Adam (a step of about its rate per parameter, whatever the gradient)
    moves the variances several times faster than a single-channel model moves its amplitude.
    Unit rows remove that direction: s_q alone is latent q's amplitude, learned as POAM learns
    its own, and a_q shares it out among the channels (with D = 1, a = ±1: POAM's M-step).

    ``base_kernel`` and ``outputscale`` present the latents' sum Σ_q s_q k_q to the shared
    inducing-input selection; the models' LMC maths read :meth:`latent_covariance`."""

    def __init__(self, latents: list[ScaleKernel], mixing: Tensor):
        super().__init__()
        self.latents = torch.nn.ModuleList(latents)
        self.raw_mixing = torch.nn.Parameter(mixing)
        self.base_kernel = LatentSum(self)

    @property
    def mixing(self) -> Tensor:
        """a (Q × D): ``raw_mixing`` with each row scaled to unit length."""
        return self.raw_mixing / self.raw_mixing.norm(dim=1, keepdim=True)

    @property
    def num_latents(self) -> int:
        return len(self.latents)

    @property
    def scales(self) -> Tensor:
        """s_q (Q,)."""
        return torch.stack([latent.outputscale.reshape(()) for latent in self.latents])

    @property
    def outputscale(self) -> Tensor:
        return self.scales.sum()

    def latent_covariance(self, q: int, x1: Tensor, x2: Tensor) -> Tensor:
        """s_q k_q(x1, x2)."""
        latent = self.latents[q]
        return latent.outputscale * latent.base_kernel.forward(x1, x2)

    def stacked_cross(self, z: Tensor, x: Tensor) -> Tensor:
        """K_uf = [K_1(Z, X); …; K_Q(Z, X)] (QM × N)."""
        return torch.cat([self.latent_covariance(q, z, x) for q in range(self.num_latents)])


class LatentCross(CrossCovariance):
    """The stacked K_uf of a batch (QM × N, float64) in column blocks of bounded memory."""

    def __init__(self, lmc: LMCKernel, inducing: Tensor, data: Tensor):
        self.lmc, self.inducing, self.data = lmc, inducing, data
        self.num_inducing = lmc.num_latents * inducing.shape[0]
        self.num_data, self.device = data.shape[0], data.device

    def blocks(self) -> Iterator[tuple[slice, Tensor]]:
        step = max(1, CHUNK_ELEMENTS // self.num_inducing)
        for start in range(0, self.num_data, step):
            rows = slice(start, min(start + step, self.num_data))
            yield rows, self.lmc.stacked_cross(self.inducing, self.data[rows]).to(torch.float64)


def channel_terms(cross: CrossCovariance, y: Tensor,
                  weights: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Per-channel data terms b_d = K_uf W_d y_d (D × QM) and C_d = K_uf W_d K_fu (D × QM × QM)
    over the samples where channel d is measured (y: N × D, NaN where not), in float64. W_d is
    the identity, or diag(w_d) of ``weights`` (N × D): the precisions of a non-Gaussian
    channel's sites, whose y are then the sites' targets."""
    y = y.to(torch.float64)
    observed = torch.isfinite(y)
    zero = torch.zeros((), dtype=y.dtype, device=y.device)
    filled = torch.where(observed, y, zero)
    scale = observed.to(y.dtype) if weights is None else torch.where(
        observed, weights.to(y.dtype), zero)
    filled = filled * scale
    channels, size = y.shape[1], cross.num_inducing
    vector = torch.zeros(channels, size, dtype=torch.float64, device=cross.device)
    matrix = torch.zeros(channels, size, size, dtype=torch.float64, device=cross.device)
    for rows, block in cross.blocks():
        vector += (block @ filled[rows]).transpose(0, 1)
        for d in range(channels):
            matrix[d].addmm_(block * scale[rows, d].to(block.dtype), block.transpose(0, 1))
    return vector, matrix


def block_weights(mixing: Tensor, num_inducing: int) -> Tensor:
    """A_d's diagonals a_d ⊗ 1_M (D × QM)."""
    return mixing.transpose(0, 1).repeat_interleave(num_inducing, dim=1)


def combine_terms(vector: Tensor, matrix: Tensor, mixing: Tensor,
                  noise: Tensor) -> tuple[Tensor, Tensor]:
    """b = Σ_d σ_d⁻² A_d b_d (QM) and C = Σ_d σ_d⁻² A_d C_d A_d (QM × QM) from per-channel terms
    (D × QM, D × QM × QM; whitened or not), mixing (Q × D) and noise variances (D,)."""
    weights = block_weights(mixing.to(vector.dtype), vector.shape[1] // mixing.shape[0])
    per_noise = weights / noise.to(vector.dtype).unsqueeze(1)
    combined = torch.einsum("di,dij,dj->ij", per_noise, matrix, weights)
    return (per_noise * vector).sum(0), 0.5 * (combined + combined.transpose(0, 1))


def block_cholesky(chols: list[Tensor]) -> Tensor:
    """L = diag(L_1, …, L_Q) (QM × QM)."""
    return torch.block_diag(*chols)


def whitened_posterior(chols: list[Tensor], mean: Tensor,
                       sqrt: Tensor) -> tuple[Tensor, Tensor]:
    """q(u) = N(m, F Fᵀ) in the whitening of L = diag(L_q): μ_w = L⁻¹m as Q × M and R_w = L⁻¹F
    as Q × M × QM (the rows of each latent). Differentiable in the factors."""
    num_latents = len(chols)
    size = mean.shape[0] // num_latents
    mean_w = torch.stack([solve_lower(chol, part.unsqueeze(-1)).squeeze(-1)
                          for chol, part in zip(chols, mean.reshape(num_latents, size))])
    sqrt_w = torch.stack([solve_lower(chol, part)
                          for chol, part in zip(chols, sqrt.reshape(num_latents, size, -1))])
    return mean_w, sqrt_w


def channel_marginals(chols: list[Tensor], k_uf: list[Tensor], scales: Tensor, mixing: Tensor,
                      mean_w: Tensor, sqrt_w: Tensor) -> tuple[Tensor, Tensor]:
    """q(f_d(x_n)) = N(μ_nd, v_nd) (each N × D) of q(u) = N(m, F Fᵀ) given whitened
    (:func:`whitened_posterior`), so that a q(u) held fixed in the unwhitened parameterisation
    while the kernels move (POAM's M-step) is re-whitened by the caller. With
    V_q = L_q⁻¹ K_q(Z, X):

        μ_d = Σ_q a_{q,d} V_qᵀ μ_{w,q},
        v_d = Σ_q a_{q,d}² (s_q − |V_q|²) + |Σ_q a_{q,d} R_{w,q}ᵀ V_q|²

    ``chols``: L_q; ``k_uf``: K_q(Z, X) (M × N each); ``scales``: s_q (Q,); ``mixing``: a
    (Q × D). Differentiable."""
    v = torch.stack([solve_lower(chol, block) for chol, block in zip(chols, k_uf)])  # Q×M×N
    mu = torch.einsum("qmn,qm->nq", v, mean_w) @ mixing  # N × D
    prior_part = (scales.unsqueeze(0) - v.square().sum(1).transpose(0, 1)) @ mixing.square()
    spread = torch.einsum("qmk,qmn->qkn", sqrt_w, v)  # R_{w,q}ᵀ V_q, Q × QM × N
    var = prior_part + torch.einsum("qd,qkn->dkn", mixing, spread).square().sum(1).transpose(0, 1)
    return mu, var


def expected_log_likelihood(chols: list[Tensor], k_uf: list[Tensor], scales: Tensor,
                            mixing: Tensor, noise: Tensor, y: Tensor, mean_w: Tensor,
                            sqrt_w: Tensor, likelihoods: Sequence[Likelihood] | None = None
                            ) -> Tensor:
    """Σ over the measured (sample, channel) pairs of E_q[log p_d(y_nd | f_d(x_n))] (Eq. 12;
    Eq. 24 with heterogeneous channels) under :func:`channel_marginals` (arguments as there).
    ``noise``: σ_d² (D,); ``y``: N × D with NaN where not measured; ``likelihoods``: p_d per
    channel (:mod:`.likelihoods`), all Gaussian when None: in closed form, the others by
    Gauss–Hermite quadrature. Differentiable."""
    mu, var = channel_marginals(chols, k_uf, scales, mixing, mean_w, sqrt_w)
    observed = torch.isfinite(y)
    zero = torch.zeros((), dtype=y.dtype, device=y.device)
    filled = torch.where(observed, y, zero)
    loglik = Gaussian.closed_form(filled, mu, var, noise)
    for d, likelihood in enumerate(likelihoods or ()):
        if not likelihood.gaussian:
            column = likelihood.expectations(filled[:, d], mu[:, d], var[:, d], noise[d])[0]
            loglik = loglik.index_copy(1, torch.tensor([d], device=y.device),
                                       column.unsqueeze(1))
    return torch.where(observed, loglik, zero).sum()


def kl_to_prior(chols: list[Tensor], mean_w: Tensor, sqrt_w: Tensor, logdet: Tensor) -> Tensor:
    """KL(N(m, S) ‖ N(0, K)) = ½ [|L⁻¹F|²_F + |L⁻¹m|² − QM + log|K| − log|S|] (whitened q(u))."""
    log_k = 2.0 * sum(chol.diagonal().log().sum() for chol in chols)
    return 0.5 * (sqrt_w.square().sum() + mean_w.square().sum() - mean_w.numel() + log_k - logdet)


def continual_prior(prior: StreamingPrior, k_ab: Tensor) -> tuple[Tensor, Tensor]:
    """q̃(b) = ∫ p(b | a) q_old(a) da, the old posterior's predictive at new inducing inputs b
    (Sec. 2.2, the continual prior), for one latent: mean K_ba K'_aa⁻¹ m_a and covariance
    K_bb − K_ba K'_aa⁻¹ K_ab + K_ba K'_aa⁻¹ S_a K'_aa⁻¹ K_ab, returned as the mean and the
    correction K_ba K'_aa⁻¹ (S_a − K'_aa) K'_aa⁻¹ K_ab to K_bb (M,  M × M). With b = a (and the
    jitter of K'_aa in K_ab) it is q_old itself."""
    g = solve_lower(prior.prior_chol, k_ab)  # L'⁻¹ K_ab
    projected = torch.cholesky_solve(k_ab, prior.prior_chol)  # K'_aa⁻¹ K_ab
    spread = prior.cov_chol.transpose(0, 1) @ projected
    correction = spread.transpose(0, 1) @ spread - g.transpose(0, 1) @ g
    return projected.transpose(0, 1) @ prior.mean, 0.5 * (correction + correction.transpose(0, 1))


def old_site_term(prior: StreamingPrior, k_aa: Tensor, k_ab: Tensor, chol: Tensor,
                  mean_w: Tensor, sqrt_w: Tensor) -> Tensor:
    """E_q(a)[log q_old(a) − log p(a | θ_old)] for one latent, = KL(q(a) ‖ p(a | θ_old)) −
    KL(q(a) ‖ q_old(a)) (the entropies cancel): the continual terms of the bound (CMOGP
    Eq. 10) with ``prior`` = (q_old, p(· | θ_old)) at inputs a. q(a) is the new q(b)'s
    predictive at a under the current kernel; with b's whitened mean μ_w = L⁻¹m (M,) and rows
    R_w = L⁻¹F (M × ·) and G = L⁻¹ K_ba: μ = Gᵀ μ_w, Σ = K_aa − GᵀG + Gᵀ R_w R_wᵀ G. With
    a = b (the paper's continual prior q̃ at the new inducing inputs) q(a) is q(b) itself and
    the term does not depend on the current kernel; with a = Z_old it is Bui et al.'s.
    ``k_aa`` carries the jitter of K_bb as a white-noise term (as :func:`~.elbo.online_elbo`).
    Differentiable."""
    g = solve_lower(chol, k_ab.transpose(0, 1))
    mu = g.transpose(0, 1) @ mean_w
    spread = sqrt_w.transpose(0, 1) @ g
    cov = k_aa - g.transpose(0, 1) @ g + spread.transpose(0, 1) @ spread

    def expected_log_density(centre: Tensor, lower: Tensor) -> Tensor:
        half = solve_lower(lower, cov)
        trace = solve_lower(lower, half.transpose(0, 1)).diagonal().sum()
        gap = solve_lower(lower, (mu - centre).unsqueeze(-1)).square().sum()
        return -0.5 * (2.0 * lower.diagonal().log().sum() + trace + gap)

    return (expected_log_density(prior.mean, prior.cov_chol)
            - expected_log_density(torch.zeros_like(prior.mean), prior.prior_chol))


def predictive_covariance(k_fu: Tensor, alpha: Tensor, q_matrix: Tensor, scales: Tensor,
                          mixing: Tensor) -> tuple[Tensor, Tensor]:
    """Means (N × D) and cross-channel covariances (N × D × D) of f at N inputs.

    ``k_fu``: [K_1(x, Z) … K_Q(x, Z)] (N × QM); ``alpha`` = K⁻¹m and ``q_matrix`` =
    K⁻¹ − K⁻¹SK⁻¹ (:class:`~.posterior.PredictionCache`). With G_{qq'}(x) = k_q(x)ᵀ Q_{qq'} k_q'(x):
    cov(f_d, f_d') = Σ_q a_{q,d} a_{q,d'} s_q − Σ_{q,q'} a_{q,d} G_{qq'} a_{q',d'}.
    """
    num_latents = mixing.shape[0]
    per_latent = k_fu.reshape(k_fu.shape[0], num_latents, -1)
    contributions = (per_latent * alpha.reshape(num_latents, -1)).sum(-1)  # N × Q
    rows = q_matrix.reshape(num_latents, -1, q_matrix.shape[1])  # Q_{q·}, Q × M × QM
    gram = torch.stack([((per_latent[:, q] @ rows[q]).reshape_as(per_latent) * per_latent).sum(-1)
                        for q in range(num_latents)], 1)  # G, N × Q × Q
    prior = mixing.transpose(0, 1) @ (scales.unsqueeze(1) * mixing)
    cov = prior - torch.einsum("qd,nqp,pe->nde", mixing, gram, mixing)
    return contributions @ mixing, 0.5 * (cov + cov.transpose(1, 2))
