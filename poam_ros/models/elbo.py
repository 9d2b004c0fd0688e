"""Training objectives: the SVGP ELBO (fixed q(u), hand-derived gradient; or whitened q(u), by
autograd) and Bui et al.'s collapsed online ELBO.

:class:`NegativeElbo`, the uncollapsed SVGP ELBO with q(u) held fixed (POAM's M-step):

With K = K_uu (M × M), K_uf (M × B) for a mini-batch of B of the N samples, fixed q(u) = N(m, S)
in the unwhitened parameterisation, prior variance a and noise variance σ²:

    ELBO / N = 1/B Σ_b E_q[log N(y_b | f_b, σ²)] − KL(q(u) ‖ N(0, K)) / N
    E_q[log N(y_b | f_b, σ²)] = −½ log 2πσ² − ((y_b − μ_b)² + v_b) / (2σ²)
    μ = K_fu K⁻¹ m,   v_b = a − k_bᵀ K⁻¹ k_b + k_bᵀ K⁻¹ S K⁻¹ k_b
    KL = ½ [tr(K⁻¹ S) + mᵀ K⁻¹ m − M + log|K| − log|S|]

Autograd through a Cholesky factor and triangular solves costs several M³ products in the
backward pass on top of those of the forward pass. Differentiating by hand, with K⁻¹, α = K⁻¹m,
V = K⁻¹K_uf, W = K⁻¹SK⁻¹ and Γ = W K_uf, r_b = (y_b − μ_b)/(σ² B):

    ∂ℓ/∂K_uf = α rᵀ + (V − Γ) / (σ² B)
    ∂ℓ/∂K    = −(V r) αᵀ − (V Vᵀ − V Γᵀ − Γ Vᵀ) / (2σ² B) − (K⁻¹ − W − α αᵀ) / (2N)
    ∂ℓ/∂a    = −1 / (2σ²),    ∂ℓ/∂σ² = 1/B Σ_b [−1/(2σ²) + ((y_b − μ_b)² + v_b) / (2σ⁴)]

so that one step costs three M³ products (Cholesky, inverse, W) and three M²B products. The
jitter added before the Cholesky is treated as a constant.

:func:`whitened_negative_elbo` is the same bound with q(u) itself trained (SVGP, POAM-VAR-OPT);
:func:`online_elbo` is Bui et al.'s streaming bound (SSGP, SSGP++, POAM-ONLINE-ELBO). Both are
differentiated by autograd: they also carry gradients for the inducing inputs or q(u).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from poam_ros.models.linalg import robust_cholesky


class NegativeElbo(torch.autograd.Function):
    """−ELBO / N; differentiable in K_uu, K_uf, the prior variance and the noise variance."""

    @staticmethod
    def forward(ctx, k_uu: Tensor, k_uf: Tensor, prior_var: Tensor, noise: Tensor, y: Tensor,
                mean_u: Tensor, cov_u: Tensor, logdet_cov: Tensor, num_data: int | Tensor,
                jitter: float, max_tries: int) -> Tensor:
        chol = robust_cholesky(k_uu, jitter, max_tries, "K_uu during training")
        k_inv = torch.cholesky_inverse(chol)
        alpha = k_inv @ mean_u
        k_inv_s = k_inv @ cov_u
        w = k_inv_s @ k_inv
        v = k_inv @ k_uf
        gamma = w @ k_uf
        mu = k_uf.transpose(0, 1) @ alpha
        var = prior_var + (k_uf * (gamma - v)).sum(0)
        sq_err = (y - mu).square() + var
        expected_loglik = -0.5 * (math.log(2 * math.pi) + noise.log() + sq_err / noise)
        kl = 0.5 * (k_inv_s.diagonal().sum() + mean_u @ alpha - len(mean_u)
                    + 2.0 * chol.diagonal().log().sum() - logdet_cov)
        ctx.save_for_backward(k_inv, alpha, w, v, gamma, y - mu, sq_err, noise)
        ctx.num_data = num_data
        return -(expected_loglik.mean() - kl / num_data)

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        """The gradients above, scaled by −grad_out (the function is the negative ELBO).

        ∂ℓ/∂K is returned up to its antisymmetric part, which changes nothing downstream (K is a
        symmetric function of the parameters): the data terms −(V r)αᵀ − (T + Tᵀ)/(2σ²B) with
        T = V (½V − Γ)ᵀ become one product −V [(½V − Γ)/(σ²B) + r αᵀ]ᵀ, and the KL term
        is added in place, so the M × M gradient costs one product and two passes.
        """
        k_inv, alpha, w, v, gamma, residual, sq_err, noise = ctx.saved_tensors
        batch, n = residual.shape[0], ctx.num_data
        r = residual / (noise * batch)
        scale = -grad_out
        right = (0.5 * v - gamma) / (noise * batch) + torch.outer(alpha, r)  # M × B
        kl_part = w.sub_(k_inv).addr_(alpha, alpha)  # W − K⁻¹ + ααᵀ, in w's storage
        # The scale (and N, a tensor in a captured step) as addmm's alpha or beta would be read
        # back to the host.
        d_kuu = torch.addmm(kl_part.mul_(0.5 / n), v, right.transpose(0, 1),
                            alpha=-1.0).mul_(scale)
        d_kuf = scale * (torch.outer(alpha, r) + (v - gamma) / (noise * batch))
        d_prior = -0.5 * scale / noise
        d_noise = scale * (-0.5 / noise + sq_err / (2 * noise.square())).mean()
        return (d_kuu, d_kuf, d_prior, d_noise, None, None, None, None, None, None, None)


def whitened_negative_elbo(k_uu: Tensor, k_uf: Tensor, prior_var: Tensor, noise: Tensor, y: Tensor,
                           mean_w: Tensor, sqrt_w: Tensor, num_data: int, jitter: float,
                           max_tries: int) -> Tensor:
    """−ELBO / N of the SVGP (Hensman et al. 2013) in the whitened parameterisation, by autograd.

    u = L v, q(v) = N(μ, R Rᵀ) with R lower triangular, p(v) = N(0, I). With V = L⁻¹ K_uf:

        μ_b = V_bᵀ μ,   v_b = a − |V_b|² + |Rᵀ V_b|²
        KL = ½ [|R|²_F + |μ|² − M − log|R Rᵀ|]

    Differentiable in the kernel matrices (so in the hyper-parameters and inducing inputs), the
    noise variance and the variational parameters μ and R.
    """
    chol = robust_cholesky(k_uu, jitter, max_tries, "K_uu during training")
    v = torch.linalg.solve_triangular(chol, k_uf, upper=False)
    mu = v.transpose(0, 1) @ mean_w
    var = prior_var - v.square().sum(0) + (sqrt_w.transpose(0, 1) @ v).square().sum(0)
    expected_loglik = -0.5 * (math.log(2 * math.pi) + noise.log()
                              + ((y - mu).square() + var) / noise)
    kl = 0.5 * (sqrt_w.square().sum() + mean_w.square().sum() - len(mean_w)
                - 2.0 * sqrt_w.diagonal().abs().log().sum())
    return -(expected_loglik.mean() - kl / num_data)


def online_elbo(k_bb: Tensor, k_bf: Tensor, prior_var: Tensor, noise: Tensor, y: Tensor,
                prior=None, k_ab: Tensor | None = None, k_aa: Tensor | None = None,
                jitter: float = 0.0, max_tries: int = 0) -> Tensor:
    """Bui et al.'s (2017) collapsed online ELBO of a new batch (y: N), by autograd.

    With q(f) = p(f_≠b | b) q(b), the old posterior q_old(a) = N(m_a, S_a) and the old prior
    p(a | θ_old) = N(0, K'_aa) (``prior``, a :class:`~.posterior.StreamingPrior`):

        F = ∫ q(f) log [p(y | f) p(f | θ) q_old(a) / (q(f) p(a | θ_old))] df

    maximised over q(b) in closed form. Writing D_a⁻¹ = S_a⁻¹ − K'_aa⁻¹, L = chol K_bb,
    A = σ⁻² L⁻¹K_bf K_fbL⁻ᵀ + L⁻¹K_ba D_a⁻¹ K_abL⁻ᵀ, c = σ⁻² L⁻¹K_bf y + L⁻¹K_ba S_a⁻¹ m_a:

        F = −N/2 log 2πσ² − yᵀy / 2σ² + ½ cᵀ(I + A)⁻¹c − ½ log|I + A|
            − (N a − tr Q_ff) / 2σ²                         (Titsias' trace term, k_ff = a)
            − ½ tr[D_a⁻¹ (K_aa − Q_aa)]                     (a no longer exactly spanned by b)
            − ½ m_aᵀ S_a⁻¹ m_a − ½ log|S_a| + ½ log|K'_aa|   (constant in θ and b)

    with Q = K_·b K_bb⁻¹ K_b·. Without ``prior`` it is Titsias' collapsed bound of the batch.
    K_aa and K_ab are under the current hyper-parameters, with the jitter of K_bb as a
    white-noise term (so that with b = a and θ = θ_old the bound telescopes: F(y₂ | q_old from
    y₁) = F_Titsias(y₁ ∪ y₂) − F_Titsias(y₁)). Returns F (not divided by N). The site's parts
    of A and of the trace come from a square root of D_a⁻¹ (:class:`~.posterior.StreamingPrior`),
    never from the difference, so that I + A ≥ I survives the round-off of an ill-conditioned
    K_bb.
    """
    chol = robust_cholesky(k_bb, jitter, max_tries, "K_bb of the online ELBO")
    solve = lambda rhs: torch.linalg.solve_triangular(chol, rhs, upper=False)  # noqa: E731
    p = solve(k_bf)
    num = y.shape[0]
    a_mat = p @ p.transpose(0, 1) / noise
    c = p @ y / noise
    bound = (-0.5 * num * (math.log(2 * math.pi) + noise.log()) - 0.5 * y.square().sum() / noise
             - 0.5 * (num * prior_var - p.square().sum()) / noise)
    if prior is not None:
        w = solve(k_ab.transpose(0, 1))  # L⁻¹ K_ba, M × Ma
        rows, shift = prior.site_rows(w)  # D_a⁻¹ as a Gram: no S_a⁻¹ − K'_aa⁻¹ is formed
        a_mat = a_mat + rows @ rows.transpose(0, 1)
        c = c + shift
        m_s = torch.linalg.solve_triangular(prior.cov_chol, prior.mean.unsqueeze(-1),
                                            upper=False).squeeze(-1)
        trace = prior.site_trace(k_aa - w.transpose(0, 1) @ w)  # K_aa − Q_aa
        bound = (bound - 0.5 * trace - 0.5 * m_s.square().sum()
                 - prior.cov_chol.diagonal().log().sum() + prior.prior_chol.diagonal().log().sum())
    eye = torch.eye(a_mat.shape[0], dtype=a_mat.dtype, device=a_mat.device)
    b_chol = robust_cholesky(eye + 0.5 * (a_mat + a_mat.transpose(0, 1)), 0.0, max_tries,
                             "I + A of the online ELBO")
    quad = torch.linalg.solve_triangular(b_chol, c.unsqueeze(-1), upper=False).square().sum()
    return bound + 0.5 * quad - b_chol.diagonal().log().sum()

