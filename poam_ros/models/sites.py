"""The E-step of a batch with non-Gaussian channels: Gaussian sites iterated to the bound's
optimum.

With a Bernoulli or Poisson channel (:mod:`.likelihoods`) the optimal q(u) of the continual
bound (CMOGP Eq. 24) or of the ELBO has no closed form; the paper follows the bound's gradient
in q's parameters. Here each measured entry (n, d) of a non-Gaussian channel is replaced by a
Gaussian site N(ŷ_nd | f_d(x_n), β_nd⁻¹) and the sites are iterated, the conjugate-computation
form of natural-gradient VI (Khan and Lin 2017; the dual GP's Bayesian learning rule in site
form, Chang et al. 2023 Eq. 23): from β = 0,

    (β_nd, β_nd ŷ_nd) ← (1 − r)(β_nd, β_nd ŷ_nd) + r (β̂_nd, β̂_nd μ_nd + α̂_nd)

with α̂, β̂ the quadrature's derivatives at q's marginals N(μ_nd, v_nd), and q recomputed after
each step by the method's closed-form Gaussian E-step, the sites in place of the entries
(precision β as the weight, ŷ as the target, unit noise). At a fixed point the Gaussian
surrogate's gradient in (μ, v) equals the true expected log-likelihood's, so q is a stationary
point of the true bound within the method's family of q (joint or factorised); r = 1 is
Newton's step in the natural parameters. ``site_steps`` bounds the iterations; they stop early
once no site changes by more than ``SITE_TOLERANCE`` of its size.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor

from poam_ros.models.likelihoods import Likelihood

#: relative change of every site below which the iterations stop
SITE_TOLERANCE = 1e-9


class BatchSites:
    """The sites (β, βŷ) of a batch's non-Gaussian entries (each N × D, zero elsewhere).

    ``y``: the batch's targets (N × D, scaled units, NaN where not measured)."""

    def __init__(self, likelihoods: Sequence[Likelihood], y: Tensor):
        self.likelihoods, self.y = list(likelihoods), y
        other = torch.as_tensor([not p.gaussian for p in likelihoods], device=y.device)
        self.active = torch.isfinite(y) & other  # the entries the sites stand for
        self.precision = torch.zeros_like(y)
        self.shift = torch.zeros_like(y)

    @property
    def any(self) -> bool:
        return bool(self.active.any())

    def gaussian_targets(self) -> Tensor:
        """y with the non-Gaussian channels' entries NaN: the part of the batch whose terms
        do not change between iterations."""
        return torch.where(self.active, torch.full_like(self.y, float("nan")), self.y)

    def site_targets(self) -> tuple[Tensor, Tensor]:
        """ŷ (NaN outside the sites) and β (N × D): the sites as weighted data
        (:func:`~.lmc.channel_terms`)."""
        nan = torch.full_like(self.y, float("nan"))
        target = self.shift / self.precision.clamp_min(torch.finfo(self.y.dtype).tiny)
        return torch.where(self.active, target, nan), self.precision

    def step(self, mean: Tensor, var: Tensor, rate: float) -> float:
        """One damped step towards (β̂, β̂μ + α̂) at q's marginals ``mean``, ``var`` (N × D);
        returns the largest change relative to the site's size."""
        precision, shift = self.precision.clone(), self.shift.clone()
        for d, likelihood in enumerate(self.likelihoods):
            rows = self.active[:, d]
            if likelihood.gaussian or not rows.any():
                continue
            mu, v = mean[rows, d], var[rows, d].clamp_min(torch.finfo(mean.dtype).eps)
            _, alpha, beta = likelihood.expectations(self.y[rows, d], mu, v,
                                                     torch.ones((), dtype=mu.dtype))
            beta = beta.clamp_min(0.0)
            precision[rows, d] = (1.0 - rate) * self.precision[rows, d] + rate * beta
            shift[rows, d] = (1.0 - rate) * self.shift[rows, d] + rate * (beta * mu + alpha)
        change = max(float(((precision - self.precision).abs()
                            / (1.0 + self.precision.abs())).max()),
                     float(((shift - self.shift).abs() / (1.0 + self.shift.abs())).max()))
        self.precision, self.shift = precision, shift
        return change


def iterate_sites(sites: BatchSites, solve: Callable[[], object],
                  marginals: Callable[[object], tuple[Tensor, Tensor]], steps: int,
                  rate: float):
    """q from ``solve()`` (the E-step with the sites as they are) after at most ``steps`` site
    steps at ``marginals(q)`` (N × D means and variances of f at the batch); ``solve`` once
    when the batch has no non-Gaussian entry."""
    q = solve()
    if not sites.any:
        return q
    for _ in range(steps):
        change = sites.step(*marginals(q), rate)
        q = solve()
        if change < SITE_TOLERANCE:
            break
    return q
