"""Exact GP regression: the oracle for small data sets (O(N³) per update, O(N²) memory).

Rasmussen & Williams (2006), Algorithm 2.1. With all N samples (X, y) and K = a·k(X, X):

    L = chol(K + σ²I),   mean(x*) = k*ᵀ (K + σ²I)⁻¹ y = (L⁻¹k*)ᵀ (L⁻¹y),
    var(x*) = a − |L⁻¹k*|²

Hyper-parameters: Adam on the exact negative log marginal likelihood per sample,
½ yᵀ(K + σ²I)⁻¹y / N + Σ log L_ii / N + ½ log 2π, with all data in every step.

Prediction reuses the shared sparse-GP code with the training inputs in the place of the
inducing inputs: L⁻¹y in the place of L⁻¹m and no posterior covariance term. The model refuses
data beyond ``exact.max_samples`` (:class:`ExactGPSizeError`) rather than grind to a halt.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.linalg import robust_cholesky, solve_lower
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.posterior import TERMS_DTYPE, PredictionCache
from poam_ros.models.prediction import Prediction
from poam_ros.models.report import UpdateReport
from poam_ros.models.samples import BatchReport, InvalidBatchError, as_batch, filter_samples
from poam_ros.models.sparse_gp import OnlineSparseGP


class ExactGPSizeError(ValueError):
    """A batch would take the exact GP beyond ``MappingConfig.exact.max_samples``."""


class ExactPrediction(Prediction):
    """The shared prediction with the fitted samples in the place of Z: [α, Q] =
    [(K + σ²I)⁻¹y, (K + σ²I)⁻¹]."""

    def exact_factors(self, x: Tensor, y: Tensor) -> PredictionCache:
        """μ = k (K + σ²I)⁻¹ y and v = a − k (K + σ²I)⁻¹ kᵀ in the shared prediction form,
        in TERMS_DTYPE as every model's factors."""
        model = self.model
        k = model.covariance(x, x).to(TERMS_DTYPE)
        eye = torch.eye(len(x), dtype=TERMS_DTYPE, device=x.device)
        # The noise term bounds the conditioning: no jitter unless round-off makes it fail.
        chol = robust_cholesky(k + model.noise.to(TERMS_DTYPE) * eye, 0.0,
                               model.config.max_jitter_tries, "K + σ²I of the exact GP")
        return PredictionCache(torch.cholesky_solve(y.to(TERMS_DTYPE).unsqueeze(-1),
                                                    chol).squeeze(-1),
                               torch.cholesky_inverse(chol))

    @torch.no_grad()
    def refresh(self, cache: Tensor | None = None) -> None:
        """The factors of the fitted samples under the current hyper-parameters (``cache``,
        of inducing inputs, does not apply)."""
        x, y = self.model._scaled(np.arange(len(self.model.inducing)))
        self.factors = self.exact_factors(x, y)


class ExactGP(OnlineSparseGP):
    method = "exact"
    prediction_type = ExactPrediction

    def add_data(self, x, y) -> BatchReport:
        """As :meth:`OnlineSparseGP.add_data`, but a batch that would take the data beyond
        ``exact.max_samples`` is refused whole with :class:`ExactGPSizeError`."""
        try:
            x_checked, y_checked = as_batch(x, y, self.input_dim)
        except InvalidBatchError:
            return super().add_data(x, y)  # counted and raised there
        probe = filter_samples(x_checked, y_checked, self.intake.seen)[2]
        limit = self.config.exact.max_samples
        if self.num_samples + probe.accepted > limit:
            raise ExactGPSizeError(
                f"the exact GP holds {self.num_samples} samples and refuses {probe.accepted} "
                f"more: MappingConfig.exact.max_samples is {limit} (it costs O(N³) per update); "
                f"use a sparse method for more data")
        return super().add_data(x, y)

    def fix_inducing_inputs(self, z) -> None:
        raise ValueError("the exact GP conditions on every sample; it has no inducing inputs")

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        x_all, y_all = self._scaled(self._data_so_far(x_new))
        factors = self.prediction.exact_factors(x_all, y_all)
        self.inducing, self.prediction.factors = x_all, factors

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        return ExactMarginalLikelihood(self)


class ExactMarginalLikelihood(TrainingObjective):
    """−log p(y | θ) / N of all fitted samples, by autograd through the Cholesky factor."""

    def __init__(self, model: ExactGP):
        self.model = model
        self.x, self.y = model._scaled(np.arange(len(model.inducing)))

    def loss(self) -> Tensor:
        model, x, y = self.model, self.x, self.y
        k = model.covariance(x, x) + model.noise * torch.eye(len(x), dtype=x.dtype, device=x.device)
        chol = robust_cholesky(k, 0.0, model.config.max_jitter_tries, "K + σ²I during training")
        alpha = solve_lower(chol, y.unsqueeze(-1))
        return (0.5 * alpha.square().sum() + chol.diagonal().log().sum()) / len(y) \
            + 0.5 * math.log(2 * math.pi)
