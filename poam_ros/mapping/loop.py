"""The one mapping loop: batches in, one update with the one failure rule, maps and records out.

Every route from a sounding to a map ends here: the mapper node's worker, the offline remap
and the ROS-free mission each hand their batches to :meth:`MappingLoop.step`, then ask for
what they publish or score. So the three make the same update from the same samples, and
fail alike:

* a batch the model cannot read (:class:`InvalidBatchError`) is refused whole and named in
  the step, the others go in;
* samples outside the workspace's bounding box (a misconfigured publisher, a stray fix) are
  refused and counted (``outside_workspace`` in the model's rejections) before they reach
  the model, where one far outlier in the first batch would fix the frozen input scaler;
* the frozen input scaling spans the workspace's bounding box instead of the first update's
  samples where ``mapping.input_scaling`` says so (``workspace``, or ``auto`` when those
  samples span less than half of it along an axis: a first batch of a few metres of track
  would otherwise fix scaled units of a few metres for a survey of kilometres, and the
  kernel's lengthscales, bounded in scaled units, with them);
* a failed update never poisons the queue. The update that failed (:data:`UPDATE_FAILURES`:
  a :class:`NumericalError` after the jitter escalation, a batch the method refuses, memory,
  any other runtime error of the numerics) left the model as it was; the step retries the
  oldest half of the pending samples, then a quarter, down to a sixteenth
  (``MAX_SPLITS``). If one succeeds, the map moves on and the rest wait for the next step
  (which splits again if it must). If none does, retrying cannot fix it: the pending samples
  are set aside (dropped from the model, counted as ``update_failed``) and the last good
  map stays. Either way the step says what happened;
* an update that adds nothing (empty batches, every sample refused) is a step too: the map
  stands for those batches;
* between updates the model may train on (``mapping.idle_steps``, the mapper's idle time
  while the vehicle flies its leg): after an update that took samples that many Adam steps
  of its M-step are due (:attr:`MappingLoop.idle_due`). The ROS-free mission and the remap
  run them all at the start of the next step; the mapper node runs them in rounds while no
  batch waits (:meth:`MappingLoop.idle`) and forgoes the rest when one comes, so that an
  update never waits for them.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field, fields
from typing import Iterable, Sequence

import numpy as np

from poam_ros.mapping.binary import (
    ChannelSpread,
    binary_channels,
    channel_spread,
    evaluate_binary,
)
from poam_ros.mapping.channels import output_count
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.mapping.map_grid import MapGrid, MapLayers, predict_map
from poam_ros.mapping.metrics import MapMetrics, TargetBaseline, evaluate_map
from poam_ros.models import NumericalError, OnlineSparseGP, UpdateReport
from poam_ros.models.samples import InvalidBatchError
from poam_ros.workspace import Workspace

log = logging.getLogger(__name__)

#: What a failed update may raise: the model is left as before the update (see
#: ``OnlineSparseGP.update``). Programming errors (TypeError, …) are not caught.
UPDATE_FAILURES = (NumericalError, MemoryError, RuntimeError)
#: Halvings of the pending samples tried after a failed update before they are set aside.
MAX_SPLITS = 4
#: Rejection reason of samples outside the workspace's bounding box.
OUTSIDE_WORKSPACE = "outside_workspace"

METRICS = tuple(field.name for field in fields(MapMetrics))


@dataclass
class MapStep:
    """What one :meth:`MappingLoop.step` did: the update's report (an empty one when every
    try failed), the failure that kept the previous map, the batches refused whole, and how
    a failed update was recovered (a split that succeeded, or samples set aside)."""

    report: UpdateReport
    failure: str | None = None
    refused: list[str] = field(default_factory=list)
    recovery: str | None = None
    set_aside: int = 0
    #: The idle training run at the start of the step (Adam steps, seconds).
    idle_steps: int = 0
    idle_time: float = 0.0


@dataclass
class Scoring:
    """Ground truth at evaluation points: ``points`` (G, 2) [m], ``truth`` (G,), or (G, D)
    for a multi-channel model with the channels' ``names`` (D,), depth first."""

    points: np.ndarray
    truth: np.ndarray
    names: tuple[str, ...] = ()


