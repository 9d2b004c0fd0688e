"""The mission's configuration: every component's settings grouped by the ROS node that owns
them, loaded from one parameter file, and the seeds every random stream derives from.

The ROS-free mission, the launcher of the ROS graph, the remap and the sweep all build their
components from a :class:`MissionSetup`, so that the same file gives the same mission
everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from poam_ros.geo.geojson import resolve_workspace
from poam_ros.geo.georeference import GeoConfig, GeoReference
from poam_ros.ingest import IngestConfig
from poam_ros.mapping.journal import JournalConfig
from poam_ros.mapping.map_grid import MapGridConfig
from poam_ros.models import MappingConfig
from poam_ros.params import ConfigError, Params, param
from poam_ros.params.files import (
    PARAMETERS_KEY,
    dump_parameters,
    load_configs,
    load_parameter_tree,
)
from poam_ros.params.node_settings import MapperSettings, PlannerSettings
from poam_ros.planners import InputCheckConfig, PilotSurveyConfig
from poam_ros.planners.coordination import CoordinationConfig, FleetMemberConfig
from poam_ros.planners.factory import PLANNERS
from poam_ros.planners.lawnmower import LawnmowerConfig
from poam_ros.planners.max_entropy import MaxEntropyConfig
from poam_ros.planners.mission_control import MissionControlConfig
from poam_ros.setup.terrain import TerrainConfig
from poam_ros.sim import (
    MultibeamStreamConfig,
    SimulatedAuvConfig,
    SonarConfig,
    VehicleConfig,
    WaterTemperatureConfig,
    lower_right_start,
)
from poam_ros.sim.seabed_class import SeabedClassConfig
from poam_ros.workspace import Workspace, WorkspaceConfig


class MissionError(ValueError):
    """A mission that cannot run as configured; the message says what is wrong."""


@dataclass
class MissionConfig(Params):
    """The mission as a whole: evaluation and the seed of every random stream (its budgets
    are the planner's ``mission.*``, :class:`MissionControlConfig`)."""

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
    #: the mission's budgets and what ends it (the planner's ``mission.*``): the planner node
    #: and the ROS-free mission both stop by it
    mission_control: MissionControlConfig = field(default_factory=MissionControlConfig)
    grid: MapGridConfig = field(default_factory=MapGridConfig)
    #: the map frame's geodetic anchor (``geo.*`` in the mapper's section); handed to every
    #: node of :data:`GEO_NODES`
    geo: GeoConfig = field(default_factory=GeoConfig)
    mapper_node: MapperSettings = field(default_factory=MapperSettings)
    planner_node: PlannerSettings = field(default_factory=PlannerSettings)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    #: the sensor_ingest node's own workspace (samples outside are dropped): a remap of a
    #: bag uses it; a simulated mission gives the ingest the planner's ``workspace``
    ingest_workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    #: the simulated bottom-water temperature and its sensor (a second survey channel: the
    #: simulated_auv node publishes it on ``temperature``)
    temperature: WaterTemperatureConfig = field(default_factory=WaterTemperatureConfig)
    #: the simulated seabed class and its classifier (a binary survey channel: the
    #: simulated_auv node publishes it on ``seabed_class``)
    seabed_class: SeabedClassConfig = field(default_factory=SeabedClassConfig)

    #: node name -> {parameter prefix: attribute holding that config}; the prefix "" holds
    #: the node's own, unprefixed parameters
    NODES = {
        "simulated_auv": {"terrain": "terrain", "vehicle": "vehicle", "sonar": "sonar",
                          "temperature": "temperature", "seabed_class": "seabed_class"},
        "sensor_ingest": {"": "ingest", "workspace": "ingest_workspace"},
        "mapper": {"": "mapper_node", "mapping": "mapping", "grid": "grid", "geo": "geo"},
        "planner": {"": "planner_node", "planning": "planning", "workspace": "workspace",
                    "pilot": "pilot", "max_entropy": "max_entropy", "lawnmower": "lawnmower",
                    "mission": "mission_control"},
        "mission": {"mission": "mission"},
    }
    #: nodes that declare ``geo.*`` and are handed the mapper's anchor (one per graph)
    GEO_NODES = ("mapper", "sensor_ingest", "planner")
    #: node name -> {parameter prefix: config class} of the parameters the ROS nodes declare
    #: besides those above; the ROS-free mission does not use them, but a file naming them
    #: is still checked against them.
    ROS_ONLY = {
        # a georeferenced terrain is placed with the mapper's anchor (repeated in a file)
        "simulated_auv": {"": SimulatedAuvConfig, "multibeam": MultibeamStreamConfig,
                          "geo": GeoConfig},
        # the map covers the planner's workspace (a complete file repeats it here)
        "mapper": {"journal": JournalConfig, "workspace": WorkspaceConfig},
        # a robot's file (robot.launch.xml) repeats the mapper's anchor for these nodes; a
        # fleet's vehicle names its place in it and how it coordinates
        "planner": {"odometry": InputCheckConfig, "geo": GeoConfig,
                    "fleet": FleetMemberConfig, "coordination": CoordinationConfig},
        "sensor_ingest": {"geo": GeoConfig},
    }

    def __post_init__(self) -> None:
        """Workspaces given as a GeoJSON file (lat/lon) become map-metre vertices with the
        anchor ``geo``, so that every component and node is handed plain vertices."""
        if self.workspace.geojson or self.ingest_workspace.geojson:
            georeference = GeoReference.from_config(self.geo)
            self.workspace = resolve_workspace(self.workspace, georeference)
            self.ingest_workspace = resolve_workspace(self.ingest_workspace, georeference)

    @classmethod
    def from_file(cls, path) -> "MissionSetup":
        """Load from a ROS parameter file (``config/*.yaml``); unknown keys, a missing file
        and bad YAML are ConfigErrors, which name the file."""
        if not Path(path).is_file():
            raise ConfigError(f"{path}: no such parameter file")
        try:
            return cls._from_file(path)
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not a YAML parameter file: {error}") from None

    @classmethod
    def _from_file(cls, path) -> "MissionSetup":
        values = {}
        for node, attributes in cls.NODES.items():
            loaded = load_configs(path, node, cls.declared(node))
            values.update({attribute: loaded[prefix] for prefix, attribute in attributes.items()})
        return cls(**values)

    def to_file(self, path, base=None) -> Path:
        """This setup as a parameter file at ``path`` that :meth:`from_file` reads back as
        it is: the node sections of the parameter file ``base`` (for what the setup does not
        hold, e.g. the simulator's clock; None: none) with every config of :data:`NODES`
        written over them. An empty list is left out (rcl cannot tell its element type; such
        fields default to empty)."""
        tree = load_parameter_tree(base) if base else {}
        for node, attributes in self.NODES.items():
            section = tree.setdefault(node, {}).setdefault(PARAMETERS_KEY, {})
            for prefix, attribute in attributes.items():
                for name, value in getattr(self, attribute).to_parameters().items():
                    *steps, key = ([prefix] if prefix else []) + name.split(".")
                    level = section
                    for step in steps:
                        level = level.setdefault(step, {})
                    if value == []:
                        level.pop(key, None)
                    else:
                        level[key] = value
        path = Path(path)
        path.write_text(dump_parameters(tree))
        return path

    def node_parameters(self, node: str) -> dict[str, Any]:
        """The parameters ``node`` must run with for the ROS graph to make :class:`Mission`'s
        decisions, as ``{dotted name: value}``; a complete parameter file (the shipped ones)
        already holds every one of them.

        The node's configs, plus: the simulator's, the mapper's model and the planner's
        seeds derived from ``mission.seed`` and the vehicle's start pose (as :class:`Mission`
        derives them), the planner's workspace for the mapper (its map covers the workspace)
        and the ingest (it drops samples outside), the map frame's anchor ``geo`` for the
        nodes of :data:`GEO_NODES`, the ingest's channels for the mapper and the mission's
        evaluation grid for the mapper's ``map/evaluation``. Empty lists are left out: ROS
        cannot tell their element type, and each such field's default is empty.
        """
        if node not in self.NODES:
            raise ConfigError(f"unknown node {node!r}; known: {', '.join(self.NODES)}")
        seeds = mission_seeds(self.mission.seed)
        configs = {prefix: getattr(self, attribute)
                   for prefix, attribute in self.NODES[node].items()}
        if node in ("mapper", "sensor_ingest"):
            configs["workspace"] = self.workspace
        if node in self.GEO_NODES or (node == "simulated_auv"
                                      and self.terrain.placement == "georeferenced"):
            configs["geo"] = self.geo  # the simulator places a georeferenced raster with it
        if node == "mapper":
            configs["mapping"] = self.mapping.replace(seed=seeds["model"])
            # the samples' channels are the ingest's
            configs[""] = self.mapper_node.replace(channels=list(self.ingest.channels),
                                                   evaluation_grid=self.mission.eval_grid)
        if node == "planner":
            configs[""] = self.planner_node.replace(seed=seeds["planner"])
        parameters = prefixed_parameters(configs)
        if node == "simulated_auv":
            parameters["seed"] = seeds["simulator"]
            start = lower_right_start(Workspace.from_config(self.workspace).bounds)
            parameters["start_pose"] = [float(v) for v in start]
        return parameters

    @classmethod
    def declared(cls, node: str) -> dict[str, type[Params]]:
        """``{prefix: config class}`` of every parameter group ``node`` declares."""
        defaults = cls()
        return {**cls.ROS_ONLY.get(node, {}),
                **{prefix: type(getattr(defaults, attribute))
                   for prefix, attribute in cls.NODES[node].items()}}

    def over_map(self, path) -> "MissionSetup":
        """This setup over the terrain file ``path`` (a command's ``--map``), read with the
        setup's other terrain settings (extent, row order, resizing, void filling)."""
        return replace(self, terrain=self.terrain.replace(path=str(path)))

    def planner_config(self) -> Params | None:
        return {"max_entropy": self.max_entropy, "lawnmower": self.lawnmower}.get(
            self.planning.planner)

    def to_dict(self) -> dict:
        return {name: getattr(self, name).to_dict() for name in self.__dataclass_fields__}


#: the package's parameter files: every parameter at its default (the POAM paper's setting),
#: and the embedded default survey at true scale (what runs without --params or --map)
PACKAGE_FILE = "poam_ros.yaml"
DEFAULT_SURVEY_FILE = "topobathy.yaml"


def default_parameter_file(name: str = PACKAGE_FILE) -> Path:
    """The package's parameter file ``name`` (source tree or installed share directory)."""
    here = Path(__file__).resolve().parents[1]  # the poam_ros package
    # Installed, the package sits in <prefix>/lib/pythonX.Y/site-packages/poam_ros and the
    # file in <prefix>/share/poam_ros/config; look in every ancestor rather than count levels.
    candidates = [here.parent / "config" / name]
    candidates += [ancestor / "share" / "poam_ros" / "config" / name
                   for ancestor in here.parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ConfigError(f"cannot find config/{name} next to the package or in its installed "
                      f"share directory")


def prefixed_parameters(configs: dict[str, Params]) -> dict[str, Any]:
    """``{prefix: config}`` as ROS parameter overrides ``{prefix.name: value}`` (prefix "":
    the node's own). An empty list is left out (rcl cannot tell its element type); one that
    is not its field's default cannot be passed: ConfigError."""
    parameters = {}
    for prefix, config in configs.items():
        values = config.to_parameters()
        for spec in config.specs():
            value = values[spec.name]
            name = f"{prefix}.{spec.name}" if prefix else spec.name
            if value == [] and spec.default != []:
                raise ConfigError(f"{name}: an empty list cannot be passed as a ROS "
                                  f"parameter override")
            if value != []:
                parameters[name] = value
    return parameters
