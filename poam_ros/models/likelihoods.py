"""Per-channel likelihoods p(y | f) of the heterogeneous multi-channel models.

Moreno-Muñoz, Artés-Rodríguez, Álvarez, "Continual Multi-task Gaussian Processes" (2019),
Sec. 2.3 and 3.4: each channel d of the LMC has its own likelihood, a Gaussian (depth,
temperature), a Bernoulli (a binary seabed class: hard/soft, "target seen") or a Poisson
(counts), all sharing the latents. The bound needs E_q[log p(y | f)] under a channel's marginal
q(f) = N(μ, v); where it has no closed form the paper takes it by Gauss–Hermite quadrature with
nodes f_k = μ + √(2v) t_k and weights w_k/√π:

    E(μ, v)  = Σ_k w_k log p(y | f_k) / √π
    α̂ = ∂E/∂μ = Σ_k w_k g(f_k) / √π,    β̂ = −2 ∂E/∂v = −√(2/v) Σ_k w_k t_k g(f_k) / √π

with g = ∂_f log p(y | f) (Bonnet's and Price's theorems, taken as the derivatives of the
quadrature itself, so that a fixed point of the site iterations is exactly a stationary point
of the quadrature bound). β̂ ≥ 0 for the log-concave likelihoods here.

* ``gaussian``: N(y | f, σ²), y in target units; quadrature is exact for it (a quadratic in f),
  and the models keep its closed form :meth:`Gaussian.closed_form`.
* ``bernoulli``: Φ(s f) with s = 2y − 1 for labels y ∈ {0, 1} (probit link, as the dual GP's
  Bernoulli model, :mod:`.bernoulli`); P(y = 1) = Φ(μ/√(1 + v)).
* ``poisson``: Poisson(y | e^f) for counts y ∈ {0, 1, …} (log link); E[y] = e^{μ + v/2}.

Targets of a non-Gaussian channel are not scaled and carry no noise variance.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

#: Gauss–Hermite nodes of every quadrature here: exact for polynomials of degree < 40; for the
#: probit the error is about 1.6e-5 of β̂ (:mod:`.bernoulli`).
GAUSS_HERMITE_POINTS = 20


def gauss_hermite(points: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """Nodes t_k and weights w_k/√π (each (points,)) in ``like``'s dtype and device."""
    nodes, weights = np.polynomial.hermite.hermgauss(points)
    return (torch.as_tensor(nodes, dtype=like.dtype, device=like.device),
            torch.as_tensor(weights / math.sqrt(math.pi), dtype=like.dtype, device=like.device))


class Likelihood:
    """log p(y | f) and its slope g in f, elementwise; the expectations by quadrature."""

    name = ""
    #: whether the channel's targets are standardised and it has a learned noise variance
    gaussian = False
    #: what its targets must be
    targets = "finite"

    def check(self, y: np.ndarray) -> bool:
        """Whether every finite value of ``y`` is a valid observation."""
        return True

    def log_density(self, y: Tensor, f: Tensor, noise: Tensor) -> Tensor:
        raise NotImplementedError

    def slope(self, y: Tensor, f: Tensor, noise: Tensor) -> Tensor:
        raise NotImplementedError

    def expectations(self, y: Tensor, mean: Tensor, var: Tensor, noise: Tensor,
                     points: int = GAUSS_HERMITE_POINTS) -> tuple[Tensor, Tensor, Tensor]:
        """E_q[log p(y | f)], α̂ and β̂ (the shape of y) for q(f) = N(mean, var > 0); ``noise``
        broadcasts against y (unused but by the Gaussian)."""
        nodes, weights = gauss_hermite(points, mean)
        spread = (2.0 * var).sqrt().unsqueeze(-1)
        f = mean.unsqueeze(-1) + spread * nodes
        y, noise = y.unsqueeze(-1), torch.as_tensor(noise).unsqueeze(-1)
        slope = self.slope(y, f, noise)
        expected = (weights * self.log_density(y, f, noise)).sum(-1)
        alpha = (weights * slope).sum(-1)
        beta = -2.0 * (weights * nodes * slope / spread).sum(-1)
        return expected, alpha, beta

    def response(self, mean: Tensor, var: Tensor) -> Tensor:
        """E[y] under q(f) = N(mean, var): the map's expected observation."""
        raise NotImplementedError


class Gaussian(Likelihood):
    name, gaussian = "gaussian", True

    def log_density(self, y, f, noise):
        return -0.5 * (math.log(2 * math.pi) + noise.log() + (y - f).square() / noise)

    def slope(self, y, f, noise):
        return (y - f) / noise

    @staticmethod
    def closed_form(y: Tensor, mean: Tensor, var: Tensor, noise: Tensor) -> Tensor:
        """E_q[log N(y | f, σ²)] = −½ [log 2πσ² + ((y − μ)² + v)/σ²]."""
        return -0.5 * (math.log(2 * math.pi) + noise.log() + ((y - mean).square() + var) / noise)

    def response(self, mean, var):
        return mean


class Bernoulli(Likelihood):
    name, targets = "bernoulli", "labels 0 or 1"

    def check(self, y):
        return bool(np.isin(y[np.isfinite(y)], (0.0, 1.0)).all())

    def log_density(self, y, f, noise):
        return torch.special.log_ndtr((2.0 * y - 1.0) * f)

    def slope(self, y, f, noise):
        sign = 2.0 * y - 1.0
        z = sign * f  # ∂_f log Φ(s f) = s φ(z)/Φ(z), in log space
        return sign * torch.exp(-0.5 * z.square() - 0.5 * math.log(2 * math.pi)
                                - torch.special.log_ndtr(z))

    def response(self, mean, var):
        return torch.special.ndtr(mean / (1.0 + var).sqrt())


class Poisson(Likelihood):
    name, targets = "poisson", "counts 0, 1, 2, …"

    def check(self, y):
        y = y[np.isfinite(y)]
        return bool(((y >= 0) & (y == np.round(y))).all())

    def log_density(self, y, f, noise):
        return y * f - f.exp() - torch.lgamma(y + 1.0)

    def slope(self, y, f, noise):
        return y - f.exp()

    def response(self, mean, var):
        return (mean + 0.5 * var).exp()


#: the channel likelihoods by the names ``mapping.channel_likelihoods`` takes
LIKELIHOODS: dict[str, Likelihood] = {cls.name: cls() for cls in (Gaussian, Bernoulli, Poisson)}
