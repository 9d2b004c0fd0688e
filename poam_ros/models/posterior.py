"""Closed-form pieces of the sparse variational GP shared by the E-step, training and prediction.

Notation (Titsias 2009; Hensman et al. 2013): inducing inputs Z (M × D), K = K_uu, q(u) = N(m, S)
in the unwhitened parameterisation, S = F Fᵀ, L = chol(K), noise variance σ². The whitened
parameterisation (Hensman et al. 2015) writes u = L v with q(v) = N(μ, R Rᵀ), R lower
triangular, so that m = L μ and S = L R Rᵀ Lᵀ.

Streaming (Bui, Nguyen, Turner 2017): the approximate posterior of the previous update,
q_old(a) = N(m_a, S_a) over the old inducing outputs a, and the prior it was computed under,
p(a | θ_old) = N(0, K'_aa), enter the next update as the factor q_old(a) / p(a | θ_old).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from poam_ros.models.linalg import cholesky_exact_first, robust_cholesky, solve_lower

#: Precision of the data terms a method accumulates over the whole mission, of the E-step
#: that turns them into q(u) and of the prediction factors, whatever the model's dtype: in
#: float32, the rounding of a sum over thousands of samples makes C = K_uf K_fu indefinite by
#: about 1e-7 of its norm, which K_uu⁻¹ (condition 1e4 and more) amplifies past
#: I + σ⁻² L⁻¹CL⁻ᵀ ≥ I.
TERMS_DTYPE = torch.float64


@dataclass
class VariationalPosterior:
    """q(u) = N(mean, sqrt sqrtᵀ) over the inducing outputs, with log|S| for the ELBO."""

    mean: Tensor  # (M,)
    sqrt: Tensor  # (M, M), any square root of S
    logdet: Tensor  # scalar

    def to(self, dtype: torch.dtype) -> "VariationalPosterior":
        return VariationalPosterior(self.mean.to(dtype), self.sqrt.to(dtype), self.logdet.to(dtype))


@dataclass
class WhitenedTerms:
    """Data terms b = K_uf y and C = K_uf K_fu whitened by L = chol K_uu: L⁻¹b (M,) and
    L⁻¹CL⁻ᵀ (M × M), two M³ triangular solves. :func:`optimal_posterior` needs them, and the
    next E-step that carries b and C from this L needs the same two: a method can keep them."""

    vector: Tensor  # L⁻¹ b
    matrix: Tensor  # L⁻¹ C L⁻ᵀ


def whitened_root(k_uu_chol: Tensor, c: Tensor) -> Tensor:
    """W (M × M) with W Wᵀ = L⁻¹ C L⁻ᵀ for a stored PSD C = K_uf K_fu: a square root of C
    (clipped eigendecomposition; C is a sum of Grams in float64, indefinite by ε|C| at most)
    whitened by one triangular solve. Its Gram is positive semi-definite by construction, where
    whitening C itself by two solves carries C's rounding amplified by cond(K_uu) (≈ 10⁸ on a
    dense memory: eigenvalues of −1 and below, see :meth:`.batch_terms.CrossCovariance
    .whitened_terms` for the batch's own blocks)."""
    values, vectors = torch.linalg.eigh(0.5 * (c + c.transpose(-1, -2)))
    return solve_lower(k_uu_chol, vectors * values.clamp_min(0.0).sqrt())


def whiten_terms(k_uu_chol: Tensor, b: Tensor, c: Tensor) -> WhitenedTerms:
    lower = k_uu_chol
    return WhitenedTerms(solve_lower(lower, b.unsqueeze(-1)).squeeze(-1),
                         solve_lower(lower, solve_lower(lower, c).transpose(-1, -2)))


def optimal_posterior(k_uu_chol: Tensor, b: Tensor, c: Tensor, noise: Tensor,
                      max_tries: int) -> VariationalPosterior:
    """The optimal q(u) given the data terms b = K_uf y and C = K_uf K_fu (POAM Eqs. 7-8).

    S = K Σ⁻¹ K and m = σ⁻² K Σ⁻¹ b with Σ = K + σ⁻² C. Evaluated as Σ = L (I + A) Lᵀ with
    A = σ⁻² L⁻¹ C L⁻ᵀ, whose Cholesky is well conditioned (eigenvalues ≥ 1) however large C
    grows with the data.
    """
    return whitened_optimal_posterior(k_uu_chol, whiten_terms(k_uu_chol, b, c), noise,
                                      max_tries)


