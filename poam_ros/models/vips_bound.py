"""The collapsed bound that VIPS's selection grows the inducing set by, one pivot at a time.

Pescador-Barrios, Filippi, van der Wilk, "Adjusting Model Size in Continual Gaussian
Processes: How Big is Big Enough?" (Sec. 4, Eqs. 8-9). The candidates are c = [a; X] (n =
M_a + N): the old inducing inputs a (M_a × D) and the new batch X (N × D). A greedy pivoted
Cholesky factor of K_cc (n × r, :mod:`poam_ros.inducing`) gives, for the chosen pivots
b (r of them, L = chol K_bb = the factor's pivot rows), the whitened cross-covariances
without any solve: its transpose R (r × n) is L⁻¹ K_bc, so P_a = R[:, :M_a] = L⁻¹ K_ba and
P_f = R[:, M_a:] = L⁻¹ K_bf.

The old data enter through a *site* on a, a Gaussian factor with precision Λ = Λ^½ Λ^½ᵀ
(M_a × M_a) and precision-weighted targets s (M_a,): Bui et al.'s q_old(a) / p(a | θ_old)
(Λ = S_a⁻¹ − K'_aa⁻¹, s = S_a⁻¹ m_a) for ``vips``, POAM's stored terms carried by the Nyström
projection for ``poam-vips`` (:class:`BoundSite`). With

    A = σ⁻² P_f P_fᵀ + (P_a Λ^½)(P_a Λ^½)ᵀ   (r × r),    c = σ⁻² P_f y + P_a s   (r,)

the collapsed bound of the batch y (N,) at inducing inputs b is

    F(b) = −N/2 log 2πσ² − yᵀy / 2σ² − N a₀ / 2σ² + κ
           + ½ tr A + ½ cᵀ (I + A)⁻¹ c − ½ log|I + A|

(a₀ the prior variance; κ the site's constant). ½ tr A collects Titsias' trace term
tr Q_ff / 2σ² and Bui's ½ tr[Λ Q_aa]; without a site F is Titsias' collapsed SGPR bound. F
depends on b only through the span of its kernel functions, so any basis of Z = a ∪ X gives
L* (Eq. 9), and adding a pivot borders A by one row: :class:`IncrementalBound` updates the
Cholesky factor of I + A, its solve with c and log|I + A| in O(n r + r²) per pivot
(bordered Cholesky, a block of pivots at a time), and F grows by ½ A_jj + ½ w_j² − log d_j ≥ 0
with each pivot j.

All in float64 (``TERMS_DTYPE`` of the models).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from poam_ros.inducing import failed_from
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.posterior import StreamingPrior, whitened_root

DTYPE = torch.float64


@dataclass
class BoundSite:
    """The old data as a Gaussian site on the old inducing outputs a (float64).

    The precision Λ = ``root`` ``root``ᵀ (root M_a × k) and ``shift`` s (M_a,) act on the
    whitened columns P_a of a (:meth:`rows`); ``constant`` κ is the part of the bound that no
    choice of b changes. Λ is never formed: on a dense memory |Λ| reaches cond(K_aa)/σ², and
    P_a Λ P_aᵀ through it carries rounding of ε |P_a|² |Λ|, enough to make I + A indefinite,
    where the Gram of P_a Λ^½ is positive semi-definite by construction (the square-root form
    of :class:`~.posterior.StreamingPrior`)."""

    root: Tensor
    shift: Tensor
    constant: Tensor

    def rows(self, p_a: Tensor) -> tuple[Tensor, Tensor]:
        """P_a Λ^½ (r × k), whose Gram is the site's part of A, and P_a s (r,), its part of c."""
        return p_a @ self.root, p_a @ self.shift

    @classmethod
    def streaming(cls, prior: StreamingPrior, k_aa: Tensor) -> "BoundSite":
        """``vips``: Bui et al.'s q_old(a) / p(a | θ_old), Λ^½ = L'⁻ᵀ U diag(d) and
        s = S_a⁻¹ m_a (:meth:`~.posterior.StreamingPrior.precision_root`), and κ = −½ tr(Λ K_aa)
        − ½ m_aᵀ S_a⁻¹ m_a − ½ log|S_a| + ½ log|K'_aa| (Bui et al.'s bound,
        :func:`~.elbo.online_elbo`) with K_aa (M_a × M_a, float64) under the current kernel."""
        root, shift = (part.to(DTYPE) for part in prior.precision_root())
        constant = (-0.5 * ((root * (k_aa @ root)).sum() + prior.mean.to(DTYPE) @ shift)
                    - prior.cov_chol.to(DTYPE).diagonal().log().sum()
                    + prior.prior_chol.to(DTYPE).diagonal().log().sum())
        return cls(root, shift, constant)

    @classmethod
    def stored_terms(cls, chol: Tensor, vector: Tensor, matrix: Tensor, noise: Tensor,
                     current_chol: Tensor, max_tries: int = 0) -> "BoundSite":
        """``poam-vips``: the stored terms b = K_of y (``vector``) and C = K_of K_fo
        (``matrix``) at Z_o carried by the Nyström projection K_u'f ≈ K_u'o K_oo⁻¹ K_of, so
        Λ = σ⁻² K_oo⁻¹ C K_oo⁻¹ and s = σ⁻² K_oo⁻¹ b with K_oo = L Lᵀ (``chol``) that of the
        kernel that stored them: Λ^½ = σ⁻¹ L⁻ᵀ W with W Wᵀ = L⁻¹CL⁻ᵀ
        (:func:`~.posterior.whitened_root`). κ is minus the old data's own bound at Z_o under
        the current kernel (``current_chol``, whose rows P_a = L_cᵀ), so that the bound is
        the batch's share of the all-data bound."""
        upper = chol.transpose(0, 1)
        root = torch.linalg.solve_triangular(upper, whitened_root(chol, matrix),
                                             upper=True) / noise.sqrt()
        shift = torch.cholesky_solve(vector.unsqueeze(-1), chol).squeeze(-1) / noise
        rows = current_chol.transpose(0, 1) @ root
        return cls(root, shift, -whitened_bound(rows @ rows.transpose(0, 1),
                                                current_chol.transpose(0, 1) @ shift, max_tries))


