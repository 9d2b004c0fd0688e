"""The collapsed bound that VIPS's selection grows the inducing set by, one pivot at a time.

Pescador-Barrios, Filippi, van der Wilk, "Adjusting Model Size in Continual Gaussian
Processes: How Big is Big Enough?" (Sec. 4, Eqs. 8-9). The candidates are c = [a; X] (n =
M_a + N): the old inducing inputs a (M_a × D) and the new batch X (N × D). A greedy pivoted
Cholesky factor of K_cc (n × r, :mod:`poam_ros.inducing`) gives, for the chosen pivots
b (r of them, L = chol K_bb = the factor's pivot rows), the whitened cross-covariances
without any solve: its transpose R (r × n) is L⁻¹ K_bc, so P_a = R[:, :M_a] = L⁻¹ K_ba and
P_f = R[:, M_a:] = L⁻¹ K_bf.

The old data enter through a *site* on a, a Gaussian factor with precision Λ (M_a × M_a) and
precision-weighted targets s (M_a,): Bui et al.'s q_old(a) / p(a | θ_old) (Λ = S_a⁻¹ − K'_aa⁻¹,
s = S_a⁻¹ m_a) for ``vips``, POAM's stored terms carried by the Nyström projection for
``poam-vips`` (:class:`BoundSite`). With

    A = σ⁻² P_f P_fᵀ + P_a Λ P_aᵀ   (r × r),    c = σ⁻² P_f y + P_a s   (r,)

the collapsed bound of the batch y (N,) at inducing inputs b is

    F(b) = −N/2 log 2πσ² − yᵀy / 2σ² − N a₀ / 2σ² + κ
           + ½ tr A + ½ cᵀ (I + A)⁻¹ c − ½ log|I + A|

(a₀ the prior variance; κ the site's constant). ½ tr A collects Titsias' trace term
tr Q_ff / 2σ² and Bui's ½ tr[Λ Q_aa]; without a site F is Titsias' collapsed SGPR bound. F
depends on b only through the span of its kernel functions, so any basis of Z = a ∪ X gives
L* (Eq. 9), and adding a pivot borders A by one row: :class:`IncrementalBound` updates the
Cholesky factor of I + A, its solve with c and log|I + A| in O(n r + r²) per pivot
(bordered Cholesky), and F grows by ½ A_jj + ½ w_j² − log d_j ≥ 0.

All in float64 (``TERMS_DTYPE`` of the models).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from poam_ros.models.linalg import NumericalError, robust_cholesky

DTYPE = torch.float64


@dataclass
class BoundSite:
    """The old data as a Gaussian site on the old inducing outputs a (float64).

    ``precision`` Λ (M_a × M_a) and ``shift`` s (M_a,) act on the whitened columns P_a of a;
    ``constant`` κ is the part of the bound that no choice of b changes."""

    precision: Tensor
    shift: Tensor
    constant: Tensor


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
        a = a + p_a @ site.precision @ p_a.transpose(0, 1)
        c = c + p_a @ site.shift
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
    """F(b) as pivots are added one by one (bordered Cholesky of I + A).

    ``add(column)`` takes the pivot's column of the pivoted Cholesky factor (n,) and returns the
    bound with it; :attr:`value` is the bound so far (with no pivot: the batch constant plus
    the site's). Memory O(r n) for the rows kept (``capacity`` r at most)."""

    def __init__(self, num_old: int, y: Tensor, noise: Tensor, amplitude: Tensor,
                 site: BoundSite | None, capacity: int):
        self.num_old, self.y, self.noise, self.site = num_old, y, noise, site
        self.count = 0
        self.value = float(batch_constant(y, noise, amplitude)
                           + (0.0 if site is None else site.constant))
        new = dict(dtype=y.dtype, device=y.device)
        self.rows_f = torch.empty(capacity, y.shape[0], **new)  # P_f
        self.rows_a = torch.empty(capacity, num_old, **new)  # P_a
        self.factor = torch.zeros(capacity, capacity, **new)  # chol(I + A)
        self.solved = torch.empty(capacity, **new)  # chol(I + A)⁻¹ c

    def add(self, column: Tensor) -> float:
        j, noise = self.count, self.noise
        p_a, p_f = column[:self.num_old], column[self.num_old:]
        a_col = self.rows_f[:j] @ p_f / noise
        a_jj = p_f @ p_f / noise
        c_j = p_f @ self.y / noise
        if self.site is not None:
            weighted = self.site.precision @ p_a
            a_col = a_col + self.rows_a[:j] @ weighted
            a_jj = a_jj + p_a @ weighted
            c_j = c_j + self.site.shift @ p_a
        border = torch.linalg.solve_triangular(self.factor[:j, :j], a_col.unsqueeze(-1),
                                               upper=False).squeeze(-1)
        pivot_sq = float(1.0 + a_jj - border @ border)
        if not pivot_sq > 0.0:  # also NaN: I + A is not positive definite
            raise NumericalError("I + A of the VIPS bound is not positive definite")
        pivot = math.sqrt(pivot_sq)
        w_j = float(c_j - border @ self.solved[:j]) / pivot
        self.factor[j, :j], self.factor[j, j], self.solved[j] = border, pivot, w_j
        self.rows_f[j], self.rows_a[j] = p_f, p_a
        self.count += 1
        self.value += 0.5 * (float(a_jj) + w_j * w_j) - math.log(pivot)
        return self.value


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
