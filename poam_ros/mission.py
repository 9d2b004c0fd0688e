"""The active-mapping mission loop of the POAM paper (Algorithm 1), without ROS.

pilot survey → fit the scalers and initialise the model → repeat {plan a waypoint, drive there
sampling, update the model with the new samples, evaluate} until the sample budget is spent.

The ROS graph (simulated AUV, ingest, mapper, planner) runs the same loop over DDS; in lockstep
mode it reproduces this one sample for sample, because both draw their random streams from
:func:`mission_seeds` and build their components from the same configuration dataclasses.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from poam_ros.mapping.epochs import EpochRecord, epoch_averages
from poam_ros.mapping.metrics import MapMetrics, evaluate_map, evaluation_points
from poam_ros.models import NumericalError, OnlineSparseGP, UpdateReport, make_model
from poam_ros.params.mission_setup import MissionSetup, mission_seeds
from poam_ros.planners import make_planner, pilot_survey
from poam_ros.sim import (
    SurveySimulator,
    Terrain,
    lower_right_start,
    terrain_from_config,
)
from poam_ros.workspace import Workspace

log = logging.getLogger(__name__)


class MissionError(ValueError):
    """A mission that cannot run as configured; the message says what is wrong."""


@dataclass
class MissionResult:
    """What a mission produced; arrays in world units."""

    records: list[EpochRecord]
    model: OnlineSparseGP
    terrain: Terrain
    workspace: Workspace
    eval_points: np.ndarray  # (G, 2)
    truth: np.ndarray  # (G,)
    samples_x: np.ndarray  # (N, 2)
    samples_y: np.ndarray  # (N,)
    path: np.ndarray  # (P, 3) x, y, yaw of every control step
    wall_time: float

    @property
    def final(self) -> EpochRecord:
        return self.records[-1]

    def averages(self) -> dict[str, float]:
        return epoch_averages(self.records)



class Mission:
    """One simulated mission of Algorithm 1.

    Args:
        setup: the configuration of every component.
        terrain: the terrain to survey; built from ``setup.terrain`` when None (pass one to
            share a loaded map between runs).
    """

    def __init__(self, setup: MissionSetup, terrain: Terrain | None = None):
        self.setup = setup
        self.terrain = terrain or terrain_from_config(setup.terrain)
        self.workspace = Workspace.from_config(setup.workspace)
        self._check_workspace()
        seeds = mission_seeds(setup.mission.seed)
        bounds = self.workspace.bounds
        self.simulator = SurveySimulator(self.terrain, setup.vehicle, setup.sonar,
                                         seed=seeds["simulator"],
                                         start_pose=lower_right_start(bounds))
        self.rng = np.random.default_rng(seeds["planner"])
        self.model = make_model(setup.mapping.replace(seed=seeds["model"]))
        self.planner = make_planner(setup.planning.planner, self.workspace, self.rng,
                                    setup.planner_config())
        self.eval_points = evaluation_points(self.workspace, setup.mission.eval_grid)
        self.truth = self.terrain.elevation(self.eval_points)
        self._path: list[np.ndarray] = []
        self.outside_workspace = 0  # samples dropped for lying outside the workspace
        self.no_return = 0  # soundings that returned nothing (off the terrain)

    def _check_workspace(self) -> None:
        xmin, xmax, ymin, ymax = self.workspace.bounds
        corners = np.array([[xmin, ymin], [xmax, ymax]])
        if not self.terrain.contains(corners).all():
            raise MissionError(f"the workspace bounds {tuple(self.workspace.bounds)} reach "
                               f"outside the terrain extent {tuple(self.terrain.extent)}")

    def run(self, on_epoch: Callable[[EpochRecord], None] | None = None) -> MissionResult:
        """Run the mission to its sample budget; ``on_epoch`` sees every record as it comes."""
        start = time.perf_counter()
        budget = self.setup.mission.max_samples
        waypoints = pilot_survey(self.workspace, self.rng, self.setup.pilot)
        records = [self._epoch(0, waypoints, on_epoch)]
        if self.model.num_samples > budget:
            raise MissionError(f"the sample budget ({budget}) is smaller than the pilot survey "
                               f"({self.model.num_samples} samples): raise "
                               f"mission.max_samples or shorten the pilot survey")
        while self.model.num_samples < budget:
            position = np.asarray(self.simulator.pose[:2])
            goal = self.planner.plan(position, self._predict_std)
            records.append(self._epoch(len(records), goal, on_epoch))
        return MissionResult(records, self.model, self.terrain, self.workspace,
                             self.eval_points, self.truth, self.model.buffer.x.copy(),
                             self.model.buffer.y.copy(), np.vstack(self._path),
                             time.perf_counter() - start)

    def _predict_std(self, xy: np.ndarray) -> np.ndarray:
        # The paper's planner scores the predictive distribution of a measurement.
        return self.model.predict(xy, include_noise=True)[1]

    def _epoch(self, index: int, waypoints: np.ndarray,
               on_epoch: Callable[[EpochRecord], None] | None) -> EpochRecord:
        survey = self.simulator.follow(waypoints)
        self._path.append(survey.poses)
        # As the ingest node: soundings without a return (the vehicle swung beyond the
        # terrain) are dropped first, then those outside the workspace (straight legs may
        # cross no-go zones or a concave boundary); each counted.
        returned = ~np.isposinf(survey.ranges)
        inside = returned & self.workspace.contains(survey.positions)
        self.no_return += int((~returned).sum())
        self.outside_workspace += int((returned & ~inside).sum())
        self.model.add_data(survey.positions[inside], survey.elevations[inside])
        update_failure = None
        try:
            report = self.model.update()
        except NumericalError as error:  # as the mapper node: the last good map stays
            if not self.model.ready:
                raise
            report, update_failure = UpdateReport(num_samples=self.model.num_samples), str(error)
            log.warning("epoch %d: update failed, the previous map stays: %s", index, error)
        tic = time.perf_counter()
        mean, std = self.model.predict(self.eval_points, include_noise=True)
        predict_time = time.perf_counter() - tic
        metrics: MapMetrics = evaluate_map(self.truth, mean, std, self.model.buffer.y)
        record = EpochRecord(index, self.model.num_samples, **metrics.as_dict(),
                             update_time=report.total_time, inducing_time=report.inducing_time,
                             variational_time=report.variational_time,
                             training_time=report.training_time, predict_time=predict_time,
                             num_inducing=report.num_inducing, sim_time=self.simulator.time,
                             training_failure=report.training_failure,
                             update_failure=update_failure)
        if on_epoch is not None:
            on_epoch(record)
        return record


