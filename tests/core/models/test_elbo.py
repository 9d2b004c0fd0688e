"""The training objectives against textbook formulas: the hand-derived ELBO gradient against
autograd, the whitened SVGP ELBO against the unwhitened one, Bui et al.'s online ELBO against
Titsias' bound and the dense form of its augmented data set."""

import math

import torch
from torch.distributions import MultivariateNormal

from poam_ros.models.batch_terms import DenseCross
from poam_ros.models.elbo import NegativeElbo, online_elbo, whitened_negative_elbo
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.posterior import (
    StreamingPrior,
    VariationalPosterior,
    posterior_from_whitened,
    streaming_posterior,
)


def predictive_moments(chol, posterior, k_uf, prior_var):
    """q(f): μ = K_fu K⁻¹ m, v = k_ff − diag(K_fu K⁻¹ K_uf) + diag(K_fu K⁻¹ S K⁻¹ K_uf)."""
    v = torch.linalg.solve_triangular(chol, k_uf, upper=False)
    whitened_mean = torch.linalg.solve_triangular(chol, posterior.mean[:, None], upper=False)[:, 0]
    whitened_sqrt = torch.linalg.solve_triangular(chol, posterior.sqrt, upper=False)
    var = prior_var - v.square().sum(0) + (whitened_sqrt.T @ v).square().sum(0)
    return v.T @ whitened_mean, var, (chol, whitened_mean, whitened_sqrt)


def kl_divergence(factors, posterior):
    """KL(q(u) ‖ p(u)) = ½ [tr(K⁻¹S) + mᵀK⁻¹m − M + log|K| − log|S|], by the textbook."""
    chol, whitened_mean, whitened_sqrt = factors
    return 0.5 * (whitened_sqrt.square().sum() + whitened_mean.square().sum()
                  - len(whitened_mean) + 2.0 * chol.diagonal().log().sum() - posterior.logdet)


def autograd_reference(k_uu, k_uf, prior_var, noise, y, posterior, num_data):
    chol = torch.linalg.cholesky(k_uu)
    mean, var, factors = predictive_moments(chol, posterior, k_uf, prior_var)
    loglik = -0.5 * (math.log(2 * math.pi) + noise.log() + ((y - mean) ** 2 + var) / noise)
    return -(loglik.mean() - kl_divergence(factors, posterior) / num_data)


def test_value_and_gradients_match_autograd():
    gen = torch.Generator().manual_seed(0)
    m, b, n = 12, 7, 40
    z = torch.rand(m, 2, generator=gen, dtype=torch.float64)
    x = torch.rand(b, 2, generator=gen, dtype=torch.float64)
    lengthscale = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    prior_var = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    noise = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
    sqrt = (torch.tril(torch.rand(m, m, generator=gen, dtype=torch.float64)) * 0.3
            + 0.2 * torch.eye(m, dtype=torch.float64))
    posterior = VariationalPosterior(torch.randn(m, generator=gen, dtype=torch.float64), sqrt,
                                     torch.logdet(sqrt @ sqrt.T))
    y = torch.randn(b, generator=gen, dtype=torch.float64)

    def kernels():
        def k(a, c):
            return prior_var * torch.exp(-0.5 * torch.cdist(a, c) ** 2 / lengthscale ** 2)

        return k(z, z) + 1e-3 * torch.eye(m, dtype=torch.float64), k(z, x)

    params = (lengthscale, prior_var, noise)
    k_uu, k_uf = kernels()
    ours = NegativeElbo.apply(k_uu, k_uf, prior_var, noise, y, posterior.mean, sqrt @ sqrt.T,
                              posterior.logdet, n, 0.0, 0)
    grads = torch.autograd.grad(ours, params)
    k_uu, k_uf = kernels()
    reference = autograd_reference(k_uu, k_uf, prior_var, noise, y, posterior, n)
    expected = torch.autograd.grad(reference, params)
    assert torch.allclose(ours, reference, rtol=1e-10)
    for got, want in zip(grads, expected):
        assert torch.allclose(got, want, rtol=1e-8, atol=1e-12)