class MappingLoop:
    """Drives ``model`` batch by batch; see the module docstring.

    ``scoring`` (optional) scores each step against ground truth, as the paper scores an
    epoch: the predictive distribution of a new measurement at the evaluation points.
    """

    def __init__(self, model: OnlineSparseGP, scoring: Scoring | None = None,
                 workspace: Workspace | None = None) -> None:
        self.model = model
        self.scoring = scoring
        self.workspace = workspace
        #: Adam steps of idle training due before the next update (see the module docstring).
        self.idle_due = 0

    def step(self, batches: Iterable[tuple[np.ndarray, np.ndarray]],
             idle: bool = True) -> MapStep:
        """Run the idle steps still due (``idle``; else they are forgone), add each batch
        (positions (N, 2) [m], elevations (N,) or, for a multi-channel model, values (N, D)
        with NaN where not measured), then update once."""
        steps = self.idle_due
        idled = self.idle() if idle else None
        self.idle_due = 0
        refused = []
        for xy, z in batches:
            try:
                self.model.add_data(*self._inside(xy, z))
            except InvalidBatchError as error:  # the model counts it as malformed_batch
                refused.append(str(error))
        try:
            mapped = MapStep(self._updated(), refused=refused)
        except UPDATE_FAILURES as error:
            mapped = self._recover(_describe(error), refused)
        if mapped.failure is None and not mapped.report.skipped:
            self.idle_due = self.model.config.idle_steps
        if idled is not None and idled.training_time:
            mapped.idle_steps, mapped.idle_time = steps, idled.training_time
        return mapped

    def idle(self, steps: int | None = None) -> UpdateReport:
        """Up to ``steps`` (None: all) of the idle steps due (:meth:`OnlineSparseGP.refine
        <poam_ros.models.OnlineSparseGP.refine>`); nothing stays due for a method that does
        not refine."""
        count = self.idle_due if steps is None else min(steps, self.idle_due)
        report = self.model.refine(count)
        self.idle_due = self.idle_due - count if report.training_time else 0
        return report

    def _updated(self, max_new: int | None = None) -> UpdateReport:
        """The model's update, its report with the model's diagnostics (the learned noise; with
        several channels also their correlations) when it took samples."""
        self._span_inputs()
        report = self.model.update(max_new)
        if not report.skipped:
            report.extra.update(self.model.diagnostics())
        return report

    def _span_inputs(self) -> None:
        """Before the first update: the input scaler to span the workspace's bounding box where
        ``mapping.input_scaling`` says so (see the module docstring). The model fits its
        scaler on all its samples (:attr:`buffer`), so those decide ``auto``."""
        model, workspace = self.model, self.workspace
        scaler, mode, x = model.x_scaler, model.config.input_scaling, model.buffer.x
        if (scaler.fitted or scaler.extent is not None or workspace is None
                or mode == "first_batch" or not len(x)):
            return
        xmin, xmax, ymin, ymax = workspace.bounds
        low, high = np.array([xmin, ymin]), np.array([xmax, ymax])
        if mode == "auto":
            span = np.ptp(x, axis=0)
            if np.all(span >= 0.5 * (high - low)):
                return
            log.warning("the first update's %d samples span %.4g m x %.4g m of the workspace's "
                        "%.4g m x %.4g m: the input scaling spans the workspace "
                        "(mapping.input_scaling: auto)", len(x), *span,
                        *(high - low))
        scaler.extent = (low, high)

    def _inside(self, xy, z) -> tuple:
        """The samples of a batch within the workspace's bounding box; malformed batches pass
        unchanged, for the model to refuse and count."""
        if self.workspace is None:
            return xy, z
        xy, z = np.asarray(xy), np.asarray(z)
        if xy.ndim != 2 or xy.shape[-1] != 2 or z.shape[:1] != xy.shape[:1]:
            return xy, z
        xmin, xmax, ymin, ymax = self.workspace.bounds
        with np.errstate(invalid="ignore"):
            outside = (xy[:, 0] < xmin) | (xy[:, 0] > xmax) | (xy[:, 1] < ymin) | (
                xy[:, 1] > ymax)
        if outside.any():
            self.model.rejections[OUTSIDE_WORKSPACE] += int(outside.sum())
            return xy[~outside], z[~outside]
        return xy, z

    def _recover(self, failure: str, refused: list[str]) -> MapStep:
        """After a failed update of the pending samples: the oldest half, quarter, … of them
        (see the module docstring), else set them all aside."""
        model = self.model
        pending = model.num_pending
        size = pending
        for _ in range(MAX_SPLITS):
            size //= 2
            if size == 0:
                break
            try:
                report = self._updated(max_new=size)
            except UPDATE_FAILURES as error:
                failure = f"{failure}; the oldest {size} alone: {_describe(error)}"
                continue
            return MapStep(report, refused=refused, recovery=(
                f"an update of {pending} new samples failed ({failure}); the oldest {size} "
                f"were mapped, {model.num_pending} wait for the next update"))
        dropped = model.set_aside_pending()
        return MapStep(UpdateReport(num_samples=model.num_samples), failure, refused,
                       recovery=f"{dropped} new samples set aside (update_failed): their "
                                f"update failed ({failure})", set_aside=dropped)

    def snapshot(self) -> MappingLoop:
        """A loop over a deep copy of the model as it is now, for readers beside this loop:
        its map, queries and saves stay this moment's while this loop updates on (the mapper
        node's served model)."""
        return MappingLoop(copy.deepcopy(self.model), self.scoring, self.workspace)

    def layers(self, grid: MapGrid, include_noise: bool = False,
               lengthscale: bool = True) -> MapLayers:
        """The current map on ``grid`` (what the mapper publishes)."""
        return predict_map(self.model, grid, include_noise, lengthscale)

    def evaluation(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std of a new measurement at ``points`` (N, 2) (``map/evaluation``): (N,),
        or (N, D) with several channels."""
        return self.model.predict(points, include_noise=True)

    def uncertainty(self, points: np.ndarray,
                    planned: np.ndarray | None = None) -> np.ndarray | ChannelSpread:
        """What the planner scores at ``points`` (N, 2) (``uncertainty/response``,
        :func:`~poam_ros.planners.acquisition.predictive_entropy`): the std of a new
        measurement (N,), or with several channels their covariance (N, D, D), with a binary
        channel also its probability (a :class:`~poam_ros.mapping.binary.ChannelSpread`).

        ``planned`` (T, 2): where other vehicles will sample (a fleet's teammates' plans,
        :mod:`~poam_ros.planners.coordination`); the std is then conditioned on noisy samples
        there (:meth:`~poam_ros.models.prediction.Prediction.conditioned_std`). A method that
        cannot condition (:attr:`conditions` False: the multi-channel models, the Bernoulli
        dual GP) answers without them."""
        if planned is not None and len(planned) and self.conditions:
            return self.model.prediction.conditioned_std(points, planned, include_noise=True)
        if output_count(self.model) == 1:
            return self.model.predict(points, include_noise=True)[1]
        mean, _, covariance = self.model.predict(points, include_noise=True, covariance=True)
        binary = binary_channels(self.model)
        return channel_spread(mean, covariance, binary) if binary.any() else covariance

    @property
    def conditions(self) -> bool:
        """Whether :meth:`uncertainty` conditions on planned samples with this method."""
        return self.model.prediction.conditions

    def record(self, epoch: int, step: MapStep, sim_time: float,
               predict_time: float = math.nan) -> EpochRecord:
        """The epoch's record: the step's timings, scored against the ground truth when
        there is one (the prediction's time is then ``predict_time``), NaN metrics
        otherwise or where they are undefined (constant targets after one batch, a channel
        not in the model yet). With several channels the record's metrics are the first
        channel's (depth) and ``extra`` holds every channel's as ``<metric>_<name>``."""
        metrics, per_channel = dict.fromkeys(METRICS, math.nan), {}
        if self.scoring is not None and self.model.ready:
            tic = time.perf_counter()
            mean, std = self.evaluation(self.scoring.points)
            predict_time = time.perf_counter() - tic
            truth, targets = self.scoring.truth, self.model.buffer.y
            if truth.ndim == 1:
                scored = score(truth, mean, std, targets)
                metrics = metrics if scored is None else scored.as_dict()
            else:
                measured = [column[np.isfinite(column)] for column in targets.T]
                metrics, per_channel = score_channels(self.scoring.names, truth, mean, std,
                                                      measured, binary_channels(self.model))
        report = step.report
        return EpochRecord(epoch, self.model.num_samples, **metrics,
                           update_time=report.total_time, inducing_time=report.inducing_time,
                           variational_time=report.variational_time,
                           training_time=report.training_time, predict_time=predict_time,
                           num_inducing=self.model.inducing.shape[0] if self.model.ready
                           else 0, sim_time=sim_time,
                           training_failure=report.training_failure,
                           update_failure=step.failure,
                           extra={**report.extra, **per_channel, **(
                               {"idle_steps": step.idle_steps, "idle_time": step.idle_time}
                               if step.idle_steps else {})})


def _describe(error: BaseException) -> str:
    """A failure in one line: the numerics' own message, or the exception's type and text."""
    return str(error) if isinstance(error, NumericalError) else f"{type(error).__name__}: {error}"


def score_channels(names: Sequence[str], truth: np.ndarray, mean: np.ndarray,
                   std: np.ndarray, targets: Sequence,
                   binary: Sequence[bool] = ()) -> tuple[dict, dict]:
    """Each channel's metrics against its truth: ``truth``, ``mean``, ``std`` (G, D), the
    channels ``names`` (D,), depth first, and each channel's measured ``targets`` (or their
    :class:`~poam_ros.mapping.metrics.TargetBaseline`; None: not measured yet). A channel
    flagged in ``binary`` (D,) is scored as one (:func:`~poam_ros.mapping.binary.
    evaluate_binary`: its truth P(y = 1), its mean and std the latent's). Returns the
    first channel's metrics and every channel's as ``{<metric>_<name>: value}``, NaN where
    undefined (a channel not in the model yet)."""
    first, per_channel = {}, {}
    binary = list(binary) or [False] * len(names)
    for d, name in enumerate(names):
        scored = None if targets[d] is None else score(truth[:, d], mean[:, d], std[:, d],
                                                       targets[d], binary[d])
        channel = dict.fromkeys(METRICS, math.nan) if scored is None else scored.as_dict()
        first = channel if d == 0 else first
        per_channel.update({f"{key}_{name}": value for key, value in channel.items()})
    return first, per_channel


def score(truth: np.ndarray, mean: np.ndarray, std: np.ndarray,
          targets: np.ndarray | TargetBaseline, binary: bool = False) -> MapMetrics | None:
    """:func:`evaluate_map` (:func:`~poam_ros.mapping.binary.evaluate_binary` for a
    ``binary`` channel), or None where the metrics are undefined (constant targets)."""
    try:
        return (evaluate_binary if binary else evaluate_map)(truth, mean, std, targets)
    except ValueError:
        return None
