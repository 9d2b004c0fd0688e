"""The M-step: the optimisers and the loop that trains a model's hyper-parameters.

As in GPflow and GPyTorch, the model holds the parameters (its kernel and likelihood) and the
objective (:mod:`.objectives`); the :class:`Trainer` runs the steps on them and owns what the
steps need: the persistent Adam (saved in state files as ``optimizer``), the mini-batches drawn
for the steps, the snapshots of the hyper-parameters and the replay after a failed check.

One M-step (:meth:`Trainer.train`) is a transaction:

* Adam (``m_step = "adam"``): ``train_steps`` steps (``first_train_steps`` in the first
  update, where set) run first without reading the device
  (:func:`~.linalg.deferred_checks`: each factorisation makes its first attempt only, the
  statuses and losses stay on the device, the mini-batches are drawn up front), and one read
  after the prediction factors checks them all: on a GPU one host synchronisation per M-step,
  not three per step. Only if that read shows a failure is the M-step discarded (the
  hyper-parameters, Adam's state, the objective's extras, the model's E-step outputs and the
  generator put back) and replayed from its start with each step checked
  (:meth:`Trainer.train_checked`: jitter escalated, a non-finite objective stops it) on the
  same mini-batches, so the result is always that of a checked run.
* L-BFGS (``m_step = "lbfgs"``, the VIPS and OIPS papers' M-step): run checked at once (its
  line search reads every loss anyway).

A checked run that fails numerically restores the hyper-parameters of before the M-step and the
objective's extras; the E-step's result stays, and the failure is reported.

Mini-batches are ``batch_size`` rows drawn with replacement from the model's fitted samples by
the model's seeded generator (shared with its E-step, so the draws keep one order); drawn up
front, ``steps`` batches are one draw of steps × ``batch_size`` indices, which the generator
yields in the order of ``steps`` single draws.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.captured import CapturedSteps
from poam_ros.models.compiled import compiled_step
from poam_ros.models.linalg import DeferredChecks, NumericalError, deferred_checks
from poam_ros.models.objectives import TrainingObjective, clone_tree
from poam_ros.models.padding import Padding

log = logging.getLogger(__name__)

#: Most iterations of the L-BFGS M-step (``m_step = "lbfgs"``), which stops earlier once the
#: largest gradient entry, the loss change or the step is below ``LBFGS_TOLERANCE`` (torch's
#: default change tolerance, 1e-9, stopped it with gradients of 1e-3 on 60 samples).
LBFGS_MAX_ITERATIONS = 1000
LBFGS_TOLERANCE = 1e-12


@dataclass(frozen=True)
class TrainingTask:
    """What one M-step asks of the model, for the batch it has just taken."""

    #: Builds the objective of this M-step (the method's ``_training_objective``).
    objective: Callable[[], TrainingObjective]
    #: After the last step, under ``torch.no_grad``: commit the objective, the method's
    #: after-training work and the prediction factors.
    finish: Callable[[TrainingObjective], None]
    #: The model's E-step outputs (Z, q(u), method state), and putting them back.
    snapshot: Callable[[], object]
    restore: Callable[[object], None]
    #: The prediction factors of the current hyper-parameters (after a restore).
    refresh: Callable[[], None]
    #: Adam steps of this M-step; None: :meth:`Trainer.steps` (the update's).
    steps: int | None = None


class Trainer:
    """The M-step of ``model``, whose hyper-parameters are its ``kernel`` and ``likelihood``.

    It reads the model's current ``config`` (a model's settings may be replaced between
    updates), its seeded ``generator``, ``num_fitted`` (the samples trained on) and its rows
    in scaled units on its device (``_scaled(index)``, which each kind of model defines).
    ``fused`` selects torch's fused Adam (one kernel per group, its step counts on the device,
    nothing read back: the CUDA path); else the foreach implementation, a few ops per group
    instead of a dozen per parameter and the same arithmetic as the loop over parameters
    (torch's fused CPU Adam is slower by orders of magnitude at these sizes).
    """

    def __init__(self, model, fused: bool):
        self.model = model
        self.optimizer = self._adam(fused)
        #: Mini-batches drawn ahead, taken first by :meth:`minibatch`.
        self.minibatches: list[tuple[Tensor, Tensor]] = []
        #: Whether the unchecked attempt of an M-step is running (the one that may pad and
        #: compile; the checked replay runs eagerly on the true shapes).
        self.fast = False
        #: The CUDA graphs of the training steps by bucket (``mapping.cuda_graphs``).
        self.graphs = CapturedSteps()

    # ------------------------------------------------------------------ shapes and compilation
    def padding(self, size: int) -> Padding | None:
        """How an objective pads ``size`` inducing inputs in this attempt's steps: to a bucket
        with ``mapping.static_shapes`` (or CUDA graphs on a CUDA model) during the unchecked
        attempt; None otherwise. The checked replay is unpadded, as its jitter may escalate
        and the padded block is made for the first attempt's jitter (:mod:`.padding`)."""
        model = self.model
        config = model.config
        static = config.static_shapes or (config.cuda_graphs and model.device.type == "cuda")
        if not (self.fast and static):
            return None
        return Padding(size, config.num_inducing, model.dtype, model.device)

    def step_function(self, function: Callable) -> Callable:
        """``function`` (a training step of tensors) as this attempt runs it: compiled by
        inductor with ``mapping.compile: cpu`` on a CPU model during the unchecked attempt
        (:mod:`.compiled`), else itself."""
        model = self.model
        if self.fast and model.config.compile == "cpu" and model.device.type == "cpu":
            return compiled_step(function)
        return function

    def _adam(self, fused: bool) -> torch.optim.Optimizer:
        """Adam with a slow rate for the attention network and a fast one for the rest."""
        model = self.model
        attention = [p for n, p in model.kernel.named_parameters() if "attention" in n]
        others = [p for n, p in model.kernel.named_parameters() if "attention" not in n]
        groups = [{"params": others + list(model.likelihood.parameters()),
                   "lr": model.config.lr_hyper}]
        if attention:
            groups.append({"params": attention, "lr": model.config.lr_attention})
        return torch.optim.Adam(groups, fused=True) if fused else torch.optim.Adam(
            groups, foreach=True)

    # ------------------------------------------------------------------ mini-batches
    def minibatch(self) -> tuple[Tensor, Tensor]:
        """The next mini-batch drawn ahead (:meth:`draw_minibatches`), else ``batch_size``
        samples drawn now with replacement from all fitted samples (scaled units)."""
        if self.minibatches:
            return self.minibatches.pop(0)
        model = self.model
        index = torch.randint(model.num_fitted, (model.config.batch_size,),
                              generator=model.generator).numpy()
        return model._scaled(index)

    def draw_minibatches(self, steps: int) -> list[tuple[Tensor, Tensor]]:
        """``steps`` mini-batches in one draw of steps × ``batch_size`` indices and one upload
        to the device."""
        model = self.model
        size = model.config.batch_size
        index = torch.randint(model.num_fitted, (steps, size), generator=model.generator).numpy()
        x, y = model._scaled(index.reshape(-1))
        return list(zip(x.split(size), y.split(size)))

    # ------------------------------------------------------------------ the M-step
    def train(self, task: TrainingTask) -> tuple[float, str | None]:
        """One M-step (see the module docstring): the final loss, and the failure if any."""
        generator = self.model.generator
        if self.model.config.m_step == "lbfgs":
            return self.train_checked(task, self.snapshot())
        hyper, draws = self.snapshot(), generator.get_state()
        posterior = task.snapshot()
        objective, passed = None, False
        try:
            with deferred_checks() as checks:
                self.fast = True
                objective = task.objective()
                loss = self._steps(objective, checks, task.steps)
                self.fast = False
                with torch.no_grad():
                    task.finish(objective)
            passed, (value,) = checks.read(loss)
        except RuntimeError as err:  # NumericalError among others: the replay tells which
            log.debug("M-step without checks failed (%s): replaying it checked", err)
        finally:
            self.minibatches.clear()
            self.fast = False
        if passed:
            return value, None
        self.restore(hyper)
        if objective is not None:
            objective.rollback()
        task.restore(posterior)
        generator.set_state(draws)
        return self.train_checked(task, hyper)

    def train_checked(self, task: TrainingTask, hyper: dict) -> tuple[float, str | None]:
        """The M-step with every step checked as it goes. A numerical failure (a factorisation
        failing even with escalated jitter, a non-finite objective) restores ``hyper`` (the
        :meth:`snapshot` of before the M-step) and the objective's extras and is reported."""
        objective = None
        try:
            objective = task.objective()
            loss = self._steps(objective, None, task.steps)
            with torch.no_grad():
                posterior = task.snapshot()
                try:
                    task.finish(objective)
                except NumericalError:
                    task.restore(posterior)
                    raise
        except NumericalError as err:
            self.restore(hyper)
            if objective is not None:
                objective.rollback()
            task.refresh()  # these hyper-parameters factorised K_uu in the E-step
            log.warning("hyper-parameter training failed, kept previous values: %s", err)
            return math.nan, str(err)
        return float(loss.detach()), None

    def _steps(self, objective: TrainingObjective, checks: DeferredChecks | None,
               steps: int | None = None) -> Tensor:
        """``steps`` Adam steps (None: :meth:`steps`); returns the last loss (NaN without
        steps). With ``checks`` the mini-batches are drawn ahead and each loss's finiteness is
        recorded there; without, a non-finite loss raises :class:`NumericalError` at once."""
        if self.model.config.m_step == "lbfgs":
            return self._lbfgs(objective)
        steps = self.steps() if steps is None else steps
        extra = objective.optimizer
        if checks is not None and objective.uses_minibatches and steps:
            self.minibatches = self.draw_minibatches(steps)
            if self._captures(objective):
                loss = self._replay(objective)
                if loss is not None:
                    checks.record(torch.isfinite(loss))
                    return loss
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

    def steps(self) -> int:
        """Adam steps of this M-step: ``first_train_steps`` in the model's first update where
        set, else ``train_steps``."""
        config = self.model.config
        if config.first_train_steps and self.model.num_updates == 0:
            return config.first_train_steps
        return config.train_steps

    def _captures(self, objective: TrainingObjective) -> bool:
        """Whether this attempt's steps are CUDA-graph replays (:mod:`.captured`): with
        ``mapping.cuda_graphs`` on a CUDA model, for an objective that pads to a bucket and
        trains nothing beyond the hyper-parameters, while no capture has failed."""
        model = self.model
        return (model.config.cuda_graphs and model.device.type == "cuda"
                and objective.capturable and objective.optimizer is None
                and self.graphs.failure is None)

    def _replay(self, objective: TrainingObjective) -> Tensor | None:
        """The steps replayed on the mini-batches drawn ahead, their last loss (NaN where a
        deferred check failed); None after a failed capture, said once in the log."""
        try:
            loss = self.graphs.run(objective, self.optimizer, self.minibatches)
        except RuntimeError as error:  # the mini-batches stay for the eager steps
            self.graphs.failure = error
            log.warning("CUDA graph capture failed, training steps run eagerly: %s", error)
            return None
        self.minibatches = []
        return loss

    def _lbfgs(self, objective: TrainingObjective) -> Tensor:
        """L-BFGS (strong-Wolfe line search) to convergence, at most ``LBFGS_MAX_ITERATIONS``
        iterations, over the hyper-parameters and the objective's extras. The objective is
        deterministic for it: an objective on mini-batches sees one batch of all fitted samples
        (a random draw of ``max_whole_batch`` of them without replacement when there are
        more). A non-finite loss raises :class:`NumericalError`. Returns the loss at the final
        parameters."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        if objective.optimizer is not None:
            params += [p for group in objective.optimizer.param_groups for p in group["params"]]
        batch, model = None, self.model
        if objective.uses_minibatches:
            count, limit = model.num_fitted, model.config.max_whole_batch
            index = (np.arange(count) if count <= limit else np.sort(
                torch.randperm(count, generator=model.generator)[:limit].numpy()))
            batch = model._scaled(index)
        lbfgs = torch.optim.LBFGS(params, max_iter=LBFGS_MAX_ITERATIONS,
                                  tolerance_grad=LBFGS_TOLERANCE, tolerance_change=LBFGS_TOLERANCE,
                                  line_search_fn="strong_wolfe")

        def evaluate() -> Tensor:
            if batch is not None:
                self.minibatches = [batch]
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
            self.minibatches.clear()

    # ------------------------------------------------------------------ snapshots
    def check_hyperparameters(self) -> None:
        """Refuse non-finite hyper-parameters (before an E-step), all read from the device at
        once."""
        named = [*self.model.kernel.named_parameters(), *self.model.likelihood.named_parameters()]
        if torch.isfinite(torch.cat([value.detach().reshape(-1) for _, value in named])).all():
            return
        for name, value in named:
            if not torch.isfinite(value).all():
                raise NumericalError(f"hyper-parameter {name} is not finite")

    def snapshot(self) -> dict:
        """Copies of the hyper-parameters and of Adam's state."""
        kernel, likelihood = self.model.kernel, self.model.likelihood
        return {"kernel": {k: v.clone() for k, v in kernel.state_dict().items()},
                "likelihood": {k: v.clone() for k, v in likelihood.state_dict().items()},
                "optimizer": clone_tree(self.optimizer.state_dict())}

    def restore(self, snapshot: dict) -> None:
        """Copy ``snapshot`` back; it stays intact for another restore (Adam would otherwise
        take its state tensors as they are and update them in place)."""
        self.model.kernel.load_state_dict(snapshot["kernel"])
        self.model.likelihood.load_state_dict(snapshot["likelihood"])
        self.optimizer.load_state_dict(clone_tree(snapshot["optimizer"]))
