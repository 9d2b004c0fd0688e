"""The base of every online sparse-GP mapping method: data intake, training, prediction, state.

Everything is shared, so that methods differ only in their published update rule:

* ``add_data(x, y)`` validates and buffers samples (world units), counting every rejection,
  in the model's :class:`~.intake.Intake` (samples, scalers, counters, a fixed Z);
* ``update()`` runs the E-step on the samples added since the last update, then the M-step
  (the :class:`~.training.Trainer`'s Adam or L-BFGS steps on a training objective),
  transactionally: a numerical failure leaves the previous model in place and is reported;
* ``predict(x)`` returns the mean and standard deviation in world units, never NaN, std > 0,
  from the factors its :class:`~.prediction.Prediction` keeps (refreshed after every M-step);
* ``save(path)`` / ``load(path)`` persist the whole state atomically.

A method states its rule through hooks:

* E-step, :meth:`_update_posterior`: by default inducing-input selection
  (:meth:`_choose_inducing`, greedy pivoted Cholesky on [Z; X_new] unless overridden; a fixed
  set after :meth:`fix_inducing_inputs`) followed by :meth:`_update_variational`, which sets
  q(u). Methods without that structure (exact GP, SVGP) override the whole E-step.
* M-step, :meth:`_training_objective`: by default the uncollapsed SVGP ELBO on mini-batches of
  all data with q(u) and Z fixed (POAM's); the objective may also train Z (class attribute
  ``optimizes_inducing``) or q(u), or be another bound (see :mod:`.objectives`); its
  mini-batches come from ``trainer.minibatch()``. :meth:`_after_training` runs after a
  successful M-step (e.g. SSGP re-optimises q(b)).

The scalers are fitted on the data present at the first update (the pilot survey) and then
frozen.
"""

from __future__ import annotations

import math
import time
from abc import ABC
from typing import Callable

import gpytorch
import numpy as np
import torch
from torch import Tensor

from poam_ros.inducing import PivotBlock, PivotedCholesky
from poam_ros.kernels import make_kernel
from poam_ros.models import state as model_state
from poam_ros.models import state_io
from poam_ros.models.batch_terms import KernelCross
from poam_ros.models.config import MappingConfig
from poam_ros.models.device import resolve_device
from poam_ros.models.intake import Intake
from poam_ros.models.likelihoods import LIKELIHOODS, Likelihood
from poam_ros.models.linalg import BatchTooLargeError, robust_cholesky
from poam_ros.models.objectives import FixedPosteriorElbo, TrainingObjective
from poam_ros.models.posterior import VariationalPosterior
from poam_ros.models.prediction import ModelNotReadyError, Prediction
from poam_ros.models.report import UpdateReport
from poam_ros.models.samples import BatchReport
from poam_ros.models.selection import InducingUpdate, pivot_blocks, pivoted_selection
from poam_ros.models.training import Trainer, TrainingTask
from poam_ros.params import ConfigError


