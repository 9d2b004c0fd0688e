"""A model's prediction: the factors computed once per update, and the queries answered from them.

:class:`Prediction` owns the :class:`~.posterior.PredictionCache` [α, Q] of its model's current
inducing inputs Z, q(u) and hyper-parameters. The model refreshes it after every M-step
(successful or restored) and after loading a state. A method whose factors are not those of
a sparse q(u) (the exact GP) or whose queries differ (the multi-channel models, the Bernoulli
dual GP) subclasses it and names the subclass in its ``prediction_type``.

Queries take inputs in world units and answer in target units: :meth:`Prediction.predict`,
μ = K_fu α and v = a − rowsum((K_fu Q) ⊙ K_fu) in blocks of rows, and
:meth:`Prediction.lengthscale_map`; :meth:`Prediction.conditioned_std`, the std after samples
planned but not yet taken (a fleet's teammates' paths). The prediction reads its model's
public parts (the intake's scalers, the kernel, Z and q(u)) and changes none of them.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.linalg import NumericalError, robust_cholesky, solve_lower
from poam_ros.models.posterior import TERMS_DTYPE, PredictionCache, prediction_cache

if TYPE_CHECKING:
    from poam_ros.models.sparse_gp import OnlineSparseGP


class ModelNotReadyError(RuntimeError):
    """Prediction or inspection before the first successful update."""

    def __init__(self, message: str = "the model has no posterior yet: add data and call "
                                      "update()"):
        super().__init__(message)


class ConditioningUnsupportedError(ValueError):
    """The method's predictions are not of the shared form that conditioning needs."""