def batch_constant(y: Tensor, noise: Tensor, amplitude: Tensor) -> Tensor:
    """−N/2 log 2πσ² − yᵀy / 2σ² − N a₀ / 2σ²: the bound with no inducing input and no site."""
    num = y.shape[0]
    return -0.5 * (num * (math.log(2 * math.pi) + noise.log()) + (y @ y + num * amplitude) / noise)


def collapsed_bound(rows: Tensor, num_old: int, y: Tensor, noise: Tensor, amplitude: Tensor,
                    site: BoundSite | None, max_tries: int = 0) -> Tensor:
    """F of the module docstring from the whitened rows R (r × n) of all pivots at once."""
    p_a, p_f = rows[:, :num_old], rows[:, num_old:]
    a = p_f @ p_f.transpose(0, 1) / noise
    c = p_f @ y / noise
    value = batch_constant(y, noise, amplitude)
    if site is not None:
        site_rows, site_shift = site.rows(p_a)
        a = a + site_rows @ site_rows.transpose(0, 1)
        c = c + site_shift
        value = value + site.constant
    return value + whitened_bound(a, c, max_tries)


def whitened_bound(a: Tensor, c: Tensor, max_tries: int = 0) -> Tensor:
    """½ tr A + ½ cᵀ (I + A)⁻¹ c − ½ log|I + A|: the part of F that the inducing inputs set."""
    a = 0.5 * (a + a.transpose(0, 1))
    eye = torch.eye(a.shape[0], dtype=a.dtype, device=a.device)
    chol = robust_cholesky(eye + a, 0.0, max_tries, "I + A of the VIPS bound")
    w = torch.linalg.solve_triangular(chol, c.unsqueeze(-1), upper=False).squeeze(-1)
    return 0.5 * (a.diagonal().sum() + w @ w) - chol.diagonal().log().sum()


