"""VIPS's selection bound with the old data's site as a square root (BoundSite.root) against
the precision formed first, where K is well conditioned, and against Titsias' closed form where
it is not (cond K_bb ≈ 4·10⁷, the fixture of test_streaming_stability.py).

``vips``'s site Λ = S_a⁻¹ − K'_aa⁻¹ comes from the SVD root of StreamingPrior; ``poam-vips``'s
Λ = σ⁻² K_oo⁻¹ C K_oo⁻¹ from the stored C = K_of K_fo, whose whitening L⁻¹CL⁻ᵀ by two solves
has an eigenvalue below −σ² at that condition, so that the formed site cannot be factorised."""

import pytest
import torch

from poam_ros.models.batch_terms import DenseCross
from poam_ros.models.elbo import online_elbo
from poam_ros.models.linalg import NumericalError, robust_cholesky, solve_lower
from poam_ros.models.posterior import whiten_terms
from poam_ros.models.vips_bound import (
    BoundSite,
    IncrementalBound,
    batch_constant,
    collapsed_bound,
    whitened_bound,
)
from tests.core.models.test_streaming_stability import (
    constant_rbf,
    ill_conditioned,
    jittered,
    smooth_rbf,
    titsias_bound,
    two_batches,
)

pytestmark = pytest.mark.usefixtures("single_thread")


def formed_bound(rows, num_old, y, noise, amp, precision, shift, constant):
    """The bound with the site's precision Λ formed and multiplied: A ∋ P_a Λ P_aᵀ."""
    p_a, p_f = rows[:, :num_old], rows[:, num_old:]
    a = p_f @ p_f.T / noise + p_a @ precision @ p_a.T
    c = p_f @ y / noise + p_a @ shift
    return batch_constant(y, noise, amp) + constant + whitened_bound(a, c)


def whitened_site(chol, vector, matrix, noise):
    """``poam-vips``'s site as it was: Λ = L⁻ᵀ (L⁻¹CL⁻ᵀ) L⁻¹ / σ² with C whitened by two
    solves, and its constant at the same kernel (rows Lᵀ)."""
    terms = whiten_terms(chol, vector, matrix)
    upper = chol.T
    half = torch.linalg.solve_triangular(upper, terms.matrix, upper=True)
    precision = torch.linalg.solve_triangular(upper, half.T, upper=True) / noise
    precision = 0.5 * (precision + precision.T)
    shift = torch.linalg.solve_triangular(upper, terms.vector[:, None], upper=True)[:, 0] / noise
    constant = -whitened_bound(upper @ precision @ chol, upper @ shift)
    return precision, shift, constant


def candidate_rows(kernel, chol_b, b, k_ab, x):
    """L_b⁻¹ K_b[a; x] (r × n): the whitened columns of the candidates, old first."""
    return solve_lower(chol_b, torch.cat([k_ab.T, kernel(b, x)], dim=1))


def smooth_problem():
    gen = torch.Generator().manual_seed(4)
    a, b, x1, x2 = (torch.rand(n, 2, generator=gen, dtype=torch.float64) for n in (6, 8, 30, 25))
    y1, y2 = (torch.randn(n, generator=gen, dtype=torch.float64) for n in (30, 25))
    return a, b, x1, y1, x2, y2, torch.tensor(0.2, dtype=torch.float64)


def closed_form(a, x1, y1, rows, y2, noise, amp):
    """b ⊇ a (a first), θ unchanged: the batch's bound is F(b; y₁ through a, y₂) − F(a; y₁),
    Titsias' bounds from whitened rows ([L_a⁻¹K_af₁; 0] for y₁ at b)."""
    chol_a = robust_cholesky(jittered(constant_rbf, a), 0.0, 0, "test")
    old_rows = solve_lower(chol_a, constant_rbf(a, x1))
    num_old = len(a)
    padded = torch.cat([old_rows, torch.zeros(rows.shape[0] - num_old, len(x1),
                                              dtype=torch.float64)])
    all_rows = torch.cat([padded, rows[:, num_old:]], dim=1)
    return (titsias_bound(all_rows, torch.cat([y1, y2]), noise, amp)
            - titsias_bound(old_rows, y1, noise, amp))


def test_vips_root_site_equals_the_formed_precision_and_the_online_elbo():
    """b ≠ a, a smooth kernel: the Gram of P_a Λ^½ gives the bound of Λ = Λ^½Λ^½ᵀ formed, and
    both are Bui et al.'s online ELBO of the batch, to 10⁻¹⁰."""
    a, b, x1, y1, x2, y2, noise = smooth_problem()
    _, chol_b, prior, k_ab = two_batches(smooth_rbf, a, b, x1, y1, x2, y2, noise)
    amp = torch.tensor(1.3, dtype=torch.float64)
    k_aa = jittered(smooth_rbf, a)
    site = BoundSite.streaming(prior, k_aa)
    rows = candidate_rows(smooth_rbf, chol_b, b, k_ab, x2)
    ours = collapsed_bound(rows, len(a), y2, noise, amp, site)
    formed = formed_bound(rows, len(a), y2, noise, amp, site.root @ site.root.T, site.shift,
                          site.constant)
    online = online_elbo(jittered(smooth_rbf, b), smooth_rbf(b, x2), amp, noise, y2, prior,
                         k_ab, k_aa)
    assert abs(float(ours - formed)) < 1e-10 * abs(float(ours))
    assert abs(float(ours - online)) < 1e-10 * abs(float(ours))