AMP, NOISE = torch.tensor(1.3, dtype=torch.float64), torch.tensor(0.2, dtype=torch.float64)


def rbf(a, b):
    return AMP * torch.exp(-0.5 * torch.cdist(a, b) ** 2 / 0.3 ** 2)


def rand(n, gen):
    return torch.rand(n, 2, generator=gen, dtype=torch.float64)


def titsias_bound(k_uu, k_uf, y):
    """log N(y; 0, Q_ff + σ²I) − tr(K_ff − Q_ff) / 2σ² by a dense Gaussian."""
    q_ff = k_uf.T @ torch.linalg.solve(k_uu, k_uf)
    eye = torch.eye(len(y), dtype=y.dtype)
    return (MultivariateNormal(torch.zeros_like(y), q_ff + NOISE * eye).log_prob(y)
            - (len(y) * AMP - q_ff.trace()) / (2 * NOISE))


def test_online_elbo_without_old_posterior_is_titsias_bound():
    gen = torch.Generator().manual_seed(1)
    z, x = rand(6, gen), rand(11, gen)
    y = torch.randn(11, generator=gen, dtype=torch.float64)
    k_uu = rbf(z, z) + 1e-6 * AMP * torch.eye(6, dtype=torch.float64)
    assert torch.allclose(online_elbo(k_uu, rbf(z, x), AMP, NOISE, y),
                          titsias_bound(k_uu, rbf(z, x), y), rtol=1e-10)


def test_online_elbo_with_q_old_telescopes_over_batches():
    """With b = a and unchanged θ, F(y₂ | q_old from y₁) = F_Titsias(y₁ ∪ y₂) − F_Titsias(y₁)."""
    gen = torch.Generator().manual_seed(0)
    z, x1, x2 = (rand(n, gen) for n in (7, 9, 6))
    y1, y2 = (torch.randn(n, generator=gen, dtype=torch.float64) for n in (9, 6))
    k_zz = rbf(z, z) + 1e-6 * AMP * torch.eye(7, dtype=torch.float64)
    k, amp, noise = rbf, AMP, NOISE
    chol = robust_cholesky(k_zz, 0.0, 0, "test")
    old = streaming_posterior(chol, DenseCross(k(z, x1)).whitened_terms(chol, y1), noise, None,
                              None, 0)
    prior = StreamingPrior.from_posterior(z, old, chol, 0.0, 0)
    online = online_elbo(k_zz, k(z, x2), amp, noise, y2, prior, k_zz, k_zz)
    both = online_elbo(k_zz, k(z, torch.cat([x1, x2])), amp, noise, torch.cat([y1, y2]))
    first = online_elbo(k_zz, k(z, x1), amp, noise, y1)
    assert torch.allclose(online, both - first, rtol=1e-9)