class IncrementalBound:
    """F(b) as pivots are added (bordered Cholesky of I + A), on the device.

    ``extend(rows)`` takes the new pivots' rows of the pivoted Cholesky factor's transpose
    (b × n) and returns the bound after each (b,): nothing is read back, so a GPU never waits
    for the host. A block of b pivots borders the factor of I + A by one triangular solve
    and a b × b Cholesky, whatever b. ``history[j]`` is the bound with the first j pivots
    (``history[0]``: the batch constant plus the site's) and :attr:`value` the bound so far;
    ``truncate(count)`` drops the pivots after the first ``count`` (those computed past a
    stopping point). A pivot that leaves I + A not positive definite (round-off) makes the
    bound NaN from there on, for the caller to check. Memory O(r n) for the rows kept
    (``capacity`` r at most)."""

    def __init__(self, num_old: int, y: Tensor, noise: Tensor, amplitude: Tensor,
                 site: BoundSite | None, capacity: int):
        self.num_old, self.y, self.noise, self.site = num_old, y, noise, site
        self.count = 0
        new = dict(dtype=y.dtype, device=y.device)
        self.history = torch.empty(capacity + 1, **new)
        self.history[0] = (batch_constant(y, noise, amplitude)
                           + (0.0 if site is None else site.constant))
        self.rows_f = torch.empty(capacity, y.shape[0], **new)  # P_f
        width = 0 if site is None else site.root.shape[1]
        self.rows_a = torch.empty(capacity, width, **new)  # P_a Λ^½
        self.factor = torch.zeros(capacity, capacity, **new)  # chol(I + A)
        self.solved = torch.empty(capacity, **new)  # chol(I + A)⁻¹ c

    @property
    def value(self) -> Tensor:
        return self.history[self.count]

    def truncate(self, count: int) -> None:
        self.count = min(self.count, count)

    def add(self, column: Tensor) -> Tensor:
        """One pivot's column of the factor (n,); the bound with it (0-d)."""
        return self.extend(column.unsqueeze(0))[0]

    def extend(self, rows: Tensor) -> Tensor:
        j, size, noise = self.count, rows.shape[0], self.noise
        p_a, p_f = rows[:, :self.num_old], rows[:, self.num_old:]
        a_cross = p_f @ self.rows_f[:j].transpose(0, 1) / noise  # A[new, old]
        a_block = p_f @ p_f.transpose(0, 1) / noise  # A[new, new]
        c = p_f @ self.y / noise
        new = slice(j, j + size)
        if self.site is not None:
            site_rows, site_shift = self.site.rows(p_a)
            a_cross = a_cross + site_rows @ self.rows_a[:j].transpose(0, 1)
            a_block = a_block + site_rows @ site_rows.transpose(0, 1)
            c = c + site_shift
            self.rows_a[new] = site_rows
        border = torch.linalg.solve_triangular(self.factor[:j, :j], a_cross.transpose(0, 1),
                                               upper=False)  # j × b
        schur = a_block - border.transpose(0, 1) @ border
        schur.diagonal().add_(1.0)
        chol, info = torch.linalg.cholesky_ex(schur)
        w = torch.linalg.solve_triangular(
            chol, (c - border.transpose(0, 1) @ self.solved[:j]).unsqueeze(-1),
            upper=False).squeeze(-1)
        self.factor[new, :j], self.factor[new, new], self.solved[new] = (
            border.transpose(0, 1), chol, w)
        self.rows_f[new] = p_f
        # F grows by ½ A_jj + ½ w_j² − log d_j with each pivot, summed in order.
        steps = 0.5 * (a_block.diagonal() + w * w) - chol.diagonal().log()
        values = torch.cat([self.history[j:j + 1], steps]).cumsum(0)[1:]
        values = values.masked_fill_(failed_from(info, size), math.nan)
        self.history[j + 1:j + size + 1] = values
        self.count += size
        return values


@dataclass
class RunningMoments:
    """Count, mean and sum of squared deviations of every target seen (float64 0-d tensors),
    merged batch by batch (Chan et al.'s pairwise update, exact in any batch order)."""

    count: Tensor
    mean: Tensor
    m2: Tensor

    KEYS = ("target_count", "target_mean", "target_m2")

    @classmethod
    def empty(cls, device) -> "RunningMoments":
        return cls(*(torch.zeros((), dtype=DTYPE, device=device) for _ in range(3)))

    def merged(self, y: Tensor) -> "RunningMoments":
        y = y.to(DTYPE)
        count = torch.tensor(float(y.shape[0]), dtype=DTYPE, device=y.device)
        mean = y.mean()
        m2 = (y - mean).square().sum()
        total = self.count + count
        delta = mean - self.mean
        return RunningMoments(total, self.mean + delta * count / total,
                              self.m2 + m2 + delta.square() * self.count * count / total)

    def log_likelihood(self, y: Tensor, min_variance: float) -> Tensor:
        """L_noise = Σ_n log N(y_n; μ̂, σ̂²) with the running mean and (population) variance,
        floored at ``min_variance`` (a single sample has none)."""
        variance = (self.m2 / self.count).clamp_min(min_variance)
        y = y.to(DTYPE)
        return -0.5 * (y.shape[0] * (math.log(2 * math.pi) + variance.log())
                       + (y - self.mean).square().sum() / variance)

    def state(self) -> dict[str, Tensor]:
        return dict(zip(self.KEYS, (self.count, self.mean, self.m2)))

    @classmethod
    def from_state(cls, state: dict[str, Tensor]) -> "RunningMoments":
        return cls(*(state[key].to(DTYPE) for key in cls.KEYS))
