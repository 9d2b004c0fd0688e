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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .map_grid import MapGridConfig
from .metrics import MapMetrics, evaluate_map, evaluation_points
from .models import MappingConfig, NumericalError, OnlineSparseGP, UpdateReport, make_model
from .node_settings import MapperSettings, PlannerSettings
from .param_files import load_configs
from .params import ConfigError, Params, param
from .planners import PilotSurveyConfig, make_planner, pilot_survey
from .planners.factory import PLANNERS
from .planners.lawnmower import LawnmowerConfig
from .planners.max_entropy import MaxEntropyConfig
from .sim import (MultibeamStreamConfig, SimulatedAuvConfig, SonarConfig, SurveySimulator,
                  Terrain, TerrainConfig, VehicleConfig, lower_right_start, terrain_from_config)
from .workspace import Workspace, WorkspaceConfig

log = logging.getLogger(__name__)


class MissionError(ValueError):
    """A mission that cannot run as configured; the message says what is wrong."""


@dataclass
class MissionConfig(Params):
    """The mission as a whole: budget, evaluation and the seed of every random stream."""

    max_samples: int = param(5000, "stop once the model holds this many samples", low=1)
    eval_grid: int = param(50, "evaluation grid points per axis over the workspace", low=2)
    seed: int = param(0, "seed of the sonar noise, the planner and the model", low=0)


@dataclass
class PlanningConfig(Params):
    """Which informative planner chooses the waypoints after the pilot survey."""

    planner: str = param("max_entropy", "planner after the pilot survey",
                         choices=tuple(PLANNERS))


def mission_seeds(seed: int) -> dict[str, int]:
    """Independent seeds of the simulator, the planner and the model from one mission seed."""
    sim, planner, model = np.random.SeedSequence(seed).generate_state(3)
    return {"simulator": int(sim), "planner": int(planner), "model": int(model) % 2**31}