class Prediction:
    """The prediction factors of ``model`` (None before its first update) and its queries."""

    def __init__(self, model: OnlineSparseGP):
        self.model = model
        self.factors: PredictionCache | None = None

    @property
    def ready(self) -> bool:
        return self.factors is not None

    @torch.no_grad()
    def refresh(self, cache: Tensor | None = None) -> None:
        """Factors for the model's current Z, q(u) and hyper-parameters, computed and kept in
        TERMS_DTYPE (see :meth:`predict`). ``cache``: the kernel's precomputed part of
        K(Z, Z) (``precompute``), if at hand."""
        model = self.model
        self.factors = prediction_cache(model.k_uu_cholesky(model.inducing, cache, TERMS_DTYPE),
                                        model.posterior.to(TERMS_DTYPE))

    def refresh_after_training(self, inducing_cache: tuple[Tensor, Tensor] | None) -> None:
        """:meth:`refresh` after an M-step, with the base stack of Z its objective kept
        (``inducing_cache()``) when that Z is still the model's."""
        keep = inducing_cache is not None and inducing_cache[0] is self.model.inducing
        self.refresh(inducing_cache[1] if keep else None)

    def scaled_inputs(self, x) -> Tensor:
        """Query inputs x (N × D, world units) checked and scaled, on the model's device."""
        model = self.model
        return torch.as_tensor(model.intake.scaled_query(x), dtype=model.dtype,
                               device=model.device)

    def require_ready(self) -> None:
        if self.factors is None:
            raise ModelNotReadyError()

    @torch.no_grad()
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None):
        """Predictive mean and standard deviation at x (N × D, world units).

        ``include_noise`` adds the observation noise: the distribution of a new measurement
        rather than of the field. Returns two (N,) float64 arrays in target units; the standard
        deviation is always positive (round-off is floored at 1e-9 of the prior variance).
        K(x, Z) is evaluated in the model's dtype, or in ``kernel_dtype`` from a copy of the
        kernel (float32 in a float64 model: on the core benchmark's map, 2,000 points in 0.75×
        the time, predictions within 5e-5 m in mean and 3e-5 m in standard deviation of a
        field of standard deviation 19 m). The products with the factors are TERMS_DTYPE's in
        any model: v is a difference of a and kᵀQk ≈ a, with Q of K_uu's condition (10⁶–10⁸);
        in float32 that difference was off by up to 2 % of a (at 2,300 samples of the default
        survey, where v itself is 0.08–2 % of a) and went negative, off by 2–3·10⁻⁶ a from
        float32 kernel values.
        """
        self.require_ready()
        model, factors = self.model, self.factors
        x = self.scaled_inputs(x)
        covariance = self._covariance(kernel_dtype)
        amplitude = model.amplitude.to(TERMS_DTYPE)
        # The results are allocated whole before the loop: small per-block results kept
        # between the blocks' large temporaries pin glibc's heap (250,000 points at M = 171
        # grew the resident memory by 0.65 GB; preallocated, by 0.02 GB).
        mean = x.new_empty(x.shape[0], dtype=TERMS_DTYPE)
        var = torch.empty_like(mean)
        for start in range(0, x.shape[0], block_rows):
            block = slice(start, start + block_rows)
            k_fu = covariance(x[block], model.inducing)
            mean[block] = k_fu @ factors.alpha
            var[block] = amplitude - ((k_fu @ factors.q) * k_fu).sum(1)
        var = var.clamp_min(1e-9 * amplitude)
        if include_noise:
            var = var + model.noise.to(TERMS_DTYPE)
        mean, std = torch.stack([mean, var.sqrt()]).cpu().double().numpy()  # one transfer
        if not (np.isfinite(mean).all() and np.isfinite(std).all()):
            raise NumericalError("prediction is not finite")
        return model.y_scaler.inverse_mean(mean), model.y_scaler.inverse_std(std)

    @property
    def conditions(self) -> bool:
        """Whether :meth:`conditioned_std` applies: the queries are the shared ones (a subclass
        that replaces :meth:`predict` answers in another form)."""
        return type(self).predict is Prediction.predict

    @torch.no_grad()
    def conditioned_std(self, x, t, include_noise: bool = False) -> np.ndarray:
        """Predictive std at x (N × D, world units) once noisy samples at t (T × D) are added,
        at the current hyper-parameters: (N,) in target units.

        A GP's predictive variance depends on where samples are, not on their values, so the
        samples at t need no targets. With Σ the current posterior covariance of f,

            Σ_xt = a·k(x, t) − K_xu Q K_ut,   v = diag Σ_xx − diag(Σ_xt (Σ_tt + σ²I)⁻¹ Σ_tx),

        Q = K_uu⁻¹ − K_uu⁻¹ S K_uu⁻¹ the prediction factor: the Gaussian conditioning of the
        model's posterior over f on the new samples. For the exact GP (Q = (K + σ²I)⁻¹ with
        its samples as u) that is its posterior with the samples added; for a sparse model
        it is the conditioning of its current posterior process, not the update it will
        make (which sees the samples only through u). Σ_tt + σ²I has eigenvalues ≥ σ², so
        its Cholesky needs no jitter. The kernel is evaluated in the model's dtype, the
        products in TERMS_DTYPE, in one block (N × T and N × M: a planner's thousands of
        candidates, not a map grid). A subclass that answers its queries otherwise (the
        multi-channel models, the Bernoulli dual GP) raises
        :class:`ConditioningUnsupportedError`.
        """
        if not self.conditions:
            raise ConditioningUnsupportedError(
                f"{self.model.method}: its predictions are not the single-channel Gaussian "
                f"form that conditioning on planned samples needs")
        self.require_ready()
        model = self.model
        x, t, z = self.scaled_inputs(x), self.scaled_inputs(t), model.inducing
        q = self.factors.q
        amplitude, noise = model.amplitude.to(TERMS_DTYPE), model.noise.to(TERMS_DTYPE)
        covariance = self._covariance()
        k_xu, k_tu = covariance(x, z), covariance(t, z)
        k_xu_q = k_xu @ q
        sigma_xt = covariance(x, t) - k_xu_q @ k_tu.T
        sigma_tt = covariance(t, t) - k_tu @ q @ k_tu.T
        sigma_tt = 0.5 * (sigma_tt + sigma_tt.T) + noise * torch.eye(
            len(t), dtype=TERMS_DTYPE, device=t.device)
        chol = robust_cholesky(sigma_tt, 0.0, model.config.max_jitter_tries, "Σ_tt + σ²I")
        gain = solve_lower(chol, sigma_xt.T)  # L⁻¹ Σ_tx, T × N
        var = amplitude - (k_xu_q * k_xu).sum(1) - gain.square().sum(0)
        var = var.clamp_min(1e-9 * amplitude)
        if include_noise:
            var = var + noise
        std = var.sqrt().cpu().double().numpy()
        if not np.isfinite(std).all():
            raise NumericalError("conditioned prediction is not finite")
        return model.y_scaler.inverse_std(std)

    def _covariance(self, kernel_dtype: torch.dtype | None = None):
        """a · k(x1, x2) in TERMS_DTYPE, for the products with the factors: evaluated in the
        model's dtype, or in ``kernel_dtype`` from a copy of the kernel."""
        model = self.model
        if kernel_dtype in (None, model.dtype):
            return lambda x1, x2: model.covariance(x1, x2).to(TERMS_DTYPE)
        kernel = copy.deepcopy(model.kernel).to(kernel_dtype)

        def covariance(x1: Tensor, x2: Tensor) -> Tensor:
            k = kernel.base_kernel.forward(x1.to(kernel_dtype), x2.to(kernel_dtype))
            return (kernel.outputscale * k).to(TERMS_DTYPE)
        return covariance

    @torch.no_grad()
    def lengthscale_map(self, x) -> np.ndarray:
        """Learned lengthscale at x (N × D, world units), in world units (N,).

        Scaled units are converted with the geometric mean of the per-axis scale factors.
        """
        self.require_ready()
        model = self.model
        scaled = model.kernel.base_kernel.lengthscale_map(self.scaled_inputs(x))
        factor = float(np.exp(np.log(model.x_scaler.half_range).mean()))
        return scaled.cpu().double().numpy() * factor
