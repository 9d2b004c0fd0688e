"""Independent channels: one single-channel map per channel, the baseline of the
multi-channel methods.

The LMC with Q = D latents and a = I (Moreno-Muñoz et al. 2019, Eq. 13): no channel informs
another. It takes and returns what :class:`~.multitask.MultiTaskSparseGP` does, so a mission,
the mapper and the benchmarks swap it for ``poam-mt`` or ``cmogp`` by name:

* ``add_data(x, y)``, y (N × D) with NaN where a channel was not measured, is the multi-task
  intake (the same rejections, the same buffer);
* at each update, channel d's POAM (:attr:`channels` [d]) takes the new rows where channel d
  was measured, and only those. The channels share the multi-task models' scalers: inputs
  fitted on the pilot survey's positions, targets per channel by
  :class:`~.multitask.ChannelScalers` (a channel enters once it has ``channel_min_samples``
  samples, with all of them). Channel d's map is then that of a lone ``poam`` given the same
  rows, scalers and seed;
* ``predict`` returns (N × D) means and standard deviations ((N,) when D = 1), NaN for a
  channel not in the model yet, and on request the cross-channel covariance, diagonal.

Each Gaussian channel is mapped by the family's single-channel method (``poam-independent``:
:class:`~.poam.POAM`; ``dual-gp-independent``: :class:`~.dual_gp.DualGP`), each Bernoulli
channel (``channel_likelihoods``) by the dual GP's probit model
(:class:`~.bernoulli.BernoulliDualGP`, the only single-channel method of binary labels): its
entries are its latent's, as a Bernoulli channel's of the joint methods, so the mapper's
probability and entropy layers, the planner's binary entropy and the scores read it alike.
Idle training (:meth:`refine`) trains each channel that refines on its own.

An update is one transaction over the channels: if one channel's update fails, every channel
stays as it was and the rows stay pending. ``UpdateReport`` sums the channels' times, losses
(the joint bound of independent models is the sum of theirs) and inducing inputs;
:meth:`diagnostics` (added to ``extra`` by the mapping loop) gives ``noise_<d>`` (channel d's
noise variance, scaled units), ``num_inducing_<d>``, ``active_channels`` and ``num_latents``
(D). :attr:`inducing` is the channels' inducing inputs stacked (each channel selects up to M
of its own, or takes the set fixed by :meth:`fix_inducing_inputs`); :meth:`lengthscale_map`
is the first channel's.

The inherited LMC kernel and likelihood are not used: each channel's model holds its own.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import torch

from poam_ros.models.bernoulli import BernoulliDualGP
from poam_ros.models.dual_gp import DualGP
from poam_ros.models.multitask import MultiTaskSparseGP
from poam_ros.models.poam import POAM
from poam_ros.models.report import UpdateReport
from poam_ros.models.sparse_gp import OnlineSparseGP


class IndependentChannels(MultiTaskSparseGP):
    """D single-channel maps over inputs of dimension ``input_dim``: a Gaussian channel's by
    :attr:`gaussian_method`, a Bernoulli channel's by :class:`BernoulliDualGP`."""

    method = "poam-independent"
    channel_likelihoods = ("gaussian", "bernoulli")
    #: the single-channel method of each Gaussian channel
    gaussian_method: type[OnlineSparseGP] = POAM

    def __init__(self, config=None, input_dim: int = 2, output_dim: int = 1):
        super().__init__(config, input_dim, output_dim)
        self.channels = [self._channel_model(likelihood.gaussian)
                         for likelihood in self.likelihoods]

    def _channel_model(self, gaussian: bool) -> OnlineSparseGP:
        """A lone model of this model's settings (and seed) for one channel."""
        cls = self.gaussian_method if gaussian else BernoulliDualGP
        return cls(self.config.replace(method=cls.method, channel_likelihoods=[]),
                   self.input_dim)

    @property
    def ready(self) -> bool:
        return any(channel.ready for channel in self.channels)

    @property
    def refines(self) -> bool:
        """Whether some channel's method refines (:meth:`OnlineSparseGP.refines`)."""
        return any(channel.refines for channel in self.channels)

    def refine(self, steps: int) -> UpdateReport:
        """``steps`` more Adam steps of each ready channel that refines, each transactional on
        its own (the channels share no parameters); the report sums the channels'."""
        report = UpdateReport(num_samples=self.num_samples,
                              num_inducing=self.inducing.shape[0] if self.ready else 0)
        if steps <= 0 or not self.ready:
            return report
        reports = {d: channel.refine(steps) for d, channel in enumerate(self.channels)}
        failures = [f"channel {d}: {r.training_failure}" for d, r in reports.items()
                    if r.training_failure]
        report.training_failure = "; ".join(failures) or None
        losses = [r.loss for r in reports.values() if r.training_time]
        report.loss = sum(losses) if losses else math.nan
        report.training_time = report.total_time = sum(r.training_time for r in
                                                       reports.values())
        return report

    # ------------------------------------------------------------------ update
    def update(self, max_new: int | None = None) -> UpdateReport:
        """Give each channel in the model its share of the oldest ``max_new`` pending rows
        (all by default; a channel entering now gets its earlier rows too), then update it."""
        report = UpdateReport(num_samples=self.num_samples)
        intake = self.intake
        count = intake.pending(max_new)
        if count <= 0:
            return report
        start = time.perf_counter()
        first, end = self.num_fitted, self.num_fitted + count
        saved = copy.deepcopy((self.channels, intake.x_scaler, intake.y_scaler))
        try:
            if not intake.x_scaler.fitted:
                intake.x_scaler.fit(intake.buffer.x)
            intake.y_scaler.fit(intake.buffer.channels[:end])
            reports = {d: self._update_channel(d, first, end) for d in range(self.output_dim)
                       if intake.y_scaler.scalers[d].fitted}
        except Exception:
            self.channels, intake.x_scaler, intake.y_scaler = saved
            raise
        intake.take(count)
        intake.num_updates += 1
        self.inducing = torch.cat([c.inducing for c in self.channels if c.ready])
        done = [r for r in reports.values() if not r.skipped]
        for key in ("inducing_time", "variational_time", "training_time"):
            setattr(report, key, sum(getattr(r, key) for r in done))
        report.loss = sum(r.loss for r in done) if done else math.nan
        failures = [f"channel {d}: {r.training_failure}" for d, r in reports.items()
                    if r.training_failure]
        report.training_failure = "; ".join(failures) or None
        report.num_new, report.num_inducing = count, self.inducing.shape[0]
        report.total_time = time.perf_counter() - start
        return report

    def _update_channel(self, d: int, first: int, end: int) -> UpdateReport:
        """Channel d's rows among [first, end) (from 0 when it enters now), then its update."""
        channel, intake = self.channels[d], self.intake
        if channel.num_samples == 0:  # enters now, on the shared scalers and fixed Z
            first = 0
            channel.intake.x_scaler = intake.x_scaler
            channel.intake.y_scaler = intake.y_scaler.scalers[d]
            channel.intake.fixed_z = intake.fixed_z
        y = self.buffer.channels[first:end, d]
        measured = np.isfinite(y)
        channel.add_data(self.buffer.x[first:end][measured], y[measured])
        return channel.update()

    def diagnostics(self) -> dict:
        """After an update, per channel (see the module docstring)."""
        extra = {"num_latents": self.output_dim,
                 "active_channels": int(sum(c.ready for c in self.channels))}
        for d, channel in enumerate(self.channels):
            gaussian = self.likelihoods[d].gaussian  # a Bernoulli channel has no noise
            extra[f"noise_{d}"] = channel.noise.item() if channel.ready and gaussian else \
                math.nan
            extra[f"num_inducing_{d}"] = channel.inducing.shape[0] if channel.ready else 0
        return extra

    def channel_correlation(self) -> np.ndarray:
        """The prior correlations between channels: none (I, D × D)."""
        return np.eye(self.output_dim)

    # ------------------------------------------------------------------ prediction
    @torch.no_grad()
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None, covariance: bool = False):
        """Each channel's predictive mean and standard deviation at x (N × input_dim, world
        units), in target units: two (N × D) arrays, (N,) when D = 1, NaN for a channel not in
        the model yet; with ``covariance`` also the cross-channel covariance (N × D × D),
        diagonal. The arguments are those of :meth:`OnlineSparseGP.predict`."""
        self._require_ready()
        self.prediction.scaled_inputs(x)  # refuses a malformed query as every model does
        x = np.asarray(x, dtype=float)
        mean = np.full((len(x), self.output_dim), np.nan)
        std = np.full_like(mean, np.nan)
        for d, channel in enumerate(self.channels):
            if channel.ready:
                mean[:, d], std[:, d] = channel.predict(x, include_noise, block_rows,
                                                        kernel_dtype)
        cov = std[:, :, None] * np.eye(self.output_dim) * std[:, None, :]
        if self.output_dim == 1:
            mean, std = mean[:, 0], std[:, 0]
        return (mean, std, cov) if covariance else (mean, std)

    def lengthscale_map(self, x) -> np.ndarray:
        """The learned lengthscale (N,), world units, of the first channel in the model (the
        depth's in a survey)."""
        self._require_ready()
        return next(c for c in self.channels if c.ready).lengthscale_map(x)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """The intake's state, the shared scalers and each channel's own state (None for a
        channel not in the model yet)."""
        self._require_ready()
        return {"config": self.config.to_dict(), **self.intake.state_dict(),
                "output_dim": self.output_dim,
                "channels": [c.state_dict() if c.ready else None for c in self.channels]}

    def load_state_dict(self, state: dict) -> None:
        self.intake.load_state_dict(state, self.device, self.dtype)
        if len(state["channels"]) != self.output_dim:
            raise ValueError(f"{len(state['channels'])} channel states for {self.output_dim} "
                             f"channels")
        for d, channel_state in enumerate(state["channels"]):
            if channel_state is not None:
                self.channels[d].load_state_dict(channel_state)
                # One scaler object per channel, as before saving.
                self.channels[d].intake.x_scaler = self.x_scaler
                self.channels[d].intake.y_scaler = self.y_scaler.scalers[d]
        self.inducing = torch.cat([c.inducing for c in self.channels if c.ready])


class DualGPChannels(IndependentChannels):
    """One dual GP per channel: ``dual-gp`` of a Gaussian channel, ``dual-gp-bernoulli`` of a
    Bernoulli one (a seabed class beside the depth)."""

    method = "dual-gp-independent"
    gaussian_method = DualGP
