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
backward pass on top of those of the forward pass. Differentiating by hand, with K = L Lᵀ,
α = K⁻¹m, V = K⁻¹K_uf, W = K⁻¹SK⁻¹ and Γ = W K_uf, r_b = (y_b − μ_b)/(σ² B):

    ∂ℓ/∂K_uf = α rᵀ + (V − Γ) / (σ² B)
    ∂ℓ/∂K    = −(V r) αᵀ − (V Vᵀ − V Γᵀ − Γ Vᵀ) / (2σ² B) − (K⁻¹ − W − α αᵀ) / (2N)
    ∂ℓ/∂a    = −1 / (2σ²),    ∂ℓ/∂σ² = 1/B Σ_b [−1/(2σ²) + ((y_b − μ_b)² + v_b) / (2σ⁴)]

Everything is computed whitened, by triangular solves with L and never with K⁻¹: with
A = L⁻¹K_uf, m̃ = L⁻¹m and S̃ = L⁻¹SL⁻ᵀ, μ = Aᵀm̃, v_b = a − A_bᵀ(A_b − S̃A_b), the KL's
tr(K⁻¹S) = tr S̃ and mᵀK⁻¹m = |m̃|², and both gradients are L⁻ᵀ(·) or L⁻ᵀ(·)L⁻¹ of whitened
matrices. On a smooth field K_uu is ill-conditioned (cond ≈ 10⁶–10⁷ at M = 500) while v_b
and σ² are a thousandth of a: an explicit K⁻¹ in float32 carries an error of order
eps · cond(K) · a into v_b (measured in docs/benchmarks.md: seven times v_b itself, the
kernel gradients wrong by 2–12×, and the noise variance learned upwards), where a triangular
solve's is of order eps · a. One step costs about four M³ products (Cholesky, the two solves
of S̃, the backward's two) and six M²B ones, as many as with K⁻¹. The jitter added before the
Cholesky is treated as a constant.

:func:`whitened_negative_elbo` is the same bound with q(u) itself trained (SVGP, POAM-VAR-OPT);
:func:`online_elbo` is Bui et al.'s streaming bound (SSGP, SSGP++, POAM-ONLINE-ELBO). Both are
differentiated by autograd: they also carry gradients for the inducing inputs or q(u).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from poam_ros.models.linalg import robust_cholesky, solve_lower


class NegativeElbo(torch.autograd.Function):
    """−ELBO / N; differentiable in K_uu, K_uf, the prior variance and the noise variance."""

    @staticmethod
    def forward(ctx, k_uu: Tensor, k_uf: Tensor, prior_var: Tensor, noise: Tensor, y: Tensor,
                mean_u: Tensor, cov_u: Tensor, logdet_cov: Tensor, num_data: int | Tensor,
                jitter: float, max_tries: int) -> Tensor:
        chol = robust_cholesky(k_uu, jitter, max_tries, "K_uu during training")
        a = solve_lower(chol, k_uf)  # A = L⁻¹K_uf, M × B
        mean_w = solve_lower(chol, mean_u.unsqueeze(-1)).squeeze(-1)  # m̃ = L⁻¹m
        cov_w = solve_lower(chol, solve_lower(chol, cov_u).transpose(0, 1))  # S̃ = L⁻¹SL⁻ᵀ
        cov_w = 0.5 * (cov_w + cov_w.transpose(0, 1))
        cov_a = cov_w @ a
        mu = a.transpose(0, 1) @ mean_w
        var = prior_var - (a * (a - cov_a)).sum(0)
        sq_err = (y - mu).square() + var
        expected_loglik = -0.5 * (math.log(2 * math.pi) + noise.log() + sq_err / noise)
        kl = 0.5 * (cov_w.diagonal().sum() + mean_w @ mean_w - len(mean_u)
                    + 2.0 * chol.diagonal().log().sum() - logdet_cov)
        ctx.save_for_backward(chol, a, mean_w, cov_w, cov_a, y - mu, sq_err, noise)
        ctx.num_data = num_data
        return -(expected_loglik.mean() - kl / num_data)

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        """The gradients above, scaled by −grad_out (the function is the negative ELBO).

        Whitened, ∂ℓ/∂K_uf = L⁻ᵀ[m̃ rᵀ + (A − S̃A)/(σ²B)] and ∂ℓ/∂K = L⁻ᵀ G L⁻¹ with
        G = (S̃ − I + m̃m̃ᵀ)/(2N) − A Pᵀ, P = (½A − S̃A)/(σ²B) + m̃ rᵀ. ∂ℓ/∂K is returned up to
        its antisymmetric part, which changes nothing downstream (K is a symmetric function of
        the parameters): the data terms −(T + Tᵀ)/(2σ²B) of the formula above, T = V(½V − Γ)ᵀ,
        and −(Vr)αᵀ are the one product −A Pᵀ.
        """
        chol, a, mean_w, cov_w, cov_a, residual, sq_err, noise = ctx.saved_tensors
        batch, n = residual.shape[0], ctx.num_data
        r = residual / (noise * batch)
        scale = -grad_out
        data = a - cov_a  # A − S̃A
        right = (0.5 * a - cov_a) / (noise * batch) + torch.outer(mean_w, r)  # P, M × B
        kl_part = torch.addr(cov_w, mean_w, mean_w)  # S̃ + m̃m̃ᵀ, then − I
        kl_part.diagonal().sub_(1.0)
        # The scale (and N, a tensor in a captured step) as addmm's alpha or beta would be read
        # back to the host.
        inner = torch.addmm(kl_part.mul_(0.5 / n), a, right.transpose(0, 1), alpha=-1.0)
        upper = chol.transpose(0, 1)
        d_kuu = torch.linalg.solve_triangular(
            chol, torch.linalg.solve_triangular(upper, inner, upper=True), upper=False,
            left=False).mul_(scale)
        d_kuf = torch.linalg.solve_triangular(
            upper, torch.outer(mean_w, r) + data / (noise * batch), upper=True).mul_(scale)
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

