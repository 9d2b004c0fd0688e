"""The simulated fleet's graph as ``launch/fleet.launch.xml`` describes it, for N vehicles.

``ros2 launch poam_ros fleet.launch.xml sim:=true`` starts the simulated fleet of two: the
``fleet_sim`` node (every vehicle on one terrain, one ``/clock``), the central mapper
``/fleet/mapper`` and, per vehicle, the stack of ``robot.launch.xml`` in ``/auv<k>``
(sensor ingest and planner; the ingest publishes on ``/fleet/samples``, the planner reads
``/fleet/map`` and asks ``/fleet/uncertainty/query``). Launch XML cannot loop, so
:func:`fleet_nodes` builds the same graph for N vehicles: the file's fleet nodes, and per
vehicle the include the file makes for ``/auv0`` and ``/auv1``.

:func:`write_fleet_file` is the fleet's effective parameter file (as
:func:`~poam_ros.setup.sim_launch.write_effective_file` is the single vehicle's): the
setup's values for every node, and what makes a fleet of them:

* ``/**/fleet_sim``: the simulated AUV's parameters (one terrain, vehicle and sonar for all),
  the number of vehicles and their start poses, spread over the workspace and drawn from the
  simulator's seed (:func:`~poam_ros.sim.fleet.fleet_start_poses`);
* ``/**/planner``: ``mapper_name: /fleet/mapper`` (central), and the fleet's sample budget
  (``mission.max_samples`` summed over the vehicles): with a central map every planner
  counts the samples of the one shared map, so each gets the fleet's budget and all of them
  end at the map that holds it; with distributed maps each vehicle's map also holds what its
  teammates' links carried, so each planner counts its own soundings
  (``mission.samples_counted: own``) and spends its share, ``mission.max_samples``;
* ``/<ns>/planner``: each vehicle's own planner seed (spawned from the mission's planner
  seed: no two vehicles draw the same candidates), its place in the fleet
  (``fleet.vehicle_index``, ``fleet.vehicles``), its teammates' plan announcements
  (``fleet.teammates``) and ``coordination.enabled`` (:class:`FleetOptions`).

* ``/**/viewer``: the fleet's ``vehicles`` (their namespaces), for ``view:=true``; the
  ``/**/recorder`` section is the file's (``poam-ros sim --record`` lists
  :func:`recorded_topics` there).

Without a central map (``FleetOptions.central`` false) each vehicle has its own mapper and
its end of the links, ``fleet_link``, and the ``fleet_channel`` node simulates the medium:
:func:`link_sections` writes their sections, and the planners hear their teammates' plans as
their links heard them.

With coordination each vehicle flies its share of the pilot survey
(:func:`~poam_ros.planners.coordination.pilot_share`), so it starts where its share starts,
facing along it, as the single vehicle starts at the pilot's first point; without, the
vehicles start spread over the area (:func:`~poam_ros.sim.fleet.fleet_start_poses`) and each
flies the whole pilot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from poam_ros.fleet.relay import teammate_plan_topic
from poam_ros.launch_xml import LaunchNode, expand, launch_file
from poam_ros.params import ConfigError
from poam_ros.params.files import (
    PARAMETERS_KEY,
    dump_parameters,
    load_parameter_tree,
    nest_parameters,
    parameter_table,
    parameters_for,
)
from poam_ros.planners.coordination import pilot_share
from poam_ros.planners.factory import make_planner
from poam_ros.planners.mission_control import OWN
from poam_ros.planners.pilot import pilot_survey
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.setup.sim_launch import write_effective_file
from poam_ros.sim.fleet import FleetConfig, fleet_start_poses, vehicle_seeds
from poam_ros.sim.terrain import Terrain
from poam_ros.workspace import Workspace

FLEET_LAUNCH = "fleet.launch.xml"
VEHICLE_LAUNCH = "fleet_vehicle.launch.xml"  # one vehicle's stack, fleet.launch.xml's include
LAUNCH_FILE_ROBOTS = 4  # the vehicles fleet.launch.xml starts at most (robots:=1 ... 4)
FLEET_NAMESPACE = "/fleet"  # the central mapper's, and its topics'
CENTRAL_MAPPER = f"{FLEET_NAMESPACE}/mapper"
FLEET_SIM = "fleet_sim"
RECORDER, VIEWER = "recorder", "viewer"  # with record:=true, view:=true: in the root namespace
#: the sections of a fleet's effective file keyed /**/<node>
SECTIONS = (FLEET_SIM, "sensor_ingest", "mapper", "planner", "mission", RECORDER, VIEWER)
PLAN_TOPIC = "fleet/plan"  # a planner's announcement, in its vehicle's namespace
LINK_TOPICS = ("fleet/out", "fleet/in")  # a vehicle's packets to and from the medium


@dataclass(frozen=True)
class FleetOptions:
    """How the simulated fleet maps and plans, beyond the mission's setup."""

    central: bool = True  # one mapper for all (else one per vehicle, fed over the links)
    coordination: bool = True  # the planners condition on each other and split the pilot
    #: the links' link.* (distributed): bandwidth B/s (0 unlimited), latency s,
    #: loss_probability, slot_length s (TDMA, 0: none; slots: one per vehicle)
    link: Mapping[str, float] = field(default_factory=dict)