def whitened_optimal_posterior(k_uu_chol: Tensor, terms: WhitenedTerms, noise: Tensor,
                               max_tries: int) -> VariationalPosterior:
    """:func:`optimal_posterior` from the terms whitened by ``k_uu_chol`` (:func:`whiten_terms`),
    the same numbers to the last bit."""
    lower = k_uu_chol
    a = terms.matrix / noise
    a = 0.5 * (a + a.transpose(-1, -2))
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    # Eigenvalues of I + A are at least 1: no jitter unless round-off makes it fail.
    b_chol = robust_cholesky(eye + a, 0.0, max_tries, "I + σ⁻² L⁻¹ C L⁻ᵀ")
    mean = lower @ torch.cholesky_solve(terms.vector.unsqueeze(-1) / noise, b_chol)
    sqrt = torch.linalg.solve_triangular(b_chol, lower.transpose(-1, -2), upper=False)
    logdet = 2.0 * (lower.diagonal().log().sum() - b_chol.diagonal().log().sum())
    return VariationalPosterior(mean.squeeze(-1), sqrt.transpose(-1, -2), logdet)


@dataclass
class StreamingPrior:
    """Bui et al.'s old posterior q_old(a) = N(m_a, S_a) and old prior p(a | θ_old) = N(0, K'_aa).

    Kept as Cholesky factors, as in the published streaming sparse GP: S_a = L_S L_Sᵀ and
    K'_aa = L' L'ᵀ, where K'_aa is the inducing covariance under the hyper-parameters that
    produced q_old. Factorising S_a is where the streaming update meets ill-conditioning (S_a
    shrinks as data accumulate); it is tried without jitter, then with escalating jitter
    (:func:`~.linalg.cholesky_exact_first`).

    The site q_old(a) / p(a | θ_old) enters the next update through its precision
    D_a⁻¹ = S_a⁻¹ − K'_aa⁻¹, positive semi-definite in exact arithmetic (S_a ≤ K'_aa: an
    optimal q under θ_old, Σ = K' + PSD, so S_a = K' Σ⁻¹ K' ≤ K'; a diagonal block of such a
    posterior or its predictive under θ_old likewise). Formed as that difference, then
    whitened by a new K_bb of condition 10⁸, it is indefinite at round-off and I + A cannot be
    factorised whatever the jitter. Instead, in the whitening of L': with the singular values
    of R = L'⁻¹ L_S = U diag(s) Vᵀ, L'ᵀ S_a⁻¹ L' = U diag(s⁻²) Uᵀ and

        D_a⁻¹ = L'⁻ᵀ U diag(d²) Uᵀ L'⁻¹,   d = √max(s⁻² − 1, 0)

    (exact arithmetic has s ≤ 1, the clip removes round-off only), so the site's part of A is
    the Gram H Hᵀ of a computed H (:meth:`site_rows`), positive semi-definite by construction.
    """

    inducing: Tensor  # a, Ma × D (scaled units)
    mean: Tensor  # m_a (Ma,)
    cov_chol: Tensor  # L_S (Ma, Ma)
    prior_chol: Tensor  # L' (Ma, Ma)
    _spectrum: tuple[Tensor, Tensor] | None = field(default=None, init=False, repr=False,
                                                    compare=False)

    @classmethod
    def from_posterior(cls, inducing: Tensor, posterior: VariationalPosterior, prior_chol: Tensor,
                       jitter: float, max_tries: int) -> "StreamingPrior":
        cov = posterior.sqrt @ posterior.sqrt.transpose(-1, -2)
        cov_chol = cholesky_exact_first(0.5 * (cov + cov.transpose(-1, -2)), jitter, max_tries,
                                        "S_a of the old posterior")
        return cls(inducing, posterior.mean, cov_chol, prior_chol)

    def site_spectrum(self) -> tuple[Tensor, Tensor]:
        """U diag(d) (Ma × Ma), the square root of L'ᵀ D_a⁻¹ L', and U diag(s⁻²) Uᵀ L'⁻¹ m_a
        (Ma,), the shift L'ᵀ S_a⁻¹ m_a; one SVD, kept (the factors never change)."""
        if self._spectrum is None:
            prior_chol = self.prior_chol.detach()
            rotation, values, _ = torch.linalg.svd(solve_lower(prior_chol,
                                                               self.cov_chol.detach()))
            precision = values.square().reciprocal()
            mean_w = solve_lower(prior_chol, self.mean.detach().unsqueeze(-1)).squeeze(-1)
            self._spectrum = (rotation * (precision - 1.0).clamp_min(0.0).sqrt(),
                              rotation @ (precision * (rotation.transpose(-1, -2) @ mean_w)))
        return self._spectrum

    def site_rows(self, cross_w: Tensor) -> tuple[Tensor, Tensor]:
        """H = X D_a^{½} and X S_a⁻¹ m_a for X = L⁻¹ K_ba (M × Ma) whitened by any L, so that
        the site adds H Hᵀ = L⁻¹K_ba D_a⁻¹ K_abL⁻ᵀ to A and the vector to c. Differentiable
        in ``cross_w`` (the factors of q_old are constants)."""
        root, shift = self.site_spectrum()
        scaled = solve_lower(self.prior_chol.detach(), cross_w.transpose(-1, -2))  # L'⁻¹K_abL⁻ᵀ
        scaled = scaled.transpose(-1, -2)
        return scaled @ root, scaled @ shift

    def precision_root(self) -> tuple[Tensor, Tensor]:
        """P = L'⁻ᵀ U diag(d) (Ma × Ma), D_a⁻¹ = P Pᵀ unwhitened, and S_a⁻¹ m_a (Ma,): the
        site on the old inducing outputs themselves, for sums that are not whitened by L'
        (constants; a product by P Pᵀ is evaluated as a Gram of rows times P, never by the
        formed D_a⁻¹)."""
        root, shift = self.site_spectrum()
        upper = self.prior_chol.detach().transpose(-1, -2)
        return (torch.linalg.solve_triangular(upper, root, upper=True),
                torch.linalg.solve_triangular(upper, shift.unsqueeze(-1), upper=True).squeeze(-1))

    def site_trace(self, matrix: Tensor) -> Tensor:
        """tr(D_a⁻¹ X) for symmetric X (Ma × Ma), as tr(Pᵀ X P) without the difference."""
        root = self.precision_root()[0]
        return (root * (matrix @ root)).sum()


