"""The base of the multi-channel (multi-task) mapping methods: D channels of one survey.

Moreno-Muñoz, Artés-Rodríguez, Álvarez, "Continual Multi-task Gaussian Processes" (2019): the
channels are the outputs of a linear model of coregionalisation (:mod:`.lmc`). Everything the
single-channel models share (the update transaction, the inducing-input selection, the
M-step's Adam or L-BFGS, bad-input counting, the state file) is inherited from
:class:`~.sparse_gp.OnlineSparseGP`; this class adds what several channels change:

* ``add_data(x, y)`` takes y (N × D) with NaN where a channel was not measured (heterotopic
  data); a row is rejected (``nonfinite_target``) only when no channel is finite. With D = 1,
  y may be (N,) as for the single-channel models.
* Per-channel target scalers (:class:`ChannelScalers`): a channel stays out of the model until
  it has ``channel_min_samples`` (K) samples; its scaler is then fitted on its samples so far
  (the pilot survey's, or about its first K for a slow channel) and frozen, and its earlier
  samples join the E-step of that update (once).
* ``predict(x)`` returns means and standard deviations (N × D; (N,) arrays when D = 1, the
  single-channel API) and with ``covariance=True`` the cross-channel covariance (N × D × D);
  for a non-Gaussian channel those of its latent f_d, and :meth:`predict_response` its
  expected observation (a probability, a rate). A channel not in the model yet predicts NaN.
* Each channel's likelihood (``mapping.channel_likelihoods``, :mod:`.likelihoods`): a
  non-Gaussian channel's targets (labels 0/1, counts) are checked, not scaled, and it has no
  noise variance (``noise_<d>`` NaN).
* Q latent kernels (each the configured kernel, ``num_latents``), mixing weights a (Q × D,
  each latent's row of unit length, so that the latents' amplitudes alone scale the channels'
  variances: :class:`~.lmc.LMCKernel`) and a noise variance per channel, all learned by the
  M-step. The inducing inputs are shared by the latents and chosen by the shared
  pivoted-Cholesky selection on the latents' summed kernel.

:meth:`diagnostics` (the mapping loop adds them to ``UpdateReport.extra``): ``noise_<d>``
(channel d's noise variance, scaled units),
``noise_std_<d>`` (its noise standard deviation σ_d in target units, NaN until in the model),
``correlation_<d>_<e>`` (d < e, the channels' prior correlation, :meth:`channel_correlation`),
``active_channels`` (channels in the model), ``num_latents`` (Q); the update's own
``pcd_trace_error`` as the single-channel models'.
"""

from __future__ import annotations

import copy
import functools

import gpytorch
import numpy as np
import torch
from torch import Tensor

from poam_ros.kernels import make_kernel
from poam_ros.models import state as model_state
from poam_ros.models.buffer import SampleBuffer
from poam_ros.models.intake import Intake
from poam_ros.models.likelihoods import LIKELIHOODS
from poam_ros.models.linalg import NumericalError, robust_cholesky
from poam_ros.models.lmc import LMCKernel, block_cholesky, predictive_covariance
from poam_ros.models.posterior import TERMS_DTYPE
from poam_ros.models.prediction import Prediction
from poam_ros.models.report import UpdateReport
from poam_ros.models.samples import InvalidBatchError
from poam_ros.models.sparse_gp import OnlineSparseGP
from poam_ros.scalers import StandardScaler


