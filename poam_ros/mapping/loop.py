"""The one mapping loop: batches in, one update with the one failure rule, maps and records out.

Every route from a sounding to a map ends here: the mapper node's worker, the offline remap
and the ROS-free mission each hand their batches to :meth:`MappingLoop.step`, then ask for
what they publish or score. So the three make the same update from the same samples, and
fail alike:

* a batch the model cannot read (:class:`InvalidBatchError`) is refused whole and named in
  the step, the others go in;
* a failed update (:class:`NumericalError`) keeps the last good map: the model is left as
  before the update, its samples wait for the next one, and the step names the failure;
* an update that adds nothing (empty batches, every sample refused) is a step too: the map
  stands for those batches.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from typing import Iterable

import numpy as np

from poam_ros.mapping.epochs import EpochRecord
from poam_ros.mapping.map_grid import MapGrid, MapLayers, predict_map
from poam_ros.mapping.metrics import MapMetrics, evaluate_map
from poam_ros.models import NumericalError, OnlineSparseGP, UpdateReport
from poam_ros.models.samples import InvalidBatchError

METRICS = tuple(field.name for field in fields(MapMetrics))


@dataclass
class MapStep:
    """What one :meth:`MappingLoop.step` did: the update's report (an empty one when it
    failed), the failure that kept the previous map, and the batches refused whole."""

    report: UpdateReport
    failure: str | None = None
    refused: list[str] = field(default_factory=list)


@dataclass
class Scoring:
    """Ground truth at evaluation points: ``points`` (G, 2) [m], ``truth`` (G,)."""

    points: np.ndarray
    truth: np.ndarray


class MappingLoop:
    """Drives ``model`` batch by batch; see the module docstring.

    ``scoring`` (optional) scores each step against ground truth, as the paper scores an
    epoch: the predictive distribution of a new measurement at the evaluation points.
    """

    def __init__(self, model: OnlineSparseGP, scoring: Scoring | None = None) -> None:
        self.model = model
        self.scoring = scoring

    def step(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> MapStep:
        """Add each batch (positions (N, 2) [m], elevations (N,)), then update once."""
        refused = []
        for xy, z in batches:
            try:
                self.model.add_data(xy, z)
            except InvalidBatchError as error:  # the model counts it as malformed_batch
                refused.append(str(error))
        try:
            return MapStep(self.model.update(), refused=refused)
        except NumericalError as error:
            return MapStep(UpdateReport(num_samples=self.model.num_samples), str(error),
                           refused)

    def layers(self, grid: MapGrid, include_noise: bool = False,
               lengthscale: bool = True) -> MapLayers:
        """The current map on ``grid`` (what the mapper publishes)."""
        return predict_map(self.model, grid, include_noise, lengthscale)

    def evaluation(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std of a new measurement at ``points`` (N, 2) (``map/evaluation``)."""
        return self.model.predict(points, include_noise=True)

    def record(self, epoch: int, step: MapStep, sim_time: float,
               predict_time: float = math.nan) -> EpochRecord:
        """The epoch's record: the step's timings, scored against the ground truth when
        there is one (the prediction's time is then ``predict_time``), NaN metrics
        otherwise or where they are undefined (constant targets after one batch)."""
        metrics = dict.fromkeys(METRICS, math.nan)
        if self.scoring is not None and self.model.ready:
            tic = time.perf_counter()
            mean, std = self.evaluation(self.scoring.points)
            predict_time = time.perf_counter() - tic
            scored = score(self.scoring.truth, mean, std, self.model.buffer.y)
            if scored is not None:
                metrics = scored.as_dict()
        report = step.report
        return EpochRecord(epoch, self.model.num_samples, **metrics,
                           update_time=report.total_time, inducing_time=report.inducing_time,
                           variational_time=report.variational_time,
                           training_time=report.training_time, predict_time=predict_time,
                           num_inducing=report.num_inducing, sim_time=sim_time,
                           training_failure=report.training_failure,
                           update_failure=step.failure)


def score(truth: np.ndarray, mean: np.ndarray, std: np.ndarray,
          targets: np.ndarray) -> MapMetrics | None:
    """:func:`evaluate_map`, or None where the metrics are undefined (constant targets)."""
    try:
        return evaluate_map(truth, mean, std, targets)
    except ValueError:
        return None