def streaming_posterior(k_chol: Tensor, terms: WhitenedTerms, noise: Tensor,
                        prior: StreamingPrior | None, k_ab: Tensor | None,
                        max_tries: int) -> VariationalPosterior:
    """Bui et al.'s optimal q(b) given the new batch and q_old(a) (the collapsed online bound).

    q(b) ∝ p(b) exp(E_p(f|b)[log p(y | f)] + E_p(a|b)[log q_old(a) − log p(a | θ_old)]) is the
    sparse-GP posterior of an augmented data set: the batch (noise σ²) and pseudo-observations
    of a with precision D_a⁻¹ = S_a⁻¹ − K'_aa⁻¹ and precision-weighted targets S_a⁻¹ m_a:

        Σ = K_bb + σ⁻² K_bf K_fb + K_ba (S_a⁻¹ − K'_aa⁻¹) K_ab
        m = K_bb Σ⁻¹ (σ⁻² K_bf y + K_ba S_a⁻¹ m_a),   S = K_bb Σ⁻¹ K_bb

    evaluated whitened by L = ``k_chol``: Σ = L (I + A) Lᵀ with A = σ⁻² W Wᵀ + H Hᵀ, W the
    whitened batch (``terms``: L⁻¹K_bf y and W Wᵀ = L⁻¹K_bf K_fbL⁻ᵀ summed from whitened
    blocks, :meth:`~.batch_terms.CrossCovariance.whitened_terms`) and H the whitened site
    (:meth:`StreamingPrior.site_rows`). A is a sum of Grams of computed factors, so I + A ≥ I
    holds to round-off however ill-conditioned K_bb: no difference of whitened Gram terms is
    formed. Without ``prior`` (the first batch) this is Titsias' optimal q(u).
    """
    dtype = k_chol.dtype
    vector, matrix = (term.to(dtype) / noise for term in (terms.vector, terms.matrix))
    if prior is not None:
        rows, shift = prior.site_rows(solve_lower(k_chol, k_ab.transpose(-1, -2)))
        vector, matrix = vector + shift, matrix + rows @ rows.transpose(-1, -2)
    return whitened_optimal_posterior(k_chol, WhitenedTerms(vector, matrix),
                                      torch.ones((), dtype=dtype, device=k_chol.device),
                                      max_tries)