class OnlineSparseGP(ABC):
    """Online sparse variational GP over inputs of dimension ``input_dim`` (2 for a map)."""

    #: Registry name of the method, also written into state files.
    method: str = ""
    #: Whether the M-step also trains the inducing inputs (by Adam, rate ``lr_inducing``).
    optimizes_inducing: bool = False
    #: Whether the M-step evaluates the whole new batch in every step (a collapsed bound):
    #: such a method refuses batches beyond ``max_whole_batch`` (:class:`BatchTooLargeError`).
    trains_on_whole_batch: bool = False
    #: The owner of the prediction factors and the queries answered from them.
    prediction_type: type[Prediction] = Prediction
    #: The likelihoods a channel of the method may have (:mod:`.likelihoods`), the first its
    #: default; ``mapping.channel_likelihoods`` names one per channel.
    channel_likelihoods: tuple[str, ...] = ("gaussian",)
    #: The channels (outputs) the model maps.
    output_dim: int = 1

    def __init__(self, config: MappingConfig | None = None, input_dim: int = 2):
        self.config = config or MappingConfig()
        self.input_dim = input_dim
        #: p_d(y | f) per channel, as declared
        self.likelihoods = self._declared_likelihoods()
        self.device = resolve_device(self.config.device)
        self.dtype = getattr(torch, self.config.dtype)
        torch.manual_seed(self.config.seed)  # the attention network's initial weights
        self.kernel = make_kernel(self.config.kernel, input_dim, self.config).to(self.device,
                                                                                 self.dtype)
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_constraint=gpytorch.constraints.GreaterThan(self.config.min_noise_variance)
        ).to(self.device, self.dtype)
        self.likelihood.noise = self.config.initial_noise_variance
        #: Seeded draws of the E-step's selections and of the M-step's mini-batches, in turn.
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.intake = Intake(input_dim)
        self.trainer = self._make_trainer()
        self.inducing: Tensor | None = None  # Z, M × D, scaled units
        self.posterior: VariationalPosterior | None = None
        self.prediction = self.prediction_type(self)

    def _declared_likelihoods(self) -> list[Likelihood]:
        """``mapping.channel_likelihoods`` (empty: the method's default for every channel);
        ``ConfigError`` unless it names one of the method's for each channel."""
        default = [self.channel_likelihoods[0]] * self.output_dim
        names = self.config.channel_likelihoods or default
        if len(names) != self.output_dim or not set(names) <= set(self.channel_likelihoods):
            raise ConfigError(f"mapping.channel_likelihoods {names}: {self.method} maps "
                              f"{self.output_dim} channel(s), each one of "
                              f"{list(self.channel_likelihoods)}")
        return [LIKELIHOODS[name] for name in names]

    def _make_trainer(self, fused: bool | None = None) -> Trainer:
        """The M-step over the current kernel and likelihood, with fused Adam by default on
        CUDA only (see :class:`~.training.Trainer`)."""
        return Trainer(self, self.device.type == "cuda" if fused is None else fused)

    # ------------------------------------------------------------------ data intake
    def add_data(self, x, y) -> BatchReport:
        """Validate and buffer samples: x (N × D) in world units, y (N,) in target units.

        Non-finite and exactly duplicated samples are dropped and counted by reason
        (:attr:`rejections`); a malformed batch raises :class:`InvalidBatchError` and is
        counted too. An empty batch is accepted and changes nothing.
        """
        return self.intake.add(x, y)

    # The intake's read-outs, which the mapping loop, the mission and the benchmarks read.
    buffer = property(lambda self: self.intake.buffer, doc="Every accepted sample, world units.")
    x_scaler = property(lambda self: self.intake.x_scaler, doc="World → scaled inputs.")
    y_scaler = property(lambda self: self.intake.y_scaler, doc="Target → scaled units.")
    rejections = property(lambda self: self.intake.rejections, doc="Refused samples by reason.")
    num_samples = property(lambda self: self.intake.num_samples, doc="Samples buffered.")
    num_pending = property(lambda self: self.intake.num_pending, doc="Samples not yet updated.")
    num_fitted = property(lambda self: self.intake.num_fitted, doc="Samples in an update.")
    num_updates = property(lambda self: self.intake.num_updates, doc="Successful updates.")
    fixed_inducing = property(lambda self: self.intake.fixed_inducing,
                              doc="Whether :meth:`fix_inducing_inputs` replaced selection.")

    @property
    def ready(self) -> bool:
        return self.prediction.ready

    # ------------------------------------------------------------------ update
    def update(self, max_new: int | None = None) -> UpdateReport:
        """E-step on the samples added since the last update (the oldest ``max_new`` of them
        when given; the rest stay pending), then the M-step.

        Raises :class:`NumericalError` if the posterior cannot be computed even with escalated
        jitter, :class:`BatchTooLargeError` (one) if the method cannot take so many new
        samples at once. Then, as after any other exception of the E-step, the previous model
        stays in place and the new samples stay pending (:meth:`set_aside_pending` drops
        them). A failure during the hyper-parameter steps restores the hyper-parameters of
        before the M-step and is reported in ``UpdateReport.training_failure``.
        """
        intake = self.intake
        report = UpdateReport(num_samples=intake.num_samples)
        count = intake.pending(max_new)
        if count <= 0:
            return report
        limit = self.config.max_whole_batch
        if self.trains_on_whole_batch and count > limit:
            raise BatchTooLargeError(
                f"{self.method} takes at most {limit} new samples per update (max_whole_batch: "
                f"its training evaluates the whole batch in every step), {count} are pending")
        start = time.perf_counter()
        unfitted = None if intake.x_scaler.fitted else intake.fit_scalers()
        first = intake.num_fitted
        x_new, y_new = self._scaled(np.arange(first, first + count))
        snapshot = self._posterior_snapshot()
        try:
            self.trainer.check_hyperparameters()
            with torch.no_grad():
                self._update_posterior(x_new, y_new, report)
        except Exception:
            self._restore_posterior(snapshot)
            if unfitted is not None:  # the scalers belong to the first update that succeeds
                intake.x_scaler, intake.y_scaler = unfitted
            raise
        intake.take(count)  # the M-step draws from the samples fitted so far
        report.variational_time = time.perf_counter() - start - report.inducing_time
        train_start = time.perf_counter()
        report.loss, report.training_failure = self._train_hyperparameters(x_new, y_new)
        report.training_time = time.perf_counter() - train_start
        intake.num_updates += 1
        report.num_new = count
        report.num_inducing = self.inducing.shape[0]
        report.total_time = time.perf_counter() - start
        return report

    @property
    def refines(self) -> bool:
        """Whether :meth:`refine` trains this method: its M-step is Adam on the shared
        objective (mini-batches of all fitted samples, q(u) fixed) with nothing after it, so
        that the objective between updates is the update's own and more steps continue its
        M-step. Not for a bound of the last batch (the streaming methods), an M-step that
        moves q(u) or the method's extras, or L-BFGS, which the update runs to convergence."""
        cls = type(self)
        return (cls._training_objective is OnlineSparseGP._training_objective
                and cls._after_training is OnlineSparseGP._after_training
                and self.config.m_step == "adam")

    def refine(self, steps: int) -> UpdateReport:
        """``steps`` more Adam steps of the last update's M-step (Z and q(u) as its E-step
        left them), then the prediction factors: the training a mapper runs in its idle time
        between updates (``mapping.idle_steps``). Transactional as the update's M-step: a
        numerical failure restores the hyper-parameters and is reported. A report with
        ``num_new`` 0 and no ``training_time`` when there is nothing to do (no map yet, no
        steps, a method that does not :attr:`refine <refines>`)."""
        report = UpdateReport(num_samples=self.num_samples,
                              num_inducing=self.inducing.shape[0] if self.ready else 0)
        if steps <= 0 or not self.ready or not self.refines:
            return report
        start = time.perf_counter()
        report.loss, report.training_failure = self._train_hyperparameters(None, None, steps)
        report.training_time = report.total_time = time.perf_counter() - start
        return report

    def set_aside_pending(self, count: int | None = None) -> int:
        """Drop the oldest ``count`` pending samples (all by default) from the model, counted
        under ``update_failed``: a batch whose update failed and that a retry cannot fix.
        Returns how many were dropped."""
        return self.intake.set_aside(count)

    def _data_so_far(self, x_new: Tensor) -> np.ndarray:
        """Buffer rows of every sample up to the E-step's batch ``x_new`` included, for the
        methods whose E-step reads all data (later pending samples excluded)."""
        return np.arange(self.num_fitted + len(x_new))

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        """E-step: set :attr:`inducing` and :attr:`posterior` from the newest batch (scaled
        units). May record ``report.inducing_time`` and ``report.extra``. By default: select the
        inducing inputs, then :meth:`_update_variational`."""
        start = time.perf_counter()
        if self.intake.fixed_z is not None:
            selection = self._inducing_blocks(self.intake.fixed_z, x_new)
        else:
            selection = self._choose_inducing(x_new, report)
        report.inducing_time = time.perf_counter() - start
        self._update_variational(selection, x_new, y_new)

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        """Set :attr:`inducing` to ``selection.inducing`` and :attr:`posterior` to the method's
        q(u) there. Assign only once everything is computed (a failure must change nothing)."""
        raise NotImplementedError(f"{type(self).__name__} defines no variational update")

    # ------------------------------------------------------------------ inducing inputs
    def fix_inducing_inputs(self, z) -> None:
        """Use the given inducing inputs (M × D, world units) from the next update on instead of
        the method's selection (and do not optimise them).

        Before the first update this fits the scalers on the data buffered so far.
        """
        self.intake.fix_inducing(z, self.dtype, self.device)

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        """Default selection (POAM, Sec. IV-B): greedy pivoted Cholesky on [Z; X_new], at most
        M pivots (:meth:`_pivoted_selection`), with their blocks (:func:`~.selection.pivot_blocks`:
        from the candidates' kernel matrix when formed, else from the factor)."""
        old = self.inducing
        candidates = x_new if old is None else torch.cat([old, x_new])
        pcd, k_cc = self._pivoted_selection(candidates, report)
        return pivot_blocks(candidates, old, pcd, k_cc, self.covariance,
                            self.inducing_cross_covariance,
                            lambda: self.config.jitter * self.amplitude)

    def _pivoted_selection(self, candidates: Tensor, report: UpdateReport, forced: int = 0,
                           on_block: Callable[[PivotBlock], Tensor] | None = None
                           ) -> tuple[PivotedCholesky, Tensor | None]:
        """Greedy PCD pivots (at most M) of the candidates, and their kernel matrix when it was
        formed (None otherwise): :func:`~.selection.pivoted_selection`, its relative trace
        error recorded as ``pcd_trace_error``."""
        rank = min(self.config.num_inducing, candidates.shape[0])
        pcd, k_cc = pivoted_selection(self.kernel, candidates, rank, self.config.pcd_tolerance,
                                      forced, on_block)
        report.extra["pcd_trace_error"] = pcd.trace_error / pcd.trace
        return pcd, k_cc

    def _inducing_blocks(self, z: Tensor, x_new: Tensor) -> InducingUpdate:
        """The blocks of :class:`InducingUpdate` for inducing inputs chosen otherwise."""
        k_old = None if self.inducing is None else self.inducing_cross_covariance(self.inducing, z)
        return InducingUpdate(z, self.covariance(z, z), KernelCross(self.covariance, z, x_new),
                              k_old)

    def _random_rows(self, count: int, k: int) -> Tensor:
        """min(k, count) distinct indices below ``count``, from the model's seeded generator."""
        return torch.randperm(count, generator=self.generator)[:min(k, count)].to(self.device)

    # ------------------------------------------------------------------ kernel helpers
    @property
    def amplitude(self) -> Tensor:
        return self.kernel.outputscale

    @property
    def noise(self) -> Tensor:
        return self.likelihood.noise.reshape(())

    def diagnostics(self) -> dict:
        """The learned noise after an update, for ``UpdateReport.extra`` (the mapping loop
        adds it, outside :meth:`update`: one host read): ``noise``, the variance in scaled
        units, and ``noise_std``, its standard deviation in the targets' units (m); with CUDA
        graphs, ``graph_captures``, the captures made (one per bucket unless recaptured)."""
        noise = float(self.noise.detach())
        figures = {"noise": noise, "noise_std": math.sqrt(noise) * self.y_scaler.std}
        if self.trainer.graphs.captures:  # mapping.cuda_graphs: captures so far, all buckets
            figures["graph_captures"] = sum(self.trainer.graphs.captures.values())
        return figures

    def covariance(self, x1: Tensor, x2: Tensor) -> Tensor:
        """a · k(x1, x2) as a dense tensor (scaled units)."""
        return self.amplitude * self.kernel.base_kernel.forward(x1, x2)

    def inducing_cross_covariance(self, z1: Tensor, z2: Tensor) -> Tensor:
        """a · k(z1, z2) plus the jitter of K_uu where a row of z1 equals a row of z2.

        The jitter added before factorising K_uu is treated as a white-noise term of the
        kernel, so the covariance between two sets of inducing inputs carries it where they
        share a point: with z1 = z2 this is the matrix :meth:`k_uu_cholesky` factorises, and
        carrying terms from Z to the same Z changes nothing.
        """
        k = self.covariance(z1, z2)
        rows, cols = (z1[:, None, :] == z2[None, :, :]).all(-1).nonzero(as_tuple=True)
        if len(rows):
            jitter = (self.config.jitter * self.amplitude).expand(len(rows))
            k = k.index_put((rows, cols), jitter, accumulate=True)
        return k

    def k_uu_cholesky(self, inducing: Tensor, cache: Tensor | None = None,
                      dtype: torch.dtype | None = None) -> Tensor:
        """Cholesky factor of K_uu (in ``dtype``, default the model's). ``cache`` is the
        kernel's ``precompute(inducing, inducing)`` if at hand: the same K_uu to the last bit
        as without it, at less cost."""
        base = self.kernel.base_kernel
        k_uu = self.amplitude * (base.from_precomputed(inducing, inducing, cache)
                                 if cache is not None else base.forward(inducing, inducing))
        return robust_cholesky(k_uu.to(dtype or self.dtype), self.config.jitter,
                               self.config.max_jitter_tries, "K_uu")

    # ------------------------------------------------------------------ M-step
    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        """What the M-step minimises (default: POAM's mini-batch ELBO with q(u) fixed, Z too
        unless the method ``optimizes_inducing`` and the inputs are not fixed)."""
        return FixedPosteriorElbo(self, self.optimizes_inducing and not self.fixed_inducing)

    def _after_training(self, x_new: Tensor, y_new: Tensor) -> None:
        """Runs after a successful M-step, under ``torch.no_grad`` (default: nothing)."""

    def _train_hyperparameters(self, x_new: Tensor | None, y_new: Tensor | None,
                               steps: int | None = None) -> tuple[float, str | None]:
        """The M-step after the E-step on (x_new, y_new) (None in :meth:`refine`, whose
        methods' objective reads no batch): ``steps`` (None: the update's) trainer steps on the
        method's objective, then the prediction factors; the final loss and the failure."""
        def finish(objective: TrainingObjective) -> None:
            objective.commit()
            self._after_training(x_new, y_new)
            self.prediction.refresh_after_training(objective.inducing_cache())

        return self.trainer.train(TrainingTask(
            lambda: self._training_objective(x_new, y_new), finish, self._posterior_snapshot,
            self._restore_posterior, self.prediction.refresh, steps))

    def _posterior_snapshot(self) -> tuple:
        """The E-step's outputs; E-steps assign new tensors, so references suffice."""
        return self.inducing, self.posterior, self._method_state()

    def _restore_posterior(self, snapshot: tuple) -> None:
        self.inducing, self.posterior, method_state = snapshot
        self._load_method_state(method_state)

    # ------------------------------------------------------------------ prediction
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None):
        """Predictive mean and standard deviation at x (N × D, world units), in target units:
        see :meth:`.Prediction.predict`."""
        return self.prediction.predict(x, include_noise, block_rows, kernel_dtype)

    def lengthscale_map(self, x) -> np.ndarray:
        """Learned lengthscale at x (N × D, world units), in world units (N,)."""
        return self.prediction.lengthscale_map(x)

    @property
    def inducing_inputs(self) -> np.ndarray:
        """The inducing inputs Z in world units (M × D)."""
        self._require_ready()
        return self.x_scaler.inverse(self.inducing.cpu().double().numpy())

    def _scaled(self, index: np.ndarray) -> tuple[Tensor, Tensor]:
        """Buffered samples at ``index`` in scaled units, on the model's device."""
        x = self.x_scaler.transform(self.buffer.x[index])
        y = self.y_scaler.transform(self.buffer.y[index])
        return (torch.as_tensor(x, dtype=self.dtype, device=self.device),
                torch.as_tensor(y, dtype=self.dtype, device=self.device))

    def _require_ready(self) -> None:
        if not self.ready:
            raise ModelNotReadyError()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Everything needed to continue exactly where this model is, as plain containers
        (the layout of :mod:`.state`)."""
        self._require_ready()
        return model_state.common_state(self, self._method_state())

    def _method_state(self) -> dict[str, Tensor]:
        """Tensors a method keeps beyond q(u) and Z (e.g. POAM's stored data terms)."""
        return {}

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        """Inverse of :meth:`_method_state`."""

    def save(self, path) -> None:
        """Write the whole state to ``path`` atomically (temporary file, then rename)."""
        state_io.write_state(path, self.method, self.state_dict())

    @classmethod
    def load(cls, path, device: str | None = None) -> "OnlineSparseGP":
        """Rebuild a model from a file written by :meth:`save`; nothing is half-loaded.

        ``device`` overrides the saved device setting (e.g. load a GPU model on a CPU).
        """
        return cls.from_state(state_io.read_state(path, cls.method), path, device)

    @classmethod
    def from_state(cls, state: dict, path, device: str | None = None) -> "OnlineSparseGP":
        """Rebuild a model from the checked ``state`` of the file ``path`` (see :meth:`load`);
        an inconsistent state is a :class:`~.state_io.StateFileError` naming the file."""
        return model_state.rebuild(cls, state, path, device)

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict` into a fresh model, then the prediction factors."""
        self._load_method_state(model_state.load_common_state(self, state))
        self.prediction.refresh()