class ChannelScalers:
    """One :class:`~poam_ros.scalers.StandardScaler` per channel, each fitted once, at the first
    update where its channel has at least ``min_samples`` samples, on all of them, then frozen.

    A channel with samples in the pilot survey is so scaled as the single-channel models scale
    (on the pilot), a slow channel on about its first ``min_samples``. Fitting every channel on
    exactly its first K samples would scale a dense channel on its first seconds: in a 750-sample
    mission on the embedded terrain (K = 20) that made the predictive standard deviations ~10×
    too small (MSLL 42 against POAM's −0.55)."""

    def __init__(self, output_dim: int, min_samples: int, standardised: list[bool] | None = None):
        self.scalers = [StandardScaler() for _ in range(output_dim)]
        self.min_samples = min_samples
        #: per channel: False for a non-Gaussian one, whose targets (labels, counts) its
        #: likelihood reads as they are (fitted to the identity)
        self.standardised = [True] * output_dim if standardised is None else list(standardised)

    @property
    def active(self) -> np.ndarray:
        """Which channels are fitted, so in the model (D,)."""
        return np.array([scaler.fitted for scaler in self.scalers])

    def fit(self, y: np.ndarray) -> list[int]:
        """Fit every unfitted channel with at least ``min_samples`` finite values in y (N × D;
        (N,) for one channel) on them; returns the channels fitted now."""
        y, fresh = np.reshape(y, (len(y), len(self.scalers))), []
        for d, scaler in enumerate(self.scalers):
            values = y[:, d][np.isfinite(y[:, d])]
            if not scaler.fitted and len(values) >= self.min_samples:
                if self.standardised[d]:
                    scaler.fit(values)
                else:
                    scaler.mean, scaler.std = 0.0, 1.0
                fresh.append(d)
        return fresh

    def _columns(self, values: np.ndarray, method: str) -> np.ndarray:
        out = np.full(values.shape, np.nan)
        for d, scaler in enumerate(self.scalers):
            if scaler.fitted:
                out[:, d] = getattr(scaler, method)(values[:, d])
        return out

    def transform(self, y: np.ndarray) -> np.ndarray:
        """Scaled targets (N × D); NaN for channels not fitted."""
        return self._columns(y, "transform")

    def inverse_mean(self, mean: np.ndarray) -> np.ndarray:
        return self._columns(mean, "inverse_mean")

    def inverse_std(self, std: np.ndarray) -> np.ndarray:
        return self._columns(std, "inverse_std")

    @property
    def stds(self) -> np.ndarray:
        """Target units per scaled unit (D,), NaN for channels not fitted."""
        return np.array([scaler.std if scaler.fitted else np.nan for scaler in self.scalers])

    def state_dict(self) -> dict:
        return {"min_samples": self.min_samples, "standardised": self.standardised,
                "channels": [scaler.state_dict() if scaler.fitted else None
                             for scaler in self.scalers]}

    @classmethod
    def from_state_dict(cls, state: dict) -> "ChannelScalers":
        scalers = cls(len(state["channels"]), int(state["min_samples"]),
                      state.get("standardised"))
        scalers.scalers = [StandardScaler() if channel is None
                           else StandardScaler.from_state_dict(channel)
                           for channel in state["channels"]]
        return scalers


class ChannelBuffer(SampleBuffer):
    """The sample buffer with D targets per sample (N × D, NaN where not measured). ``y`` is
    (N,) when D = 1, as the single-channel buffer's (the mapper and the mission read it);
    :attr:`channels` is always N × D."""

    def __init__(self, input_dim: int, output_dim: int, capacity: int = 1024):
        super().__init__(input_dim, capacity)
        self._y = np.empty((capacity, output_dim))

    def append(self, x: np.ndarray, y: np.ndarray) -> None:
        super().append(x, np.reshape(y, (len(x), self._y.shape[1])))

    @property
    def channels(self) -> np.ndarray:
        return self._y[:self.size]

    @property
    def y(self) -> np.ndarray:
        return self.channels[:, 0] if self._y.shape[1] == 1 else self.channels


def initial_mixing(num_latents: int, output_dim: int) -> Tensor:
    """The raw weights r_{q,d} = 1 where d ≡ q (mod Q), else 0.1 (a: their rows at unit length,
    :class:`~.lmc.LMCKernel`): every channel starts on a latent of its own where Q ≥ D, and the
    small weights let every channel's gradient reach every latent."""
    q, d = np.meshgrid(np.arange(num_latents), np.arange(output_dim), indexing="ij")
    return torch.as_tensor(np.where(d % num_latents == q, 1.0, 0.1))


