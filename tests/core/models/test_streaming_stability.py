"""Bui et al.'s streaming update in its square-root form against closed forms, where K_bb is
well conditioned (the difference form S_a⁻¹ − K'_aa⁻¹ is exact enough there) and where it is not
(a constant share of 500 over inducing inputs 0.2 lengthscales apart: cond K_bb ≈ 4·10⁷, and the
difference form's I + A has eigenvalues near −3 where exact arithmetic gives at least 1)."""

import math

import pytest
import torch

from poam_ros.models.batch_terms import DenseCross
from poam_ros.models.elbo import online_elbo
from poam_ros.models.linalg import NumericalError, robust_cholesky, solve_lower
from poam_ros.models.posterior import (
    StreamingPrior,
    WhitenedTerms,
    optimal_posterior,
    streaming_posterior,
    whitened_optimal_posterior,
)

pytestmark = pytest.mark.usefixtures("single_thread")


def constant_rbf(p, q):
    """500 + exp(−(p − q)² / 2·0.1²) on 1-D inputs: the magnetometer's constant share."""
    return 500.0 + torch.exp(-0.5 * (p[:, None] - q[None, :]) ** 2 / 0.1 ** 2)


def smooth_rbf(p, q):
    return 1.3 * torch.exp(-0.5 * torch.cdist(p, q) ** 2 / 0.3 ** 2)


def jittered(kernel, z):
    """K(z, z) with the models' relative jitter, 10⁻⁶ of the mean diagonal."""
    k = kernel(z, z)
    return k + 1e-6 * k.diagonal().mean() * torch.eye(len(z), dtype=k.dtype)


def difference_form(chol_b, prior, k_ab, k_bf, y, noise):
    """Σ = K_bb + σ⁻² K_bf K_fb + K_ba (S_a⁻¹ − K'_aa⁻¹) K_ab with C = K_bf K_fb and the site's
    precision formed as they read, then whitened by L_b."""
    b, c = DenseCross(k_bf).terms(y)
    u, v = solve_lower(prior.cov_chol, k_ab), solve_lower(prior.prior_chol, k_ab)
    precision = u.T @ u - v.T @ v
    shift = u.T @ solve_lower(prior.cov_chol, prior.mean[:, None])
    return b / noise + shift[:, 0], c / noise + 0.5 * (precision + precision.T)


def two_batches(kernel, a, b, x1, y1, x2, y2, noise):
    chol_a, chol_b = (robust_cholesky(jittered(kernel, z), 0.0, 0, "test") for z in (a, b))
    old = streaming_posterior(chol_a, DenseCross(kernel(a, x1)).whitened_terms(chol_a, y1),
                              noise, None, None, 0)
    prior = StreamingPrior.from_posterior(a, old, chol_a, 0.0, 0)
    k_ab = jittered(kernel, b)[:len(a)] if torch.equal(b[:len(a)], a) else kernel(a, b)
    return chol_a, chol_b, prior, k_ab


def ill_conditioned():
    """a: 20 inputs 0.02 apart; b = [a; 20 more]; 200 samples of sin 20x under each, noise
    10⁻⁴ (µT²-like): the old data's whitened precision reaches 2·10⁹."""
    gen = torch.Generator().manual_seed(0)
    a = 0.02 * torch.arange(20, dtype=torch.float64)
    b = torch.cat([a, 0.38 + 0.02 * torch.arange(1, 21, dtype=torch.float64)])
    x1 = 0.38 * torch.rand(200, generator=gen, dtype=torch.float64)
    x2 = 0.38 + 0.4 * torch.rand(200, generator=gen, dtype=torch.float64)
    y1, y2 = (torch.sin(20 * x) + 0.01 * torch.randn(200, generator=gen, dtype=torch.float64)
              for x in (x1, x2))
    return a, b, x1, y1, x2, y2, torch.tensor(1e-4, dtype=torch.float64)


def covariance(posterior):
    return posterior.sqrt @ posterior.sqrt.T


def test_square_root_form_equals_the_difference_form_when_well_conditioned():
    """b ≠ a, two inducing sets of a smooth kernel: both forms agree to 10⁻¹⁰."""
    gen = torch.Generator().manual_seed(4)
    a, b, x1, x2 = (torch.rand(n, 2, generator=gen, dtype=torch.float64) for n in (6, 8, 30, 25))
    y1, y2 = (torch.randn(n, generator=gen, dtype=torch.float64) for n in (30, 25))
    noise = torch.tensor(0.2, dtype=torch.float64)
    _, chol_b, prior, k_ab = two_batches(smooth_rbf, a, b, x1, y1, x2, y2, noise)
    ours = streaming_posterior(chol_b, DenseCross(smooth_rbf(b, x2)).whitened_terms(chol_b, y2),
                               noise, prior, k_ab, 0)
    theirs = optimal_posterior(chol_b, *difference_form(chol_b, prior, k_ab, smooth_rbf(b, x2),
                                                        y2, noise), torch.ones(()), 0)
    assert torch.allclose(ours.mean, theirs.mean, rtol=1e-10, atol=1e-12)
    assert torch.allclose(covariance(ours), covariance(theirs), rtol=1e-10, atol=1e-13)
    assert torch.allclose(ours.logdet, theirs.logdet, rtol=1e-11)


