"""The base of every online sparse-GP mapping method: data intake, training, prediction, state.

Everything is shared, so that methods differ only in their published update rule:

* ``add_data(x, y)`` validates and buffers samples (world units), counting every rejection;
* ``update()`` runs the E-step on the samples added since the last update, then the M-step
  (Adam steps on a training objective), transactionally: a numerical failure leaves the
  previous model in place and is reported;
* ``predict(x)`` returns the mean and standard deviation in world units;
* ``save(path)`` / ``load(path)`` persist the whole state atomically.

A method states its rule through hooks:

* E-step, :meth:`_update_posterior`: by default inducing-input selection
  (:meth:`_choose_inducing`, greedy pivoted Cholesky on [Z; X_new] unless overridden; a fixed
  set after :meth:`fix_inducing_inputs`) followed by :meth:`_update_variational`, which sets
  q(u). Methods without that structure (exact GP, SVGP) override the whole E-step.
* M-step, :meth:`_training_objective`: by default the uncollapsed SVGP ELBO on mini-batches of
  all data with q(u) and Z fixed (POAM's); the objective may also train Z (class attribute
  ``optimizes_inducing``) or q(u), or be another bound (see :mod:`.objectives`).
  :meth:`_after_training` runs after a successful M-step (e.g. SSGP re-optimises q(b)).

The scalers are fitted on the data present at the first update (the pilot survey) and then
frozen.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from abc import ABC
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import gpytorch
import numpy as np
import torch
from torch import Tensor

from poam_ros.inducing import (
    BLOCKED_RATIO,
    PivotBlock,
    PivotedCholesky,
    greedy_pivots,
    pivoted_cholesky,
)
from poam_ros.kernels import make_kernel
from poam_ros.models import state_io
from poam_ros.models.batch_terms import CrossCovariance, DenseCross, FactorCross, KernelCross
from poam_ros.models.buffer import SampleBuffer
from poam_ros.models.config import MappingConfig
from poam_ros.models.device import resolve_device
from poam_ros.models.linalg import (
    BatchTooLargeError,
    DeferredChecks,
    NumericalError,
    deferred_checks,
    robust_cholesky,
)
from poam_ros.models.objectives import FixedPosteriorElbo, TrainingObjective, clone_tree
from poam_ros.models.posterior import PredictionCache, VariationalPosterior, prediction_cache
from poam_ros.models.samples import (
    MALFORMED_BATCH,
    BatchReport,
    InvalidBatchError,
    SeenSamples,
    as_batch,
    filter_samples,
)
from poam_ros.scalers import MinMaxScaler, StandardScaler

log = logging.getLogger(__name__)

#: Precision of the data terms a method accumulates over the whole mission and of the E-step
#: that turns them into q(u), whatever the model's dtype: in float32, the rounding of a sum
#: over thousands of samples makes C = K_uf K_fu indefinite by about 1e-7 of its norm, which
#: K_uu⁻¹ (condition 1e4 and more) amplifies past I + σ⁻² L⁻¹CL⁻ᵀ ≥ I.
TERMS_DTYPE = torch.float64

#: The largest candidates' kernel matrix the selection forms (beyond, it asks for columns).
DENSE_SELECTION_BYTES = 256 << 20


#: Most iterations of the L-BFGS M-step (``m_step = "lbfgs"``), which stops earlier once the
#: largest gradient entry, the loss change or the step is below ``LBFGS_TOLERANCE`` (torch's
#: default change tolerance, 1e-9, stopped it with gradients of 1e-3 on 60 samples).
LBFGS_MAX_ITERATIONS = 1000
LBFGS_TOLERANCE = 1e-12

#: Rejection reason of samples set aside after an update that failed on them.
UPDATE_FAILED = "update_failed"


class ModelNotReadyError(RuntimeError):
    """Prediction or inspection before the first successful update."""


@dataclass
class UpdateReport:
    """What one call of ``update()`` did. Times are wall-clock seconds."""

    num_new: int = 0
    num_samples: int = 0
    num_inducing: int = 0
    inducing_time: float = 0.0
    variational_time: float = 0.0
    training_time: float = 0.0
    total_time: float = 0.0
    loss: float = math.nan
    training_failure: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def skipped(self) -> bool:
        return self.num_new == 0


@dataclass
class InducingUpdate:
    """New inducing inputs Z' with the kernel blocks an E-step needs (current hyper-parameters).

    ``k_old`` is K(Z, Z') for the inducing inputs Z before the update, with the jitter of K_uu
    as a white-noise term where Z and Z' share a point (None at the first update). ``cross``
    gives K(Z', X_new) in blocks of bounded memory (:mod:`.batch_terms`).
    """

    inducing: Tensor  # Z' (M' × D)
    k_new: Tensor  # K(Z', Z') without jitter
    cross: CrossCovariance  # K(Z', X_new), M' × N_new, never formed whole
    k_old: Tensor | None


class OnlineSparseGP(ABC):
    """Online sparse variational GP over inputs of dimension ``input_dim`` (2 for a map)."""

    #: Registry name of the method, also written into state files.
    method: str = ""
    #: Whether the M-step also trains the inducing inputs (by Adam, rate ``lr_inducing``).
    optimizes_inducing: bool = False
    #: Whether the M-step evaluates the whole new batch in every step (a collapsed bound):
    #: such a method refuses batches beyond ``max_whole_batch`` (:class:`BatchTooLargeError`).
    trains_on_whole_batch: bool = False

    def __init__(self, config: MappingConfig | None = None, input_dim: int = 2):
        self.config = config or MappingConfig()
        self.input_dim = input_dim
        self.device = resolve_device(self.config.device)
        self.dtype = getattr(torch, self.config.dtype)
        torch.manual_seed(self.config.seed)  # the attention network's initial weights
        self.kernel = make_kernel(self.config.kernel, input_dim, self.config).to(self.device,
                                                                                 self.dtype)
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_constraint=gpytorch.constraints.GreaterThan(self.config.min_noise_variance)
        ).to(self.device, self.dtype)
        self.likelihood.noise = self.config.initial_noise_variance
        self.optimizer = self._make_optimizer()
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self._minibatches: list[tuple[Tensor, Tensor]] = []  # drawn ahead by the M-step
        self.x_scaler, self.y_scaler = MinMaxScaler(), StandardScaler()
        self.buffer = SampleBuffer(input_dim)
        self.num_pending = 0
        self.rejections: Counter = Counter()
        self._seen = SeenSamples(self.buffer)
        self.num_updates = 0
        self.inducing: Tensor | None = None  # Z, M × D, scaled units
        self.posterior: VariationalPosterior | None = None
        self._factors: PredictionCache | None = None
        self.fixed_inducing = False
        self._fixed_z: Tensor | None = None  # used instead of any selection when fixed

    # ------------------------------------------------------------------ data intake
    def add_data(self, x, y) -> BatchReport:
        """Validate and buffer samples: x (N × D) in world units, y (N,) in target units.

        Non-finite and exactly duplicated samples are dropped and counted by reason
        (:attr:`rejections`); a malformed batch raises :class:`InvalidBatchError` and is
        counted too. An empty batch is accepted and changes nothing.
        """
        try:
            x, y = self._as_batch(x, y)
        except InvalidBatchError:
            self.rejections[MALFORMED_BATCH] += 1
            raise
        x, y, report = filter_samples(x, y, self._seen)
        self.rejections.update(report.rejected)
        if report.num_rejected:
            log.warning("rejected %d samples: %s", report.num_rejected, dict(report.rejected))
        self._seen.add(self.num_samples, np.column_stack([x, y]))
        self.buffer.append(x, y)
        self.num_pending += report.accepted
        return report

    def _as_batch(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """The batch as float arrays x (N × D), y (N,), or :class:`InvalidBatchError`."""
        return as_batch(x, y, self.input_dim)

    @property
    def num_samples(self) -> int:
        return len(self.buffer)

    @property
    def ready(self) -> bool:
        return self._factors is not None

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
        report = UpdateReport(num_samples=self.num_samples)
        count = self.num_pending if max_new is None else min(int(max_new), self.num_pending)
        if count <= 0:
            return report
        limit = self.config.max_whole_batch
        if self.trains_on_whole_batch and count > limit:
            raise BatchTooLargeError(
                f"{self.method} takes at most {limit} new samples per update (max_whole_batch: "
                f"its training evaluates the whole batch in every step), {count} are pending")
        start = time.perf_counter()
        first_update = not self.x_scaler.fitted
        if first_update:
            self.x_scaler.fit(self.buffer.x)
            self.y_scaler.fit(self.buffer.y)
        first = self.num_samples - self.num_pending
        x_new, y_new = self._scaled(np.arange(first, first + count))
        snapshot = self._posterior_snapshot()
        try:
            self._check_hyperparameters()
            with torch.no_grad():
                self._update_posterior(x_new, y_new, report)
        except Exception:
            self._restore_posterior(snapshot)
            if first_update:  # the scalers belong to the first update that succeeds
                self.x_scaler, self.y_scaler = MinMaxScaler(), StandardScaler()
            raise
        self.num_pending -= count  # the M-step draws from the samples fitted so far
        report.variational_time = time.perf_counter() - start - report.inducing_time
        train_start = time.perf_counter()
        report.loss, report.training_failure = self._train_hyperparameters(x_new, y_new)
        report.training_time = time.perf_counter() - train_start
        self.num_updates += 1
        report.num_new = count
        report.num_inducing = self.inducing.shape[0]
        report.total_time = time.perf_counter() - start
        return report

    def set_aside_pending(self, count: int | None = None) -> int:
        """Drop the oldest ``count`` pending samples (all by default) from the model, counted
        under ``update_failed``: a batch whose update failed and that a retry cannot fix.
        Returns how many were dropped."""
        count = self.num_pending if count is None else min(int(count), self.num_pending)
        if count <= 0:
            return 0
        first = self.num_samples - self.num_pending
        self.buffer.remove(first, first + count)
        self._seen.remove(first, first + count)
        self.num_pending -= count
        self.rejections[UPDATE_FAILED] += count
        return count

    def _data_so_far(self, x_new: Tensor) -> np.ndarray:
        """Buffer rows of every sample up to the E-step's batch ``x_new`` included, for the
        methods whose E-step reads all data (later pending samples excluded)."""
        return np.arange(self.num_fitted + len(x_new))

    @property
    def num_fitted(self) -> int:
        """Samples the model has taken in an update (the first ``num_fitted`` of the buffer)."""
        return self.num_samples - self.num_pending

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        """E-step: set :attr:`inducing` and :attr:`posterior` from the newest batch (scaled
        units). May record ``report.inducing_time`` and ``report.extra``. By default: select the
        inducing inputs, then :meth:`_update_variational`."""
        start = time.perf_counter()
        if self.fixed_inducing:
            selection = self._inducing_blocks(self._fixed_z, x_new)
        else:
            selection = self._choose_inducing(x_new, report)
        report.inducing_time = time.perf_counter() - start
        self._update_variational(selection, x_new, y_new)

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        """Set :attr:`inducing` to ``selection.inducing`` and :attr:`posterior` to the method's
        q(u) there. Assign only once everything is computed (a failure must change nothing)."""
        raise NotImplementedError(f"{type(self).__name__} defines no variational update")

    def _check_hyperparameters(self) -> None:
        """Refuse non-finite hyper-parameters, all read from the device at once."""
        named = [*self.kernel.named_parameters(), *self.likelihood.named_parameters()]
        if torch.isfinite(torch.cat([value.detach().reshape(-1) for _, value in named])).all():
            return
        for name, value in named:
            if not torch.isfinite(value).all():
                raise NumericalError(f"hyper-parameter {name} is not finite")

    # ------------------------------------------------------------------ inducing inputs
    def fix_inducing_inputs(self, z) -> None:
        """Use the given inducing inputs (M × D, world units) from the next update on instead of
        the method's selection (and do not optimise them).

        Before the first update this fits the scalers on the data buffered so far.
        """
        if not self.x_scaler.fitted:
            self.x_scaler.fit(self.buffer.x)
            self.y_scaler.fit(self.buffer.y)
        self._fixed_z = torch.as_tensor(self.x_scaler.transform(z), dtype=self.dtype,
                                        device=self.device)
        self.fixed_inducing = True

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        """Default selection (POAM, Sec. IV-B): greedy pivoted Cholesky on [Z; X_new], at most
        M pivots. A small candidate set's kernel matrix is evaluated once and holds every block
        the E-step needs; a larger one's is never formed (:meth:`_pivoted_selection`), and
        K(Z', X_new) then comes from the factor."""
        old = self.inducing
        num_old = 0 if old is None else old.shape[0]
        candidates = x_new if old is None else torch.cat([old, x_new])
        pcd, k_cc = self._pivoted_selection(candidates, report)
        host_pivots = pcd.pivots.numpy() if pcd.pivots.device.type == "cpu" else None
        pivots = pcd.pivots.to(self.device)
        z = candidates[pivots]
        if k_cc is None:
            k_old = None if old is None else self.inducing_cross_covariance(old, z)
            factor = pcd.factor.to(self.device)
            return InducingUpdate(z, self.covariance(z, z),
                                  FactorCross(factor[pivots], factor[num_old:]), k_old)
        k_old = None
        if old is not None:
            k_old = k_cc[:num_old][:, pivots].clone()
            survivors = torch.as_tensor(np.flatnonzero(host_pivots < num_old), device=self.device)
            k_old[pivots[survivors], survivors] += self.config.jitter * self.amplitude
        return InducingUpdate(z, k_cc[pivots][:, pivots], DenseCross(k_cc[pivots, num_old:]),
                              k_old)

    def _pivoted_selection(self, candidates: Tensor, report: UpdateReport, forced: int = 0,
                           on_block: Callable[[PivotBlock], Tensor] | None = None
                           ) -> tuple[PivotedCholesky, Tensor | None]:
        """Greedy PCD pivots (at most M) of the candidates, and their kernel matrix when it was
        formed (None otherwise).

        The n × n matrix is formed only while n ≤ ``BLOCKED_RATIO`` · M and it takes at most
        ``DENSE_SELECTION_BYTES`` (the steady state, where LAPACK's blocked factorisation is
        fastest); beyond, :func:`~poam_ros.inducing.greedy_pivots` asks the kernel for the M
        chosen columns only, each one pass over the candidates with their attention weights
        computed once: memory O(n M). ``forced`` and ``on_block`` are those of
        :func:`~poam_ros.inducing.greedy_pivots` (and force that route).
        """
        config, n = self.config, candidates.shape[0]
        rank = min(config.num_inducing, n)
        dense = (n <= BLOCKED_RATIO * rank and n * n * 8 <= DENSE_SELECTION_BYTES
                 and not forced and on_block is None)
        k_cc = None
        if dense:
            k_cc = self.covariance(candidates, candidates)
            # The unit diagonal exactly, as the column route takes it: its round-off would
            # otherwise pick the first pivot among candidates that all tie.
            k_cc.diagonal().copy_(self.amplitude.detach())
            try:  # the finiteness is checked on the host copy, where it reads nothing back
                pcd = pivoted_cholesky(k_cc.double(), rank, config.pcd_tolerance)
            except ValueError as err:
                raise NumericalError(f"the kernel matrix of the inducing candidates: {err}")
        else:
            base, amplitude = self.kernel.base_kernel, self.amplitude
            features = base.features(candidates)
            if not torch.isfinite(features).all():
                raise NumericalError("the kernel features of the inducing candidates are not "
                                     "finite")

            def column(i: Tensor) -> Tensor:  # device indices: no pivot is read back
                return amplitude * base.columns(candidates, features, candidates[i], features[i])

            diagonal = amplitude.expand(n)  # both kernels have unit diagonal
            pcd = greedy_pivots(diagonal, column, rank, config.pcd_tolerance, forced=forced,
                                on_block=on_block)
            if not math.isfinite(pcd.trace_error):  # a non-finite column reaches the residuals
                raise NumericalError("the kernel columns of the inducing candidates are not "
                                     "finite")
        if len(pcd.pivots) == 0:
            raise NumericalError("pivoted Cholesky found no inducing input")
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
        units, and ``noise_std``, its standard deviation in the targets' units (m)."""
        noise = float(self.noise.detach())
        return {"noise": noise, "noise_std": math.sqrt(noise) * self.y_scaler.std}

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
    def _make_optimizer(self, fused: bool | None = None) -> torch.optim.Optimizer:
        """Adam with a slow rate for the attention network and a fast one for the rest.

        ``fused`` (default: on CUDA only) makes a step one kernel per group, with its step
        counts on the device (nothing read back); else the foreach implementation, a few ops
        per group instead of a dozen per parameter and the same arithmetic as the loop over
        parameters. torch's fused CPU Adam is slower by orders of magnitude at these sizes.
        """
        attention = [p for n, p in self.kernel.named_parameters() if "attention" in n]
        others = [p for n, p in self.kernel.named_parameters() if "attention" not in n]
        groups = [{"params": others + list(self.likelihood.parameters()),
                   "lr": self.config.lr_hyper}]
        if attention:
            groups.append({"params": attention, "lr": self.config.lr_attention})
        if fused is None:
            fused = self.device.type == "cuda"
        return torch.optim.Adam(groups, fused=True) if fused else torch.optim.Adam(
            groups, foreach=True)

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        """What the M-step minimises (default: POAM's mini-batch ELBO with q(u) fixed, Z too
        unless the method ``optimizes_inducing`` and the inputs are not fixed)."""
        return FixedPosteriorElbo(self, self.optimizes_inducing and not self.fixed_inducing)

    def _after_training(self, x_new: Tensor, y_new: Tensor) -> None:
        """Runs after a successful M-step, under ``torch.no_grad`` (default: nothing)."""

    def _minibatch(self) -> tuple[Tensor, Tensor]:
        """The next mini-batch the M-step drew ahead (:meth:`_draw_minibatches`), else
        ``batch_size`` samples drawn now with replacement from all data (scaled units)."""
        if self._minibatches:
            return self._minibatches.pop(0)
        index = torch.randint(self.num_fitted, (self.config.batch_size,),
                              generator=self.generator).numpy()
        return self._scaled(index)

    def _draw_minibatches(self, steps: int) -> list[tuple[Tensor, Tensor]]:
        """``steps`` mini-batches in one draw of steps × ``batch_size`` indices (the generator
        yields them in the order of ``steps`` single draws) and one upload to the device."""
        size = self.config.batch_size
        index = torch.randint(self.num_fitted, (steps, size), generator=self.generator).numpy()
        x, y = self._scaled(index.reshape(-1))
        return list(zip(x.split(size), y.split(size)))

    def _train_hyperparameters(self, x_new: Tensor, y_new: Tensor) -> tuple[float, str | None]:
        """``train_steps`` Adam steps on the method's objective, then the prediction factors.

        They run first without reading the device (:func:`~.linalg.deferred_checks`: each
        factorisation makes its first attempt only, the statuses and losses stay on the device,
        the mini-batches are drawn ahead), and one read after the prediction factors checks
        them all: on a GPU one host synchronisation per M-step, not three per step. Only if that
        read shows a failure is the M-step discarded and replayed from its start with each step
        checked (:meth:`_checked_training`: jitter escalated, a non-finite objective stops it)
        on the same mini-batches, so the result is always that of a checked run.

        With ``m_step = "lbfgs"`` the M-step is :meth:`_lbfgs_steps` instead, run checked at once
        (its line search reads every loss anyway).
        """
        if self.config.m_step == "lbfgs":
            return self._checked_training(x_new, y_new, self._hyper_snapshot())
        hyper, draws = self._hyper_snapshot(), self.generator.get_state()
        posterior = self._posterior_snapshot()
        objective, passed = None, False
        try:
            with deferred_checks() as checks:
                objective = self._training_objective(x_new, y_new)
                loss = self._train_steps(objective, checks)
                with torch.no_grad():
                    objective.commit()
                    self._after_training(x_new, y_new)
                    self._refresh_after_training(objective)
            passed, (value,) = checks.read(loss)
        except RuntimeError as err:  # NumericalError among others: the replay tells which
            log.debug("M-step without checks failed (%s): replaying it checked", err)
        finally:
            self._minibatches.clear()
        if passed:
            return value, None
        self._restore_hyper(hyper)
        if objective is not None:
            objective.rollback()
        self._restore_posterior(posterior)
        self.generator.set_state(draws)
        return self._checked_training(x_new, y_new, hyper)

    def _checked_training(self, x_new: Tensor, y_new: Tensor,
                          hyper: dict) -> tuple[float, str | None]:
        """The M-step with every step checked as it goes. A numerical failure (a factorisation
        failing even with escalated jitter, a non-finite objective) restores ``hyper`` (the
        hyper-parameters of before the M-step) and the objective's extras and is reported; the
        E-step's result stays."""
        objective = None
        try:
            objective = self._training_objective(x_new, y_new)
            loss = self._train_steps(objective, None)
            with torch.no_grad():
                snapshot = self._posterior_snapshot()
                try:
                    objective.commit()
                    self._after_training(x_new, y_new)
                    self._refresh_after_training(objective)
                except NumericalError:
                    self._restore_posterior(snapshot)
                    raise
        except NumericalError as err:
            self._restore_hyper(hyper)
            if objective is not None:
                objective.rollback()
            self._refresh_factors()  # these hyper-parameters factorised K_uu in the E-step
            log.warning("hyper-parameter training failed, kept previous values: %s", err)
            return math.nan, str(err)
        return float(loss.detach()), None

    def _train_steps(self, objective: TrainingObjective, checks: DeferredChecks | None) -> Tensor:
        """``train_steps`` Adam steps; returns the last loss (NaN without steps). With
        ``checks`` the mini-batches are drawn ahead and each loss's finiteness is recorded
        there; without, a non-finite loss raises :class:`NumericalError` at once."""
        if self.config.m_step == "lbfgs":
            return self._lbfgs_steps(objective)
        steps, extra = self.config.train_steps, objective.optimizer
        if checks is not None and objective.uses_minibatches and steps:
            self._minibatches = self._draw_minibatches(steps)
        loss = torch.tensor(math.nan)
        for _ in range(steps):
            self.optimizer.zero_grad(set_to_none=True)
            if extra is not None:
                extra.zero_grad(set_to_none=True)
            loss = objective.loss()
            if checks is not None:
                checks.record(torch.isfinite(loss))
            elif not torch.isfinite(loss):
                raise NumericalError("the training objective became non-finite")
            loss.backward()
            self.optimizer.step()
            if extra is not None:
                extra.step()
        return loss

    def _lbfgs_steps(self, objective: TrainingObjective) -> Tensor:
        """L-BFGS (strong-Wolfe line search) to convergence, at most ``LBFGS_MAX_ITERATIONS``
        iterations, over the hyper-parameters and the objective's extras: the VIPS and OIPS
        papers' M-step. The objective is deterministic for it: an objective on mini-batches
        sees one batch of all fitted samples (a random draw of ``max_whole_batch`` of them
        without replacement when there are more). A non-finite loss raises
        :class:`NumericalError` (the caller restores the hyper-parameters). Returns the loss
        at the final parameters."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        if objective.optimizer is not None:
            params += [p for group in objective.optimizer.param_groups for p in group["params"]]
        batch = None
        if objective.uses_minibatches:
            count, limit = self.num_fitted, self.config.max_whole_batch
            index = (np.arange(count) if count <= limit
                     else np.sort(self._random_rows(count, limit).cpu().numpy()))
            batch = self._scaled(index)
        lbfgs = torch.optim.LBFGS(params, max_iter=LBFGS_MAX_ITERATIONS,
                                  tolerance_grad=LBFGS_TOLERANCE, tolerance_change=LBFGS_TOLERANCE,
                                  line_search_fn="strong_wolfe")

        def evaluate() -> Tensor:
            if batch is not None:
                self._minibatches = [batch]
            loss = objective.loss()
            if not torch.isfinite(loss):
                raise NumericalError("the training objective became non-finite")
            return loss

        def closure() -> Tensor:
            lbfgs.zero_grad(set_to_none=True)
            loss = evaluate()
            loss.backward()
            return loss

        try:
            lbfgs.step(closure)
            with torch.no_grad():
                return evaluate()
        finally:
            self._minibatches.clear()

    def _hyper_snapshot(self) -> dict:
        return {"kernel": {k: v.clone() for k, v in self.kernel.state_dict().items()},
                "likelihood": {k: v.clone() for k, v in self.likelihood.state_dict().items()},
                "optimizer": clone_tree(self.optimizer.state_dict())}

    def _restore_hyper(self, snapshot: dict) -> None:
        """Copy ``snapshot`` back; it stays intact for another restore (Adam would otherwise
        take its state tensors as they are and update them in place)."""
        self.kernel.load_state_dict(snapshot["kernel"])
        self.likelihood.load_state_dict(snapshot["likelihood"])
        self.optimizer.load_state_dict(clone_tree(snapshot["optimizer"]))

    def _posterior_snapshot(self) -> tuple:
        """The E-step's outputs; E-steps assign new tensors, so references suffice."""
        return self.inducing, self.posterior, self._method_state()

    def _restore_posterior(self, snapshot: tuple) -> None:
        self.inducing, self.posterior, method_state = snapshot
        self._load_method_state(method_state)

    def _refresh_after_training(self, objective: TrainingObjective) -> None:
        """The prediction factors, from the base stack of Z the objective kept if it has one
        (only then is it passed: overrides of :meth:`_refresh_factors` without the argument,
        such as the exact GP's, keep working)."""
        cache = objective.inducing_cache()
        if cache is not None and cache[0] is self.inducing:
            self._refresh_factors(cache[1])
        else:
            self._refresh_factors()

    @torch.no_grad()
    def _refresh_factors(self, cache: Tensor | None = None) -> None:
        """Prediction factors for the current hyper-parameters (they changed in the M-step),
        computed in TERMS_DTYPE: in float32, K_uu⁻¹'s round-off alone raised the prediction
        error of a 10,000-sample map by a quarter. ``cache``: the kernel's precomputed part of
        K(Z, Z) (``precompute``), if at hand."""
        factors = prediction_cache(self.k_uu_cholesky(self.inducing, cache, TERMS_DTYPE),
                                   self.posterior.to(TERMS_DTYPE))
        self._factors = PredictionCache(factors.alpha.to(self.dtype), factors.q.to(self.dtype))

    # ------------------------------------------------------------------ prediction
    @torch.no_grad()
    @torch.no_grad()
    def predict(self, x, include_noise: bool = False, block_rows: int = 2048,
                kernel_dtype: torch.dtype | None = None):
        """Predictive mean and standard deviation at x (N × D, world units).

        ``include_noise`` adds the observation noise: the distribution of a new measurement
        rather than of the field. Returns two (N,) float64 arrays in target units; the standard
        deviation is always positive (round-off is floored at 1e-9 of the prior variance).
        ``kernel_dtype`` evaluates K(x, Z) in that precision, from a copy of the kernel; the
        products with the prediction factors stay in the model's (float32 in a float64 model:
        on the core benchmark's map, 2,000 points in 0.75× the time, predictions within
        5e-5 m in mean and 3e-5 m in standard deviation of a field of standard deviation 19 m).
        """
        self._require_ready()
        x = self._to_scaled_inputs(x)
        covariance = self.covariance
        if kernel_dtype not in (None, self.dtype):
            kernel = copy.deepcopy(self.kernel).to(kernel_dtype)

            def covariance(x1: Tensor, x2: Tensor) -> Tensor:
                k = kernel.base_kernel.forward(x1.to(kernel_dtype), x2.to(kernel_dtype))
                return (kernel.outputscale * k).to(self.dtype)
        # The results are allocated whole before the loop: small per-block results kept
        # between the blocks' large temporaries pin glibc's heap (250,000 points at M = 171
        # grew the resident memory by 0.65 GB; preallocated, by 0.02 GB).
        mean, var = x.new_empty(x.shape[0]), x.new_empty(x.shape[0])
        for start in range(0, x.shape[0], block_rows):
            block = slice(start, start + block_rows)
            k_fu = covariance(x[block], self.inducing)
            mean[block] = k_fu @ self._factors.alpha
            var[block] = self.amplitude - ((k_fu @ self._factors.q) * k_fu).sum(1)
        var = var.clamp_min(1e-9 * self.amplitude)
        if include_noise:
            var = var + self.noise
        mean, std = torch.stack([mean, var.sqrt()]).cpu().double().numpy()  # one transfer
        if not (np.isfinite(mean).all() and np.isfinite(std).all()):
            raise NumericalError("prediction is not finite")
        return self.y_scaler.inverse_mean(mean), self.y_scaler.inverse_std(std)

    @torch.no_grad()
    def lengthscale_map(self, x) -> np.ndarray:
        """Learned lengthscale at x (N × D, world units), in world units (N,).

        Scaled units are converted with the geometric mean of the per-axis scale factors.
        """
        self._require_ready()
        scaled = self.kernel.base_kernel.lengthscale_map(self._to_scaled_inputs(x))
        factor = float(np.exp(np.log(self.x_scaler.half_range).mean()))
        return scaled.cpu().double().numpy() * factor

    @property
    def inducing_inputs(self) -> np.ndarray:
        """The inducing inputs Z in world units (M × D)."""
        self._require_ready()
        return self.x_scaler.inverse(self.inducing.cpu().double().numpy())

    def _to_scaled_inputs(self, x) -> Tensor:
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            raise InvalidBatchError(f"query inputs must have shape (N, {self.input_dim}), "
                                    f"got {x.shape}")
        if not np.isfinite(x).all():
            raise InvalidBatchError("query inputs contain NaN or inf")
        return torch.as_tensor(self.x_scaler.transform(x), dtype=self.dtype, device=self.device)

    def _scaled(self, index: np.ndarray) -> tuple[Tensor, Tensor]:
        """Buffered samples at ``index`` in scaled units, on the model's device."""
        x = self.x_scaler.transform(self.buffer.x[index])
        y = self.y_scaler.transform(self.buffer.y[index])
        return (torch.as_tensor(x, dtype=self.dtype, device=self.device),
                torch.as_tensor(y, dtype=self.dtype, device=self.device))

    def _require_ready(self) -> None:
        if not self.ready:
            raise ModelNotReadyError("the model has no posterior yet: add data and call update()")

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Everything needed to continue exactly where this model is, as plain containers."""
        self._require_ready()
        return {
            **self._intake_state(),
            "kernel": self.kernel.state_dict(),
            "likelihood": self.likelihood.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "inducing": self.inducing.cpu(),
            "posterior": None if self.posterior is None else {
                "mean": self.posterior.mean.cpu(), "sqrt": self.posterior.sqrt.cpu(),
                "logdet": self.posterior.logdet.cpu()},
            "method_state": {k: v.cpu() for k, v in self._method_state().items()},
        }

    def _intake_state(self) -> dict:
        """The part of the state that every model, one channel or several, keeps alike: the
        configuration, the scalers, the sample buffer (targets as :attr:`SampleBuffer.y`),
        the counters, the rejections and a fixed Z."""
        return {
            "config": self.config.to_dict(),
            "input_dim": self.input_dim,
            "x_scaler": self.x_scaler.state_dict(),
            "y_scaler": self.y_scaler.state_dict(),
            "buffer_x": torch.from_numpy(self.buffer.x.copy()),
            "buffer_y": torch.from_numpy(self.buffer.y.copy()),
            "num_pending": self.num_pending,
            "num_updates": self.num_updates,
            "rejections": dict(self.rejections),
            "fixed_inducing": None if self._fixed_z is None else self._fixed_z.cpu(),
        }

    def _load_intake(self, state: dict) -> None:
        """Inverse of :meth:`_intake_state` but for the scalers, which a model reads as its
        own kinds: the buffer (checked against ``input_dim``), counters, rejections, fixed Z."""
        x, y = state["buffer_x"].numpy(), state["buffer_y"].numpy()
        if x.shape != (len(y), self.input_dim):
            raise ValueError(f"buffer shapes {tuple(x.shape)} and {tuple(y.shape)} disagree")
        self._seen.add(self.num_samples, np.column_stack([x, y]))
        self.buffer.append(x, y)
        self.num_pending = int(state["num_pending"])
        self.num_updates = int(state["num_updates"])
        self.rejections = Counter(state["rejections"])
        fixed = state["fixed_inducing"]
        self.fixed_inducing = fixed is not None
        self._fixed_z = None if fixed is None else fixed.to(self.device, self.dtype)

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
        try:
            config = MappingConfig.from_saved(state["config"])
            if device is not None:
                config = config.replace(device=device)
            model = cls(config, int(state["input_dim"]))
            model._load_state(state)
        except state_io.StateFileError:
            raise
        except Exception as err:  # a damaged or mismatched payload
            raise state_io.StateFileError(path, f"inconsistent contents ({type(err).__name__}: "
                                                f"{err})") from None
        return model

    def _load_state(self, state: dict) -> None:
        to = dict(device=self.device, dtype=self.dtype)
        self.x_scaler = MinMaxScaler.from_state_dict(state["x_scaler"])
        self.y_scaler = StandardScaler.from_state_dict(state["y_scaler"])
        self.kernel.load_state_dict(state["kernel"])
        self.likelihood.load_state_dict(state["likelihood"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self._load_intake(state)
        self.inducing = state["inducing"].to(**to)
        post = state["posterior"]
        self.posterior = None if post is None else VariationalPosterior(
            post["mean"].to(**to), post["sqrt"].to(**to), post["logdet"].to(**to))
        # In the precision saved (data terms are float64 in any model); methods cast.
        self._load_method_state({k: v.to(self.device) for k, v in state["method_state"].items()})
        self._refresh_factors()

