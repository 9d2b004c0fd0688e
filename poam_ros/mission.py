"""The active-mapping mission loop of the POAM paper (Algorithm 1), without ROS.

pilot survey → fit the scalers and initialise the model → repeat {plan a waypoint, drive there
sampling, update the model with the new samples, evaluate} until a budget is spent
(:mod:`poam_ros.planners.mission_control`, the planner node's rule; by default the sample
budget, the planner's ``mission.max_samples``).

The ROS graph (simulated AUV, ingest, mapper, planner) runs the same loop over DDS; in lockstep
mode it reproduces this one sample for sample, because both draw their random streams from
:func:`mission_seeds` and build their components from the same configuration dataclasses.

Several channels (opt-in): with ``temperature.enabled`` the vehicle also carries the simulated
temperature sensor (:mod:`poam_ros.sim.water_temperature`), with ``seabed_class.enabled`` a
seabed classifier (:mod:`poam_ros.sim.seabed_class`: a binary channel, mapped with
``mapping.channel_likelihoods`` ``bernoulli``), the ingest's ``channels`` name them, and a
multi-channel method (``poam-mt``, ``cmogp``) maps depth and the channels jointly from
(N, 2) samples with NaN where a channel was not measured; each epoch is scored per channel
against its truth (``extra``: ``smse_depth``, ``msll_temperature``, ``nlpd_seabed_class``,
...; a binary channel as :func:`~poam_ros.mapping.binary.evaluate_binary` scores it).
The planner scores the channels' predictive covariance as ``max_entropy.acquisition`` says.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from poam_ros.attitude import quaternion_from_rpy
from poam_ros.ingest import Ingest, SampleBatch
from poam_ros.ingest.reasons import NO_RETURN, OUTSIDE_WORKSPACE
from poam_ros.mapping.channels import survey_model
from poam_ros.mapping.epochs import EpochRecord, epoch_averages
from poam_ros.mapping.loop import MappingLoop, Scoring
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.mapping.metrics import evaluation_points
from poam_ros.models import OnlineSparseGP
from poam_ros.params import ConfigError
from poam_ros.planners import make_planner, pilot_survey
from poam_ros.planners.mission_control import (
    RETURNING,
    RUNNING,
    MissionController,
    std_statistic,
)
from poam_ros.setup.mission_setup import MissionError, MissionSetup, mission_seeds
from poam_ros.setup.truth import field_truth, mission_terrain, survey_fields
from poam_ros.sim import (
    SimulatedAuv,
    SimulationError,
    SonarConfig,
    SurveySimulator,
    Terrain,
    lower_right_start,
)
from poam_ros.sim.simulated_auv import Odom, Reading, Sounding
from poam_ros.workspace import Workspace

log = logging.getLogger(__name__)


@dataclass
class MissionResult:
    """What a mission produced; arrays in world units."""

    records: list[EpochRecord]
    model: OnlineSparseGP
    terrain: Terrain
    workspace: Workspace
    eval_points: np.ndarray  # (G, 2)
    truth: np.ndarray  # (G,); (G, D) with channels, depth first
    samples_x: np.ndarray  # (N, 2)
    samples_y: np.ndarray  # (N,); (N, D) with channels, NaN where not measured
    path: np.ndarray  # (P, 3) x, y, yaw of every control step
    wall_time: float

    @property
    def final(self) -> EpochRecord:
        return self.records[-1]

    def averages(self) -> dict[str, float]:
        return epoch_averages(self.records)


class Mission:
    """One simulated mission of Algorithm 1, on the route every sounding takes.

    The simulated AUV steps in lockstep (:class:`~poam_ros.sim.SimulatedAuv`, as the
    ``simulated_auv`` node), its odometry and soundings go through the sensor ingest
    (:class:`~poam_ros.ingest.Ingest`, as the ``sensor_ingest`` node: placed at the
    interpolated pose, dropped and counted by reason) and each leg's batch through the
    mapping loop (:class:`~poam_ros.mapping.loop.MappingLoop`, as the mapper node).

    Args:
        setup: the configuration of every component.
        terrain: the terrain to survey; built from ``setup.terrain`` (placed through the
            anchor ``setup.geo`` when georeferenced) when None (pass one to share a loaded
            map between runs).
    """

    def __init__(self, setup: MissionSetup, terrain: Terrain | None = None):
        self.setup = setup
        self.terrain = terrain or mission_terrain(setup)
        self.workspace = Workspace.from_config(setup.workspace)
        self._check_workspace()
        seeds = mission_seeds(setup.mission.seed)
        simulator = SurveySimulator(self.terrain, setup.vehicle, setup.sonar,
                                    seed=seeds["simulator"],
                                    start_pose=lower_right_start(self.workspace.bounds))
        self.fields, measured = survey_fields(setup, self.terrain)
        sensors = [channel.sensor(seeds["simulator"]) for channel in measured]
        self.auv = SimulatedAuv(simulator, "lockstep", sensors=sensors)
        # The ingest drops what lies outside the mission's workspace, as poam-ros sim
        # configures the sensor_ingest node (MissionSetup.node_parameters).
        self.ingest = Ingest(setup.ingest, self.workspace)
        self.rng = np.random.default_rng(seeds["planner"])
        self.model = self._model(setup.mapping.replace(seed=seeds["model"]))
        self.planner = make_planner(setup.planning.planner, self.workspace, self.rng,
                                    setup.planner_config())
        radius = setup.vehicle.turn_radius
        if setup.planning.planner == "max_entropy" and \
                setup.max_entropy.turning_radius != radius:
            log.warning("max_entropy.turning_radius %g m differs from the vehicle's turn "
                        "radius %g m: the planner's distances are not the paths flown",
                        setup.max_entropy.turning_radius, radius)
        self.eval_points = evaluation_points(self.workspace, setup.mission.eval_grid)
        self.truth = field_truth(self.fields, self.eval_points)
        scoring = Scoring(self.eval_points, self.truth,
                          tuple(self.fields) if len(self.fields) > 1 else ())
        self.loop = MappingLoop(self.model, scoring, self.workspace)
        self._path: list[tuple[float, float, float]] = []
        self.last_plan = np.empty((0, 2))  # (W, 2) m: the leg flown last
        self.last_batch = np.empty((0, 3))  # (S, 3 + C): its samples, x, y, elevation, ...
        self.control = MissionController(setup.mission_control)  # states, budgets, reasons

    def _model(self, config) -> OnlineSparseGP:
        """The configured method; with channels one of D = 1 + C outputs."""
        try:
            return survey_model(config, list(self.fields)[1:])
        except ConfigError as error:
            raise MissionError(str(error)) from None

    @property
    def trail(self) -> np.ndarray:
        """(P, 3) x, y [m], yaw [rad] of every control step so far."""
        return np.array(self._path).reshape(-1, 3)

    @property
    def outside_workspace(self) -> int:
        """Soundings the ingest dropped outside the workspace (legs that cross its boundary)."""
        return self.ingest.drops.counts[OUTSIDE_WORKSPACE]

    @property
    def no_return(self) -> int:
        """Soundings without a return (the vehicle swung beyond the terrain)."""
        return self.ingest.drops.counts[NO_RETURN]

    def _check_workspace(self) -> None:
        xmin, xmax, ymin, ymax = self.workspace.bounds
        corners = np.array([[xmin, ymin], [xmax, ymax]])
        if not self.terrain.contains(corners).all():
            raise MissionError(f"the workspace bounds {tuple(self.workspace.bounds)} reach "
                               f"outside the terrain extent {tuple(self.terrain.extent)}")

    def run(self, on_epoch: Callable[[EpochRecord], None] | None = None) -> MissionResult:
        """Run the mission until a budget ends it (:class:`MissionController`, as the planner
        node's: checked after each leg's update, the legs are not cut); with ``on_budget:
        home`` the leg home is the last epoch. ``on_epoch`` sees every record as it comes."""
        start = time.perf_counter()
        control = self.control
        if not control.config.bounded:
            raise MissionError("the mission has no budget: set one of the planner's "
                               "mission.max_samples, max_time, max_distance, std_threshold")
        control.start()
        waypoints = pilot_survey(self.workspace, self.rng, self.setup.pilot)
        records = [self._epoch(0, waypoints, on_epoch)]
        budget = control.config.max_samples
        if budget and self.model.num_samples > budget:
            raise MissionError(f"the sample budget ({budget}) is smaller than the pilot survey "
                               f"({self.model.num_samples} samples): raise "
                               f"mission.max_samples or shorten the pilot survey")
        while control.state in RUNNING:
            position = np.asarray(self.auv.pose[:2])
            goal = self.planner.plan(position, self.predict_std, self.auv.pose[2])
            control.planning_started()
            records.append(self._epoch(len(records), goal, on_epoch))
        if control.state == RETURNING:
            records.append(self._epoch(len(records), control.home[None, :], on_epoch))
            control.home_reached()
        log.info("mission %s: %s", control.state, control.reason)
        return MissionResult(records, self.model, self.terrain, self.workspace,
                             self.eval_points, self.truth, self.model.buffer.x.copy(),
                             self.model.buffer.y.copy(), self.trail,
                             time.perf_counter() - start)

    def predict_std(self, xy: np.ndarray, planned: np.ndarray | None = None) -> np.ndarray:
        """What the planner scores at ``xy`` (N, 2) [m], as the mapper answers the planner
        node's queries: the predictive distribution of a measurement (of every channel, with
        several); in a fleet, given the teammates' samples at ``planned`` (T, 2) [m]
        (:class:`~poam_ros.planners.coordination.Coordinator` plans with it)."""
        return self.loop.uncertainty(xy, planned)

    def _map_std(self) -> float:
        """The map-quality statistic of the map the mapper node would publish (its grid, the
        depth's std), NaN when no map-quality stop is set or no model is ready."""
        config = self.setup.mission_control
        if not config.std_threshold or not self.model.ready:
            return math.nan
        grid = MapGrid.from_config(self.setup.grid, self.workspace)
        std = self.loop.layers(grid, self.setup.mapper_node.std_includes_noise, False).std
        return std_statistic(std, config.std_statistic)  # the depth's layer

    def _survey(self, waypoints: np.ndarray) -> list[SampleBatch]:
        """Drive ``waypoints`` and feed the ingest as the nodes would: the plan, then every
        pose and sounding in time order (the event's sim time stands for the wall clock);
        returns the batches cut, the leg's arrival last."""
        auv, ingest, sonar = self.auv, self.ingest, self.setup.sonar
        ingest.set_plan(waypoints, auv.time, auv.time)
        auv.set_plan(waypoints)
        for event in auv.advance(math.inf):
            if isinstance(event, Odom):
                self._path.append((event.x, event.y, event.yaw))
                self.control.observe_pose(event.t, (event.x, event.y, event.z))
            feed_ingest(ingest, event, sonar)
        if auv.last_failure:
            raise SimulationError(auv.last_failure)
        ingest.poll(math.inf)  # the leg is over: nothing more is in flight
        return ingest.take_batches()

    def _epoch(self, index: int, waypoints: np.ndarray,
               on_epoch: Callable[[EpochRecord], None] | None) -> EpochRecord:
        batches = self._survey(waypoints)
        self.last_plan = np.asarray(waypoints, dtype=float)
        self.last_batch = np.concatenate([batch.points for batch in batches]) if batches else \
            np.empty((0, 3))
        step = self.loop.step((batch.points[:, :2], batch.targets) for batch in batches)
        if step.failure is not None:
            if not self.model.ready:
                raise MissionError(f"the first update failed: {step.failure}")
            log.warning("epoch %d: update failed, the previous map stays: %s", index,
                        step.failure)
        record = self.loop.record(index, step, self.auv.time)
        self.control.observe_map(self.model.num_samples, self._map_std())
        if on_epoch is not None:
            on_epoch(record)
        return record


def feed_ingest(ingest: Ingest, event, sonar: SonarConfig) -> None:
    """Hand one simulator event (an ``Odom``, a ``Sounding`` or a channel's ``Reading``) to
    the ingest as the nodes would; the event's sim time stands for the wall clock."""
    if isinstance(event, Odom):
        ingest.add_pose(event.t, event.x, event.y, event.z, event.yaw, event.t,
                        orientation=quaternion_from_rpy(event.roll, event.pitch, event.yaw))
    elif isinstance(event, Sounding):
        ingest.add_range(event.t, event.range, sonar.min_range, sonar.max_range, event.t)
    elif isinstance(event, Reading):
        ingest.add_reading(event.t, event.channel, event.value, event.t)