def test_ill_conditioned_update_fails_in_difference_form_and_matches_the_closed_form():
    """With b ⊇ a (a first) and θ unchanged, Bui et al.'s q(b) is Titsias' optimal q(b) with
    the old batch seen through a: K_bf₁ → K_ba K_aa⁻¹ K_af₁, whose whitened rows are
    L_b⁻¹K_ba K_aa⁻¹K_af₁ = [L_a⁻¹K_af₁; 0] (L_a the leading block of L_b): no site, no S_a."""
    a, b, x1, y1, x2, y2, noise = ill_conditioned()
    chol_a, chol_b, prior, k_ab = two_batches(constant_rbf, a, b, x1, y1, x2, y2, noise)
    vector, matrix = difference_form(chol_b, prior, k_ab, constant_rbf(b, x2), y2, noise)
    whitened = solve_lower(chol_b, solve_lower(chol_b, matrix).T)
    assert torch.linalg.eigvalsh(0.5 * (whitened + whitened.T))[0] < -1.0
    with pytest.raises(NumericalError, match="I \\+ σ⁻² L⁻¹ C L⁻ᵀ"):
        optimal_posterior(chol_b, vector, matrix, torch.ones(()), 0)

    ours = streaming_posterior(chol_b, DenseCross(constant_rbf(b, x2)).whitened_terms(chol_b, y2),
                               noise, prior, k_ab, 0)
    rows = torch.cat([torch.cat([solve_lower(chol_a, constant_rbf(a, x1)),
                                 torch.zeros(20, 200, dtype=torch.float64)]),
                      solve_lower(chol_b, constant_rbf(b, x2))], dim=1)
    y = torch.cat([y1, y2])
    reference = whitened_optimal_posterior(chol_b, WhitenedTerms(rows @ y, rows @ rows.T), noise,
                                           0)
    assert torch.linalg.norm(ours.mean - reference.mean) < 1e-8 * torch.linalg.norm(
        reference.mean)
    cov = covariance(reference)
    assert torch.linalg.norm(covariance(ours) - cov) < 1e-7 * torch.linalg.norm(cov)


def titsias_bound(rows, y, noise, amp):
    """Titsias' collapsed bound from whitened rows R = L⁻¹K_bf (M × N): −N/2 log 2πσ²
    − yᵀy/2σ² − (N a₀ − |R|²)/2σ² + ½ cᵀ(I + A)⁻¹c − ½ log|I + A|, A = RRᵀ/σ², c = Ry/σ²."""
    num = y.shape[0]
    chol = torch.linalg.cholesky(torch.eye(len(rows), dtype=rows.dtype) + rows @ rows.T / noise)
    solved = solve_lower(chol, (rows @ y / noise)[:, None])
    return (-0.5 * num * (math.log(2 * math.pi) + noise.log()) - 0.5 * y @ y / noise
            - 0.5 * (num * amp - rows.square().sum()) / noise + 0.5 * solved.square().sum()
            - chol.diagonal().log().sum())


def test_ill_conditioned_online_elbo_is_the_difference_of_titsias_bounds():
    """b ⊇ a, θ unchanged: K_aa − Q_aa = 0 and the site is exact, so F(y₂ | q_old from y₁)
    = F(b; y₁ through a, y₂) − F(a; y₁), both from whitened rows alone ([L_a⁻¹K_af₁; 0] for
    y₁ at b, as above). The bounds are ≈ 10⁶ nats in their parts (yᵀy/σ²)."""
    a, b, x1, y1, x2, y2, noise = ill_conditioned()
    chol_a, chol_b, prior, k_ab = two_batches(constant_rbf, a, b, x1, y1, x2, y2, noise)
    amp = torch.tensor(501.0, dtype=torch.float64)
    online = online_elbo(jittered(constant_rbf, b), constant_rbf(b, x2), amp, noise, y2, prior,
                         k_ab, jittered(constant_rbf, a))
    old_rows = solve_lower(chol_a, constant_rbf(a, x1))
    rows = torch.cat([torch.cat([old_rows, torch.zeros(20, 200, dtype=torch.float64)]),
                      solve_lower(chol_b, constant_rbf(b, x2))], dim=1)
    expected = (titsias_bound(rows, torch.cat([y1, y2]), noise, amp)
                - titsias_bound(old_rows, y1, noise, amp))
    assert abs(float(online - expected)) < 1e-11 * float(y1 @ y1 / noise)


def test_site_root_is_zero_where_q_old_is_its_prior():
    """S_a = K'_aa (no data seen, or the padded blocks of a static-shape bucket): D_a⁻¹ = 0,
    so s = 1 and the clipped root vanishes; the shift is K'_aa⁻¹ m_a whitened, L'⁻¹ m_a."""
    gen = torch.Generator().manual_seed(5)
    a = torch.rand(5, 2, generator=gen, dtype=torch.float64)
    chol = torch.linalg.cholesky(jittered(smooth_rbf, a))
    mean = torch.randn(5, generator=gen, dtype=torch.float64)
    root, shift = StreamingPrior(a, mean, chol, chol).site_spectrum()
    assert (root @ root.T).abs().max() < 1e-10
    assert torch.allclose(shift, solve_lower(chol, mean[:, None])[:, 0], rtol=1e-10)