def vehicle_namespaces(robots: int) -> list[str]:
    """``/auv0``, ... ``/auv<robots - 1>``: the fleet's vehicles, as fleet_sim names them."""
    return FleetConfig(vehicles=robots).namespaces()


def fleet_nodes(params_file: str | Path, robots: int, central: bool = True,
                record: bool = False, view: bool = False) -> list[LaunchNode]:
    """The nodes of the simulated fleet of ``robots`` vehicles, each configured by
    ``params_file``: fleet.launch.xml's with ``sim:=true`` (``central_map:=`` ``central``,
    ``record:=`` ``record``, ``view:=`` ``view``, ``robots:=`` ``robots``) for one to four,
    each vehicle as fleet_vehicle.launch.xml starts it: without a central map with its own
    mapper and its end of the links, the ``fleet_channel`` node simulating the medium."""
    file = str(params_file)
    fleet = [node for node in expand(launch_file(FLEET_LAUNCH), {
        "params_file": file, "sim": "true", "central_map": _flag(central),
        "record": _flag(record), "view": _flag(view)})
             if node.namespace in ("", FLEET_NAMESPACE)]
    for namespace in vehicle_namespaces(robots):
        fleet += expand(launch_file(VEHICLE_LAUNCH), {
            "namespace": namespace.strip("/"), "params_file": file,
            "central_map": _flag(central), "use_sim_time": "true"})
    return fleet


def _flag(value: bool) -> str:
    return "true" if value else "false"


def recorded_topics(topics: list[str], robots: int, central: bool = True) -> list[str]:
    """What the fleet's recorder (in the root namespace) records of ``topics`` (the
    recorder's, relative names as a single vehicle's stack has them): a relative name in
    every vehicle's namespace and, with a central map, in ``/fleet`` (``/fleet/map``,
    ``/fleet/samples``); an absolute one as it is; and each vehicle's plan announcement and,
    without a central map, its link's packets and the teammates' plans its link heard."""
    namespaces = vehicle_namespaces(robots)
    spaces = [*namespaces, *([FLEET_NAMESPACE] if central else [])]
    names = [topic for topic in topics if topic.startswith("/")]
    names += [f"{space}/{topic}" for topic in topics if not topic.startswith("/")
              for space in spaces]
    for k, namespace in enumerate(namespaces):
        names.append(f"{namespace}/{PLAN_TOPIC}")
        if not central:
            names += [f"{namespace}/{topic}" for topic in LINK_TOPICS]
            names += teammate_topics(robots, k, central=False)
    return list(dict.fromkeys(names))


def teammate_topics(robots: int, index: int, central: bool = True) -> list[str]:
    """The plan announcements vehicle ``index`` hears: every other vehicle's, on its own
    topic with a central map (a radio), else as its own fleet_link heard them over the
    links (vehicle_id j is vehicle j)."""
    namespaces = vehicle_namespaces(robots)
    return [f"{other}/{PLAN_TOPIC}" if central else
            f"{namespaces[index]}/{teammate_plan_topic(k)}"
            for k, other in enumerate(namespaces) if k != index]


def pilot_starts(setup: MissionSetup, planner_seeds: list[int], workspace: Workspace,
                 inside) -> list[tuple[float, float, float]]:
    """Each vehicle's start with a split pilot: its share's first point, facing its second
    (drawn as its planner node draws the pilot, from its own seed). ``inside`` ((N, 2) ->
    (N,) bool) says where a vehicle may start; raises ConfigError elsewhere."""
    poses = []
    for k, seed in enumerate(planner_seeds):
        rng = np.random.default_rng(seed)
        make_planner(setup.planning.planner, workspace, rng, setup.planner_config())
        share = pilot_share(pilot_survey(workspace, rng, setup.pilot), k, len(planner_seeds))
        ahead = next((p for p in share[1:] if np.linalg.norm(p - share[0]) > 0), share[0])
        if not inside(share[:1])[0]:
            raise ConfigError(f"vehicle {k}'s pilot share starts at {share[0].tolist()} m, "
                              f"off the terrain or the workspace")
        poses.append((float(share[0, 0]), float(share[0, 1]),
                      math.atan2(ahead[1] - share[0, 1], ahead[0] - share[0, 0])))
    return poses


