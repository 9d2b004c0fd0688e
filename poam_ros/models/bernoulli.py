"""The memory-based dual GP with a Bernoulli likelihood (probit link): a binary map, such as a
seabed class, learned from labelled samples (Chang et al. 2023, the paper's generic-likelihood
case).

p(y | f) = Φ(y f) for labels y ∈ {−1, +1} (given as 0 / 1). The expectations under the marginal
q(f_i) = N(μ_i, v_i) have no closed form; they are taken by Gauss-Hermite quadrature with
``GAUSS_HERMITE_POINTS`` nodes, f = μ + √(2v) t_k:

    E(μ, v) = E_q[log Φ(y f)] ≈ Σ_k w_k log Φ(y (μ + √(2v) t_k)) / √π
    α̂ = ∂E/∂μ = E_q[∂_f log Φ(y f)],   β̂ = −2 ∂E/∂v = E_q[−∂²_f log Φ(y f)]

(Bonnet's and Price's theorems), both taken as the derivatives of the quadrature itself:
α̂ ≈ Σ_k w_k y r_k / √π and β̂ ≈ −(2/√(2v)) Σ_k w_k t_k y r_k / √π, r = φ(y f)/Φ(y f) in log
space. The iterations' fixed point is then exactly the optimum of the ELBO under this
quadrature (the authors' code differentiates its quadrature too); quadrature of −∂² instead
would differ from it by the quadrature's error (1.6e-5 at 20 nodes).

Unlike the Gaussian sites, these depend on q(u), so the sites of the batch and of the memory
come from the Bayesian learning rule's iterations in site form (Eq. 23): with the carried
sites fixed, ``blr_steps`` times

    (β_i, β_i ŷ_i) ← (1 − r)(β_i, β_i ŷ_i) + r (β̂_i, β̂_i μ_i + α̂_i)

for every sample of the batch (starting from zero) and of the memory (starting from its sites
of the last update), q(u) recomputed from all sites after each step. Their fixed point is the
SVGP-optimal q(u) of those samples given the carried sites. Hyper-parameters always by the dual
objective with the same quadrature (the all-data objective is the Gaussian ELBO). Targets are
not scaled; :meth:`predict` gives the latent f, :meth:`predict_proba` P(y = 1) =
Φ(μ/√(1 + v)).

The mapping method ``dual-gp-bernoulli`` (its one channel's ``channel_likelihoods`` is
``bernoulli``): its map is the latent f's mean and standard deviation, from which
:meth:`~BernoulliDualGP.predict_proba` gives the probability; the ``dual.*`` options as
``dual-gp``'s. The rate and step count are constructor arguments (the mapper's: 0.8 and 10),
not saved.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import ndtr
from torch import Tensor

from poam_ros.models.batch_terms import CrossCovariance, KernelCross
from poam_ros.models.dual_gp import Conditioned, DualGP, DualObjective, marginals, site_terms
from poam_ros.models.likelihoods import GAUSS_HERMITE_POINTS, LIKELIHOODS
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.posterior import (
    TERMS_DTYPE,
    PredictionCache,
    VariationalPosterior,
    optimal_posterior,
    prediction_cache,
)
from poam_ros.models.prediction import Prediction
from poam_ros.models.samples import MALFORMED_BATCH, BatchReport, InvalidBatchError


def probit_expectations(y: Tensor, mean: Tensor, var: Tensor,
                        points: int = GAUSS_HERMITE_POINTS) -> tuple[Tensor, Tensor, Tensor]:
    """E_q[log Φ(y f)], α̂ and β̂ (each (N,)) for labels y = ±1 and q(f) = N(mean, var > 0):
    the Bernoulli channel's quadrature (:class:`~.likelihoods.Bernoulli`)."""
    return LIKELIHOODS["bernoulli"].expectations(0.5 * (y + 1.0), mean, var,
                                                 torch.ones((), dtype=mean.dtype), points)