def test_vips_root_site_matches_titsias_when_ill_conditioned():
    """cond K_bb ≈ 4·10⁷, Λ up to 10⁹ whitened: the bound at once and pivot block by pivot
    block (the selection's IncrementalBound) is the closed form, to 10⁻¹¹ of yᵀy/σ²."""
    a, b, x1, y1, x2, y2, noise = ill_conditioned()
    _, chol_b, prior, k_ab = two_batches(constant_rbf, a, b, x1, y1, x2, y2, noise)
    amp = torch.tensor(501.0, dtype=torch.float64)
    site = BoundSite.streaming(prior, jittered(constant_rbf, a))
    rows = candidate_rows(constant_rbf, chol_b, b, k_ab, x2)
    expected = closed_form(a, x1, y1, rows, y2, noise, amp)
    scale = float(y1 @ y1 / noise)
    whole = collapsed_bound(rows, len(a), y2, noise, amp, site)
    assert abs(float(whole - expected)) < 1e-11 * scale
    bound = IncrementalBound(len(a), y2, noise, amp, site, len(b))
    for start in range(0, len(b), 16):
        bound.extend(rows[start:start + 16])
    assert abs(float(bound.value - expected)) < 1e-11 * scale


def test_poam_vips_root_site_equals_the_whitened_form_when_well_conditioned():
    """Stored terms of 30 samples at 6 inducing inputs, bound at 8 others: the root of C gives
    the bound of the site formed from L⁻¹CL⁻ᵀ, to 10⁻¹⁰."""
    a, b, x1, y1, x2, y2, noise = smooth_problem()
    chol_a = robust_cholesky(jittered(smooth_rbf, a), 0.0, 0, "test")
    chol_b = robust_cholesky(jittered(smooth_rbf, b), 0.0, 0, "test")
    vector, matrix = DenseCross(smooth_rbf(a, x1)).terms(y1)
    amp = torch.tensor(1.3, dtype=torch.float64)
    rows = candidate_rows(smooth_rbf, chol_b, b, smooth_rbf(a, b), x2)
    site = BoundSite.stored_terms(chol_a, vector, matrix, noise, chol_a)
    ours = collapsed_bound(rows, len(a), y2, noise, amp, site)
    formed = formed_bound(rows, len(a), y2, noise, amp,
                          *whitened_site(chol_a, vector, matrix, noise))
    assert abs(float(ours - formed)) < 1e-10 * abs(float(ours))


def test_poam_vips_ill_conditioned_site_fails_whitened_and_matches_titsias_from_the_root():
    """cond K_oo ≈ 2·10⁷, σ² = 10⁻⁴: L⁻¹CL⁻ᵀ whitened by two solves has an eigenvalue below
    −σ², so the formed site's own bound cannot be factorised at any b; from the root of C the
    bound is the closed form (the stored terms at b ⊇ a are exact), to 10⁻⁸ of yᵀy/σ² (C fixes
    its rough directions only to ε|C|, which the root whitens; the round-off is 1.7·10⁻⁹ with
    MKL on an AMD EPYC, less on other CPUs)."""
    a, b, x1, y1, x2, y2, noise = ill_conditioned()
    chol_a, chol_b, _, k_ab = two_batches(constant_rbf, a, b, x1, y1, x2, y2, noise)
    vector, matrix = DenseCross(constant_rbf(a, x1)).terms(y1)
    whitened = whiten_terms(chol_a, vector, matrix).matrix
    assert torch.linalg.eigvalsh(whitened)[0] < -noise
    with pytest.raises(NumericalError, match="I \\+ A of the VIPS bound"):
        whitened_site(chol_a, vector, matrix, noise)

    amp = torch.tensor(501.0, dtype=torch.float64)
    site = BoundSite.stored_terms(chol_a, vector, matrix, noise, chol_a)
    rows = candidate_rows(constant_rbf, chol_b, b, k_ab, x2)
    expected = closed_form(a, x1, y1, rows, y2, noise, amp)
    scale = float(y1 @ y1 / noise)
    assert abs(float(collapsed_bound(rows, len(a), y2, noise, amp, site) - expected)) < 1e-8 * scale
    bound = IncrementalBound(len(a), y2, noise, amp, site, len(b))
    bound.extend(rows)
    assert abs(float(bound.value - expected)) < 1e-8 * scale