def link_sections(table, values: Mapping[str, dict], robots: int,
                  fleet: FleetOptions) -> dict[str, Any]:
    """The distributed fleet's sections of its effective file: ``/**/fleet_link`` and
    ``/**/fleet_channel`` (the parameter file's sections of ``table``, the map's frame, the
    ingest's channels and ``fleet.link`` over them, one TDMA slot per vehicle), and per
    vehicle k its link's ``vehicle_id`` and ``link.slot`` k and, when the mappers keep a
    crash journal at a given path, its own mapper's journal beside it."""
    link = {f"link.{name}": value for name, value in {"slots": robots, **fleet.link}.items()}
    channels = values["sensor_ingest"].get("channels") or []
    sections = {
        "fleet_link": {**parameters_for(table, "fleet_link"), **link,
                       "map_frame": values["mapper"].get("map_frame", "map"),
                       **({"channels": channels} if channels else {})},
        "fleet_channel": {**parameters_for(table, "fleet_channel"), **link,
                          "vehicles": vehicle_namespaces(robots),
                          "seed": values[FLEET_SIM]["seed"]}}
    tree = {f"/**/{node}": {PARAMETERS_KEY: nest_parameters(section)}
            for node, section in sections.items()}
    journal = values["mapper"].get("journal.path")
    for k, namespace in enumerate(vehicle_namespaces(robots)):
        tree[f"{namespace}/fleet_link"] = {PARAMETERS_KEY: nest_parameters(
            {"vehicle_id": k, "link.slot": k})}
        if journal:
            own = Path(journal).with_name(f"{namespace.strip('/')}_{Path(journal).name}")
            tree[f"{namespace}/mapper"] = {PARAMETERS_KEY: nest_parameters(
                {"journal.path": str(own)})}
    return tree


def write_fleet_file(setup: MissionSetup, params_file: str | Path, path: str | Path,
                     robots: int, terrain: Terrain,
                     overrides: Mapping[str, Mapping[str, Any]] | None = None,
                     fleet: FleetOptions = FleetOptions()) -> Path:
    """The fleet's effective parameter file at ``path`` (see the module docstring):
    ``params_file``'s sections for the nodes, ``setup``'s values over them, the fleet's,
    then ``overrides`` (node -> {dotted name: value}; ``fleet_sim`` for the simulator)."""
    overrides = {node: dict(values) for node, values in (overrides or {}).items()}
    single = write_effective_file(setup, params_file, path, overrides)  # the setup's values
    # the user's file for its fleet_sim section, the setup's over it for the rest
    table = parameter_table([(params_file, load_parameter_tree(params_file)),
                             (single, load_parameter_tree(single))])
    values = {node: parameters_for(table, node) for node in SECTIONS}
    values[FLEET_SIM] = {**parameters_for(table, "simulated_auv"), **values[FLEET_SIM],
                         **setup.node_parameters("simulated_auv")}
    del values[FLEET_SIM]["start_pose"]  # the single vehicle's: each has its own here
    workspace = Workspace.from_config(setup.workspace)
    planner = values["planner"]
    seeds = vehicle_seeds(planner["seed"], robots)

    def inside(xy: np.ndarray) -> np.ndarray:
        return terrain.contains(xy) & workspace.contains(xy)

    poses = (pilot_starts(setup, seeds, workspace, inside) if fleet.coordination else
             fleet_start_poses(workspace.bounds, robots, values[FLEET_SIM]["seed"], inside))
    values[FLEET_SIM].update({"fleet.vehicles": robots,
                              "fleet.start_poses": [float(v) for v in np.ravel(poses)]})
    values["sensor_ingest"]["float64_samples"] = True  # as sim.launch.xml gives it
    if fleet.central:  # every planner counts the one map's samples: the fleet's budget
        planner["mission.max_samples"] = robots * setup.mission_control.max_samples
        planner["mapper_name"] = CENTRAL_MAPPER
    else:  # each counts its own soundings in its map: its share of the fleet's budget
        planner["mission.samples_counted"] = OWN
    values[VIEWER]["vehicles"] = vehicle_namespaces(robots)
    for node in SECTIONS:
        values[node].update(overrides.get(node, {}))
    tree: dict[str, Any] = {f"/**/{node}": {PARAMETERS_KEY: nest_parameters(values[node])}
                            for node in SECTIONS if values[node]}
    if not fleet.central:
        tree.update(link_sections(table, values, robots, fleet))
    for k, (namespace, seed) in enumerate(zip(vehicle_namespaces(robots), seeds)):
        tree[f"{namespace}/planner"] = {PARAMETERS_KEY: nest_parameters({
            "seed": seed, "fleet.vehicle_index": k, "fleet.vehicles": robots,
            "fleet.teammates": teammate_topics(robots, k, fleet.central),
            "coordination.enabled": fleet.coordination})}
    path = Path(path)
    path.write_text(dump_parameters(tree))
    return path