def carried_whitened(k_old_chol: Tensor, posterior: VariationalPosterior, k_old_new: Tensor,
                     k_new_chol: Tensor, jitter: float, max_tries: int) -> tuple[Tensor, Tensor]:
    """q(u) carried to new inducing inputs u', in the whitened parameterisation of u'.

    q(u') = ∫ p(u' | u) q(u) du, the sparse GP's own predictive at Z':
    mean K_u'u K⁻¹ m, covariance K_u'u' − K_u'u K⁻¹ K_uu' + K_u'u K⁻¹ S K⁻¹ K_uu'. Whitened
    by L' = chol K_u'u' (the jitter is part of K_u'u'), the covariance is I − GGᵀ + HHᵀ with
    G = L'⁻¹ K_u'u L⁻ᵀ and H = G L⁻¹ F. Returns μ (M',) and lower-triangular R (M' × M').
    """
    g = solve_lower(k_new_chol, solve_lower(k_old_chol, k_old_new).transpose(-1, -2))
    mean_w = g @ solve_lower(k_old_chol, posterior.mean.unsqueeze(-1))
    h = g @ solve_lower(k_old_chol, posterior.sqrt)
    eye = torch.eye(g.shape[0], dtype=g.dtype, device=g.device)
    cov_w = eye - g @ g.transpose(-1, -2) + h @ h.transpose(-1, -2)
    cov_w = 0.5 * (cov_w + cov_w.transpose(-1, -2))
    return mean_w.squeeze(-1), cholesky_exact_first(cov_w, jitter, max_tries, "carried q(u')")


def whitened_from_posterior(k_chol: Tensor, posterior: VariationalPosterior, jitter: float,
                            max_tries: int) -> tuple[Tensor, Tensor]:
    """μ = L⁻¹ m and R = chol(L⁻¹ S L⁻ᵀ) of an unwhitened q(u)."""
    mean_w = solve_lower(k_chol, posterior.mean.unsqueeze(-1)).squeeze(-1)
    f_w = solve_lower(k_chol, posterior.sqrt)
    cov_w = f_w @ f_w.transpose(-1, -2)
    return mean_w, cholesky_exact_first(0.5 * (cov_w + cov_w.transpose(-1, -2)), jitter,
                                        max_tries, "whitened S")


def posterior_from_whitened(k_chol: Tensor, mean_w: Tensor, sqrt_w: Tensor) -> VariationalPosterior:
    """q(u) = N(L μ, L R Rᵀ Lᵀ) from the whitened parameters (R lower triangular)."""
    logdet = 2.0 * (k_chol.diagonal().log().sum() + sqrt_w.diagonal().abs().log().sum())
    return VariationalPosterior(k_chol @ mean_w, k_chol @ sqrt_w, logdet)


@dataclass
class PredictionCache:
    """α = K⁻¹m and Q = K⁻¹ − K⁻¹SK⁻¹ under the current kernel, computed once per update.

    Predicting N points is then one product with [α, Q]: μ = K_fu α and
    v = k_ff − rowsum((K_fu Q) ⊙ K_fu), instead of a triangular solve and a product per
    query. In float64 the cancellation in v costs about cond(K_uu)·ε relative accuracy
    (≈ 1e-10 with the default jitter); the models compute the cache in float64 whatever their
    dtype.
    """

    alpha: Tensor  # (M,)
    q: Tensor  # (M, M)


def prediction_cache(k_uu_chol: Tensor, posterior: VariationalPosterior) -> PredictionCache:
    k_inv = torch.cholesky_inverse(k_uu_chol)
    h = k_inv @ posterior.sqrt
    q = k_inv - h @ h.transpose(-1, -2)
    return PredictionCache(k_inv @ posterior.mean, 0.5 * (q + q.transpose(-1, -2)))