def test_online_elbo_equals_bui_dense_augmented_form():
    """Bui et al. (2017), collapsed bound with a ≠ b: with D_a⁻¹ = S_a⁻¹ − K'_aa⁻¹ and
    ŷ = [y; D_a S_a⁻¹ m_a], Σ̂ = diag(σ²I, D_a), f̂ = [f; a]:

        F = log N(ŷ; 0, K_f̂b K_bb⁻¹ K_bf̂ + Σ̂) − tr(K_ff − Q_ff)/2σ² − ½ tr[D_a⁻¹(K_aa − Q_aa)]
            + ½ ŷ_aᵀ D_a⁻¹ ŷ_a + ½ log|2π D_a| − ½ m_aᵀ S_a⁻¹ m_a − ½ log|S_a| + ½ log|K'_aa|

    q_old from 20 old samples on 5 inducing inputs (so D_a is invertible) under other
    hyper-parameters (K'_aa with lengthscale 0.4); θ and b new."""
    gen = torch.Generator().manual_seed(2)
    a, b, x_old, x = rand(5, gen), rand(6, gen), rand(20, gen), rand(8, gen)
    y_old, y = (torch.randn(n, generator=gen, dtype=torch.float64) for n in (20, 8))
    eye = lambda n: torch.eye(n, dtype=torch.float64)  # noqa: E731
    old_k = lambda p, q: torch.exp(-0.5 * torch.cdist(p, q) ** 2 / 0.4 ** 2)  # noqa: E731
    k_aa_old = old_k(a, a) + 1e-6 * eye(5)
    chol_old = robust_cholesky(k_aa_old, 0.0, 0, "test")
    terms = DenseCross(old_k(a, x_old)).whitened_terms(chol_old, y_old)
    q_old = streaming_posterior(chol_old, terms, torch.tensor(0.3), None, None, 0)
    prior = StreamingPrior.from_posterior(a, q_old, chol_old, 0.0, 0)
    s_a = q_old.sqrt @ q_old.sqrt.T
    k_bb = rbf(b, b) + 1e-6 * AMP * eye(6)
    k_aa = rbf(a, a) + 1e-6 * AMP * eye(5)
    ours = online_elbo(k_bb, rbf(b, x), AMP, NOISE, y, prior, rbf(a, b), k_aa)

    d_inv = torch.linalg.inv(s_a) - torch.linalg.inv(k_aa_old)
    d_a = torch.linalg.inv(d_inv)
    y_a = d_a @ torch.linalg.solve(s_a, q_old.mean)
    k_hat = torch.cat([rbf(x, b), rbf(a, b)])
    cov = k_hat @ torch.linalg.solve(k_bb, k_hat.T) + torch.block_diag(NOISE * eye(8), d_a)
    q_aa = rbf(a, b) @ torch.linalg.solve(k_bb, rbf(b, a))
    q_ff = rbf(x, b) @ torch.linalg.solve(k_bb, rbf(b, x))
    y_hat = torch.cat([y, y_a])
    dense = (MultivariateNormal(torch.zeros(13, dtype=torch.float64), cov).log_prob(y_hat)
             - (8 * AMP - q_ff.trace()) / (2 * NOISE) - 0.5 * (d_inv @ (k_aa - q_aa)).trace()
             + 0.5 * y_a @ d_inv @ y_a + 0.5 * torch.logdet(2 * math.pi * d_a)
             - 0.5 * q_old.mean @ torch.linalg.solve(s_a, q_old.mean)
             - 0.5 * torch.logdet(s_a) + 0.5 * torch.logdet(k_aa_old))
    assert torch.allclose(ours, dense, rtol=1e-8)


def test_whitened_elbo_equals_unwhitened_elbo_of_the_same_q():
    gen = torch.Generator().manual_seed(3)
    z, x = rand(6, gen), rand(9, gen)
    y = torch.randn(9, generator=gen, dtype=torch.float64)
    k_uu = rbf(z, z) + 1e-4 * torch.eye(6, dtype=torch.float64)
    mean_w = torch.randn(6, generator=gen, dtype=torch.float64)
    eye = torch.eye(6, dtype=torch.float64)
    sqrt_w = torch.tril(torch.rand(6, 6, generator=gen, dtype=torch.float64)) + 0.5 * eye
    q = posterior_from_whitened(torch.linalg.cholesky(k_uu), mean_w, sqrt_w)
    whitened = whitened_negative_elbo(k_uu, rbf(z, x), AMP, NOISE, y, mean_w, sqrt_w, 40, 0.0, 0)
    plain = NegativeElbo.apply(k_uu, rbf(z, x), AMP, NOISE, y, q.mean, q.sqrt @ q.sqrt.T,
                               q.logdet, 40, 0.0, 0)
    assert torch.allclose(whitened, plain, rtol=1e-10)
    assert torch.allclose(q.logdet, torch.logdet(q.sqrt @ q.sqrt.T), rtol=1e-10)