class MultiTaskPrediction(Prediction):
    """The shared prediction factors over the latents' stacked inducing outputs (QM), queried
    for every channel and their cross-covariance (:func:`~.lmc.predictive_covariance`)."""

    @torch.no_grad()
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None, covariance: bool = False):
        """Per-channel predictive means and standard deviations at x (N × input_dim, world
        units), in target units: two (N × D) float64 arrays, or (N,) arrays when D = 1; with
        ``covariance`` also the cross-channel covariance (N × D × D). NaN for a channel not in
        the model yet. ``include_noise`` adds each channel's noise variance (a new measurement
        rather than the field); ``kernel_dtype`` evaluates K(x, Z) in that precision (see
        :meth:`OnlineSparseGP.predict`). Variances are floored at 1e-9 of the prior's."""
        self.require_ready()
        model, factors = self.model, self.factors
        x = self.scaled_inputs(x)
        kernel = model.kernel
        if kernel_dtype not in (None, model.dtype):
            kernel = copy.deepcopy(model.kernel).to(kernel_dtype)
        z = model.inducing.to(kernel.mixing.dtype)
        # The products with the factors in TERMS_DTYPE, as Prediction.predict's.
        scales, mixing = model.kernel.scales.to(TERMS_DTYPE), model.mixing.to(TERMS_DTYPE)
        means, covs = [], []
        for block in x.split(block_rows):
            block = block.to(z.dtype)
            k_fu = torch.cat([kernel.latent_covariance(q, block, z)
                              for q in range(kernel.num_latents)], 1).to(TERMS_DTYPE)
            mean, cov = predictive_covariance(k_fu, factors.alpha, factors.q, scales, mixing)
            means.append(mean)
            covs.append(cov)
        channels = model.output_dim
        mean = torch.cat(means) if means else x.new_empty(0, channels, dtype=TERMS_DTYPE)
        cov = torch.cat(covs) if covs else x.new_empty(0, channels, channels, dtype=TERMS_DTYPE)
        prior = (mixing.square() * scales.unsqueeze(1)).sum(0)
        var = cov.diagonal(dim1=1, dim2=2)
        var.copy_(var.clamp_min(1e-9 * prior))
        if include_noise:
            var += (model.noise * model.gaussian_channels).to(TERMS_DTYPE)
        mean, cov = mean.cpu().double().numpy(), cov.cpu().double().numpy()  # two transfers
        std = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
        active = model.y_scaler.active
        if not (np.isfinite(mean[:, active]).all() and np.isfinite(cov[:, active][:, :, active])
                .all()):
            raise NumericalError("prediction is not finite")
        mean, std = model.y_scaler.inverse_mean(mean), model.y_scaler.inverse_std(std)
        stds = model.y_scaler.stds
        cov = cov * stds[:, None] * stds[None, :]
        if channels == 1:
            mean, std = mean[:, 0], std[:, 0]
        return (mean, std, cov) if covariance else (mean, std)