@dataclass
class MissionSetup:
    """Every component's configuration, grouped by the ROS node that owns it."""

    mission: MissionConfig = field(default_factory=MissionConfig)
    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    vehicle: VehicleConfig = field(default_factory=VehicleConfig)
    sonar: SonarConfig = field(default_factory=SonarConfig)
    mapping: MappingConfig = field(default_factory=MappingConfig)
    planning: PlanningConfig = field(default_factory=PlanningConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    pilot: PilotSurveyConfig = field(default_factory=PilotSurveyConfig)
    max_entropy: MaxEntropyConfig = field(default_factory=MaxEntropyConfig)
    lawnmower: LawnmowerConfig = field(default_factory=LawnmowerConfig)
    grid: MapGridConfig = field(default_factory=MapGridConfig)
    mapper_node: MapperSettings = field(default_factory=MapperSettings)
    planner_node: PlannerSettings = field(default_factory=PlannerSettings)

    #: node name -> parameter prefixes, each the name of the attribute holding that config
    NODES = {
        "simulated_auv": ("terrain", "vehicle", "sonar"),
        "mapper": ("mapping", "grid"),
        "planner": ("planning", "workspace", "pilot", "max_entropy", "lawnmower"),
        "mission": ("mission",),
    }
    #: node name -> {parameter prefix: config class} of the parameters the ROS nodes declare
    #: besides those above; the ROS-free mission does not use them, but a file naming them
    #: is still checked against them.
    ROS_ONLY = {
        "simulated_auv": {"": SimulatedAuvConfig, "multibeam": MultibeamStreamConfig},
    }
    #: node name -> attribute holding the node's own, unprefixed parameters
    NODE_SETTINGS = {"mapper": "mapper_node", "planner": "planner_node"}

    @classmethod
    def from_file(cls, path) -> "MissionSetup":
        """Load from a ROS parameter file (``config/*.yaml``); unknown keys are errors."""
        values, defaults = {}, cls()
        for node, prefixes in cls.NODES.items():
            classes = {prefix: type(getattr(defaults, prefix)) for prefix in prefixes}
            own = cls.NODE_SETTINGS.get(node)
            if own:
                classes[""] = type(getattr(defaults, own))
            loaded = load_configs(path, node, {**cls.ROS_ONLY.get(node, {}), **classes})
            if own:
                values[own] = loaded[""]
            values.update({prefix: loaded[prefix] for prefix in prefixes})
        return cls(**values)

    def node_parameters(self, node: str) -> dict[str, Any]:
        """The parameters a launcher gives ``node``, as ``{dotted name: value}``.

        The node's configs, plus what the ROS graph needs to run :class:`Mission`'s loop:
        the simulator's, the mapper's model and the planner's seeds derived from
        ``mission.seed`` and the vehicle's start pose (as :class:`Mission` derives them),
        and the planner's workspace for the mapper (its map covers the workspace). Empty
        lists are left out: ROS cannot tell their element type, and each such field's
        default is empty.
        """
        if node not in self.NODES:
            raise ConfigError(f"unknown node {node!r}; known: {', '.join(self.NODES)}")
        seeds = mission_seeds(self.mission.seed)
        configs = {prefix: getattr(self, prefix) for prefix in self.NODES[node]}
        if node in self.NODE_SETTINGS:
            configs[""] = getattr(self, self.NODE_SETTINGS[node])
        if node == "mapper":
            configs["mapping"] = self.mapping.replace(seed=seeds["model"])
            configs["workspace"] = self.workspace
        if node == "planner":
            configs[""] = self.planner_node.replace(seed=seeds["planner"])
        parameters = {}
        for prefix, config in configs.items():
            for spec in config.specs():
                value = getattr(config, spec.name)
                name = f"{prefix}.{spec.name}" if prefix else spec.name
                if value == [] and spec.default != []:
                    raise ConfigError(f"{name}: an empty list cannot be passed as a ROS "
                                      f"parameter override")
                if value != []:
                    parameters[name] = value
        if node == "simulated_auv":
            parameters["seed"] = seeds["simulator"]
            start = lower_right_start(Workspace.from_config(self.workspace).bounds)
            parameters["start_pose"] = [float(v) for v in start]
        return parameters

    def over_map(self, path) -> "MissionSetup":
        """This setup over the terrain file ``path`` (a command's ``--map``), read with the
        setup's other terrain settings (extent, row order, resizing, void filling)."""
        return replace(self, terrain=self.terrain.replace(path=str(path)))

    def planner_config(self) -> Params | None:
        return {"max_entropy": self.max_entropy, "lawnmower": self.lawnmower}.get(
            self.planning.planner)

    def to_dict(self) -> dict:
        return {name: getattr(self, name).to_dict() for name in self.__dataclass_fields__}


@dataclass
class EpochRecord:
    """Metrics and timings after one decision epoch (epoch 0: after the pilot survey)."""

    epoch: int
    num_samples: int
    smse: float
    msll: float
    nlpd: float
    rmse: float
    mae: float
    update_time: float
    inducing_time: float
    variational_time: float
    training_time: float
    predict_time: float
    num_inducing: int
    sim_time: float
    training_failure: str | None = None
    #: a failed E-step: the epoch's samples wait for the next update, the previous map is scored
    update_failure: str | None = None


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


AVERAGED_METRICS = ("smse", "msll", "nlpd", "rmse", "mae", "update_time", "predict_time")


def epoch_averages(records: list[EpochRecord]) -> dict[str, float]:
    """Metrics averaged over decision epochs, as the paper's text describes Table I."""
    return {k: float(np.mean([getattr(r, k) for r in records])) for k in AVERAGED_METRICS}


def sample_averages(records: list[EpochRecord], first: int, last: int) -> dict[str, float] | None:
    """Metrics averaged over the sample counts ``first`` … ``last``, or None when the records
    do not span them.

    Each count's value is interpolated linearly between the epochs around it, so an epoch
    weighs by the samples it spans and the early epochs before ``first`` drop out. The POAM
    authors' released metrics scripts average their runs so, over 1,000 … 5,000 samples.
    Where epochs share a count (a failed update adds none), the last of them counts.
    """
    if not records or records[0].num_samples > first or records[-1].num_samples < last:
        return None
    counts = np.array([r.num_samples for r in records])
    keep = np.append(counts[1:] != counts[:-1], True)  # the last record of each count
    grid = np.arange(first, last + 1)
    return {k: float(np.mean(np.interp(grid, counts[keep],
                                       [getattr(r, k) for r, kept in zip(records, keep) if kept])))
            for k in AVERAGED_METRICS}


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


def default_parameter_file() -> Path:
    """The package's default parameter file (source tree or installed share directory)."""
    here = Path(__file__).resolve().parent
    # Installed, the package sits in <prefix>/lib/pythonX.Y/site-packages/poam_ros and the
    # file in <prefix>/share/poam_ros/config; look in every ancestor rather than count levels.
    candidates = [here.parent / "config" / "poam_ros.yaml"]
    candidates += [ancestor / "share" / "poam_ros" / "config" / "poam_ros.yaml"
                   for ancestor in here.parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ConfigError("cannot find config/poam_ros.yaml next to the package or in its "
                      "installed share directory")