class BernoulliPrediction(Prediction):
    """The shared prediction factors, queried for the latent f (no target scaler, no noise)."""

    @torch.no_grad()
    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the latent f at x (N × D, world units), (N,) each."""
        self.require_ready()
        model = self.model
        cross = KernelCross(model.covariance, model.inducing, self.scaled_inputs(x))
        mean, var = marginals(cross, self.factors, model.amplitude.to(TERMS_DTYPE))
        return mean.cpu().numpy(), var.sqrt().cpu().numpy()


class BernoulliDualGP(DualGP):
    """The dual GP of binary labels (0/1) with a probit link (see the module docstring)."""

    method = "dual-gp-bernoulli"
    prediction_type = BernoulliPrediction
    channel_likelihoods = ("bernoulli",)

    def __init__(self, config=None, input_dim: int = 2, blr_rate: float = 0.8,
                 blr_steps: int = 10):
        super().__init__(config, input_dim)
        self.blr_rate, self.blr_steps = blr_rate, blr_steps

    def add_data(self, x, y) -> BatchReport:
        """As :meth:`OnlineSparseGP.add_data`; labels other than 0, 1 (or non-finite, dropped
        there) make the batch malformed."""
        labels = np.asarray(y, dtype=float)
        if (np.isfinite(labels) & (labels != 0.0) & (labels != 1.0)).any():
            self.rejections[MALFORMED_BATCH] += 1
            raise InvalidBatchError("Bernoulli labels must be 0 or 1")
        return super().add_data(x, y)

    def _scaled(self, index: np.ndarray) -> tuple[Tensor, Tensor]:
        """Inputs scaled, labels mapped to ±1 (no target scaler)."""
        x = self.x_scaler.transform(self.buffer.x[index])
        y = 2.0 * self.buffer.y[index] - 1.0
        return (torch.as_tensor(x, dtype=self.dtype, device=self.device),
                torch.as_tensor(y, dtype=self.dtype, device=self.device))

    def _condition(self, k_chol: Tensor, rest: tuple[Tensor, Tensor], cross: CrossCovariance,
                   y_new: Tensor, mem_cross: CrossCovariance, y_mem: Tensor) -> Conditioned:
        """The Bayesian-learning-rule iterations of the batch's and memory's sites."""
        zeros = torch.zeros(len(y_new), dtype=TERMS_DTYPE, device=self.device)
        batch_sites = (zeros, zeros)
        memory_sites = tuple(self.memory_sites[:, j].to(self.device) for j in (0, 1))
        for _ in range(self.blr_steps):
            posterior, _, _ = self._site_posterior(k_chol, rest, cross, batch_sites, mem_cross,
                                                   memory_sites)
            cache = prediction_cache(k_chol, posterior)
            batch_sites = self._blr_step(batch_sites, cross, cache, y_new)
            memory_sites = self._blr_step(memory_sites, mem_cross, cache, y_mem)
        posterior, total, batch = self._site_posterior(k_chol, rest, cross, batch_sites,
                                                       mem_cross, memory_sites)
        return Conditioned(posterior, total, batch, batch_sites, memory_sites)

    def _site_posterior(self, k_chol: Tensor, rest: tuple[Tensor, Tensor],
                        cross: CrossCovariance, batch_sites: tuple[Tensor, Tensor],
                        mem_cross: CrossCovariance, memory_sites: tuple[Tensor, Tensor]
                        ) -> tuple[VariationalPosterior, tuple[Tensor, Tensor],
                                   tuple[Tensor, Tensor]]:
        """q(u) of the carried sites plus those of the batch and memory; the total sites and the
        batch's share of them."""
        batch = site_terms(cross, *batch_sites)
        memory = site_terms(mem_cross, *memory_sites)
        total = tuple(r + b + m for r, b, m in zip(rest, batch, memory))
        one = torch.ones((), dtype=TERMS_DTYPE, device=self.device)
        posterior = optimal_posterior(k_chol, *total, one, self.config.max_jitter_tries)
        return posterior, total, batch

    def _blr_step(self, sites: tuple[Tensor, Tensor], cross: CrossCovariance,
                  cache: PredictionCache, y: Tensor) -> tuple[Tensor, Tensor]:
        """One damped step (Eq. 23, site form) towards (β̂_i, β̂_i μ_i + α̂_i) at q(u)."""
        mean, var = marginals(cross, cache, self.amplitude.detach().to(TERMS_DTYPE))
        _, alpha, beta = probit_expectations(y.to(TERMS_DTYPE), mean, var)
        target = (beta.clamp_min(1e-12), beta * mean + alpha)
        rate = self.blr_rate
        return tuple((1.0 - rate) * old + rate * new for old, new in zip(sites, target))

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        num_old = self.num_fitted - len(y_new)
        x_mem, y_mem = self._scaled(self.memory_rows[self.memory_rows < num_old])
        return DualObjective(self, x_new, y_new, x_mem, y_mem, num_old)

    def _expected_log_lik(self, mean: Tensor, var: Tensor, y: Tensor) -> Tensor:
        return probit_expectations(y, mean, var)[0]

    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the latent f at x (N × D, world units), (N,) each:
        :meth:`BernoulliPrediction.predict`. The other arguments are the mappers' interface: a
        label has no observation noise to include, and the kernel blocks are bounded by
        memory, evaluated in the model's precision."""
        return self.prediction.predict(x)

    def predict_proba(self, x) -> np.ndarray:
        """P(y = 1) at x (N × D, world units): ∫ Φ(f) q(f) df = Φ(μ/√(1 + v)), (N,)."""
        mean, std = self.predict(x)
        return ndtr(mean / np.sqrt(1.0 + std ** 2))