class MultiTaskSparseGP(OnlineSparseGP):
    """Online sparse LMC over inputs of dimension ``input_dim`` with ``output_dim`` channels."""

    prediction_type = MultiTaskPrediction

    channel_likelihoods = tuple(LIKELIHOODS)

    def __init__(self, config=None, input_dim: int = 2, output_dim: int = 1):
        if int(output_dim) < 1:
            raise ValueError(f"output_dim must be at least 1, got {output_dim}")
        self.output_dim = int(output_dim)
        super().__init__(config, input_dim)
        config = self.config
        # Latent 0 is the kernel the base built after seeding: with Q = 1 the initial kernel is
        # that of the single-channel models.
        latents = [self.kernel] + [make_kernel(config.kernel, input_dim, config)
                                   for _ in range(1, config.num_latents)]
        self.kernel = LMCKernel(latents, initial_mixing(config.num_latents, self.output_dim)).to(
            self.device, self.dtype)
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_constraint=gpytorch.constraints.GreaterThan(config.min_noise_variance),
            batch_shape=torch.Size([self.output_dim])).to(self.device, self.dtype)
        self.likelihood.noise = config.initial_noise_variance
        self.trainer = self._make_trainer()
        self.intake = Intake(input_dim, ChannelBuffer(input_dim, self.output_dim),
                             ChannelScalers(self.output_dim, config.channel_min_samples,
                                            [p.gaussian for p in self.likelihoods]),
                             self._as_batch)
        self._backlog: tuple[np.ndarray, list[int]] | None = None
        self._estep_batch: tuple[Tensor, Tensor] | None = None

    # ------------------------------------------------------------------ data intake
    def _as_batch(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """x (N × input_dim) in world units, y (N × D) in target units with NaN where a
        channel was not measured ((N,) also when D = 1); non-finite targets count as not
        measured, so :meth:`add_data` drops only rows without any channel."""
        try:
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        except (TypeError, ValueError) as err:
            raise InvalidBatchError(f"samples are not numeric arrays: {err}") from None
        if x.ndim == 1 and self.input_dim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            raise InvalidBatchError(f"inputs must have shape (N, {self.input_dim}), got {x.shape}")
        if y.ndim == 1 and self.output_dim == 1:
            y = y[:, None]
        if y.shape != (x.shape[0], self.output_dim):
            raise InvalidBatchError(f"targets must have shape ({x.shape[0]}, {self.output_dim}), "
                                    f"got {y.shape}")
        y = np.where(np.isfinite(y), y, np.nan)  # ±inf: not measured
        for d, likelihood in enumerate(self.likelihoods):
            if not likelihood.check(y[:, d]):
                raise InvalidBatchError(f"channel {d} is {likelihood.name}: its targets must "
                                        f"be {likelihood.targets}")
        return x, y

    # ------------------------------------------------------------------ update
    def update(self, max_new: int | None = None) -> UpdateReport:
        """As :meth:`OnlineSparseGP.update`, after fitting the scalers of the channels that
        reached ``channel_min_samples`` (their earlier samples join this E-step)."""
        scalers = copy.deepcopy(self.y_scaler)
        count = self.intake.pending(max_new)
        first = self.num_fitted
        if self.x_scaler.fitted and count > 0:  # the first update fits them in the base
            fresh = self.y_scaler.fit(self.buffer.channels[:first + count])
            if fresh:
                measured = np.isfinite(self.buffer.channels[:first][:, fresh]).any(axis=1)
                self._backlog = np.flatnonzero(measured), fresh
        try:
            report = super().update(max_new)
        except Exception:
            self.intake.y_scaler = scalers  # as before the channels fitted here
            raise
        finally:
            self._backlog = self._estep_batch = None
        return report

    def diagnostics(self) -> dict:
        """After an update, per channel (see the module docstring)."""
        noise = self.noise.detach().cpu().tolist()
        correlation = self.channel_correlation()
        pairs = {f"correlation_{d}_{e}": float(correlation[d, e])
                 for d in range(self.output_dim) for e in range(d + 1, self.output_dim)}
        gaussian = np.array([p.gaussian for p in self.likelihoods])
        noise = np.where(gaussian, noise, np.nan).tolist()  # none for a non-Gaussian channel
        noise_std = np.sqrt(noise) * self.y_scaler.stds  # NaN for channels not in the model
        return {"num_latents": self.config.num_latents,
                "active_channels": int(self.y_scaler.active.sum()),
                **{f"noise_{d}": value for d, value in enumerate(noise)},
                **{f"noise_std_{d}": float(value) for d, value in enumerate(noise_std)},
                **pairs}

    def channel_correlation(self) -> np.ndarray:
        """The prior correlations between channels of Σ_q s_q a_q a_qᵀ (D × D): how much one
        channel's data inform another's map (0 for a channel without weight)."""
        mixing = self.mixing.detach().cpu().double().numpy()
        cov = mixing.T @ (self.kernel.scales.detach().cpu().double().numpy()[:, None] * mixing)
        scale = np.sqrt(np.diag(cov))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num(cov / np.outer(scale, scale))

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        """The base E-step, on the batch plus, once, the earlier samples of channels that have
        just entered the model (those channels only). The batch used is kept for the M-step."""
        if self._backlog is not None:
            rows, fresh = self._backlog
            x_old, y_old = self._scaled(rows)
            keep = torch.zeros(self.output_dim, dtype=torch.bool, device=y_old.device)
            keep[fresh] = True
            y_old = torch.where(keep, y_old, torch.full_like(y_old, float("nan")))
            x_new, y_new = torch.cat([x_old, x_new]), torch.cat([y_old, y_new])
        self._estep_batch = x_new, y_new
        super()._update_posterior(x_new, y_new, report)

    def _scaled(self, index: np.ndarray) -> tuple[Tensor, Tensor]:
        """Buffered samples at ``index`` in scaled units (y: N × D, NaN where not measured or
        the channel is not in the model yet)."""
        x = self.x_scaler.transform(self.buffer.x[index])
        y = self.y_scaler.transform(self.buffer.channels[index])
        return (torch.as_tensor(x, dtype=self.dtype, device=self.device),
                torch.as_tensor(y, dtype=self.dtype, device=self.device))

    # ------------------------------------------------------------------ latent kernels
    @property
    def noise(self) -> Tensor:
        """σ_d² (D,), scaled units."""
        return self.likelihood.noise.reshape(-1)

    @property
    def gaussian_channels(self) -> Tensor:
        """1 for a Gaussian channel, 0 for another (D,), in the model's dtype."""
        return torch.as_tensor([float(p.gaussian) for p in self.likelihoods], dtype=self.dtype,
                               device=self.device)

    @property
    def term_noise(self) -> Tensor:
        """The noise variance each channel's data terms are divided by (D, detached): σ_d² for a
        Gaussian channel, 1 for another, whose terms carry their sites' precisions."""
        gaussian = self.gaussian_channels
        return self.noise.detach() * gaussian + (1.0 - gaussian)

    @property
    def heterogeneous(self) -> bool:
        """Whether some channel is not Gaussian (its E-step then iterates, :mod:`.sites`)."""
        return not all(p.gaussian for p in self.likelihoods)

    @property
    def mixing(self) -> Tensor:
        """a (Q × D)."""
        return self.kernel.mixing

    def latent_choleskys(self, inducing: Tensor, dtype: torch.dtype | None = None) -> list[Tensor]:
        """L_q = chol(s_q k_q(Z, Z) + jitter·s_q I), q = 1 … Q."""
        return [robust_cholesky(self.kernel.latent_covariance(q, inducing, inducing).to(
                    dtype or self.dtype), self.config.jitter, self.config.max_jitter_tries,
                    f"K_uu of latent {q}")
                for q in range(self.kernel.num_latents)]

    def k_uu_cholesky(self, inducing: Tensor, cache: Tensor | None = None,
                      dtype: torch.dtype | None = None) -> Tensor:
        """L = diag(L_1, …, L_Q) (QM × QM); ``cache`` is unused (the base's interface)."""
        return block_cholesky(self.latent_choleskys(inducing, dtype))

    def latent_inducing_cross(self, q: int, z1: Tensor, z2: Tensor) -> Tensor:
        """s_q k_q(z1, z2) plus the jitter of K_q(Z, Z) where z1 and z2 share a point (the
        single-channel :meth:`inducing_cross_covariance` per latent)."""
        k = self.kernel.latent_covariance(q, z1, z2)
        rows, cols = (z1[:, None, :] == z2[None, :, :]).all(-1).nonzero(as_tuple=True)
        if len(rows):
            jitter = (self.config.jitter * self.kernel.latents[q].outputscale).expand(len(rows))
            k = k.index_put((rows, cols), jitter.reshape(-1), accumulate=True)
        return k

    # ------------------------------------------------------------------ prediction
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None, covariance: bool = False):
        """Per-channel means and standard deviations at x (N × input_dim, world units), with
        ``covariance`` the cross-channel covariance: :meth:`MultiTaskPrediction.predict`."""
        return self.prediction.predict(x, include_noise, block_rows, kernel_dtype, covariance)

    def predict_response(self, x) -> np.ndarray:
        """E[y_d] at x (N × input_dim, world units) per channel (N × D; (N,) when D = 1): the
        mean of a Gaussian channel, P(y = 1) = Φ(μ/√(1 + v)) of a Bernoulli one, the rate
        e^{μ + v/2} of a Poisson one (:meth:`.likelihoods.Likelihood.response` of the latent
        f_d's N(μ, v))."""
        mean, std = (np.reshape(a, (len(a), self.output_dim)) for a in self.predict(x))
        out = mean.copy()
        for d, likelihood in enumerate(self.likelihoods):
            if not likelihood.gaussian:
                out[:, d] = likelihood.response(torch.as_tensor(mean[:, d]),
                                                torch.as_tensor(std[:, d] ** 2)).numpy()
        return out[:, 0] if self.output_dim == 1 else out

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {**super().state_dict(), "output_dim": self.output_dim}

    @classmethod
    def from_state(cls, state: dict, path, device: str | None = None) -> "MultiTaskSparseGP":
        """:meth:`OnlineSparseGP.from_state` with the saved number of channels."""
        build = functools.partial(cls, output_dim=int(state.get("output_dim", 1)))
        return model_state.rebuild(build, state, path, device)
