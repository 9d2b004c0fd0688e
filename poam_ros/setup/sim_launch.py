"""The simulated graph as ``launch/sim.launch.xml`` describes it, for a :class:`MissionSetup`.

``poam-ros sim`` starts exactly the nodes that ``ros2 launch poam_ros sim.launch.xml
params_file:=<file> record:=<bool> view:=<bool> vehicle:=<vehicle>`` starts
(:func:`sim_nodes`), with the file
being the *effective parameter file* of :func:`write_effective_file`: each graph node's
parameters as the user's file gives them, with what the command line changes written over
them (``--seed``, ``--method``, ``--map``, ``--mode``, ... through
:meth:`MissionSetup.node_parameters`) and the run's own paths (the mapper's crash journal,
the bag). So one file says what every node runs with, and launching sim.launch.xml with it
starts the same graph. A shipped parameter file is complete: its effective file changes no
value a node gets from it (:func:`differences`), so ``ros2 launch poam_ros sim.launch.xml``
with it runs the mission ``poam-ros sim`` runs.

``vehicle``: ``simulated`` (the simulated AUV follows the plan) or ``mavlink`` (the simulated
AUV is a simulated autopilot, and the ``vehicle_bridge`` flies the plan through it over
MAVLink on the loopback, :func:`mavlink_parameters`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from poam_ros.geo import GeoReference
from poam_ros.launch_xml import LaunchNode, expand, launch_file
from poam_ros.params import ConfigError
from poam_ros.params.files import (
    PARAMETERS_KEY,
    config_from_parameters,
    dump_parameters,
    load_parameter_tree,
    nest_parameters,
    parameter_table,
    parameters_for,
)
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.sim.mavlink_vehicle import ARRIVAL_MARGIN

SIM_LAUNCH = "sim.launch.xml"
#: the sections of an effective file: the graph's nodes, and the mission's own
SECTIONS = ("recorder", "viewer", "simulated_auv", "vehicle_bridge", "sensor_ingest", "mapper",
            "planner", "mission")
VEHICLES = ("simulated", "mavlink")
BRIDGE = "vehicle_bridge"  # the bridge's node name with vehicle:=mavlink
#: s of sim time: the bridge's link timeout on the loopback, its highest; it stamps a
#: heartbeat with the /clock it has, so at time_scale 40 its default 5 s is a 125 ms stall
SIM_LINK_TIMEOUT = 60.0
#: values that name a run's own files, not the mission: never counted as a difference
RUN_PATHS = {"mapper": ("journal.path",), "recorder": ("output",)}


def sim_nodes(params_file: str | Path, record: bool = False, view: bool = False,
              vehicle: str = "simulated") -> list[LaunchNode]:
    """The nodes sim.launch.xml starts with ``params_file`` (and a recorder, a viewer; with
    ``vehicle`` mavlink the bridge)."""
    return expand(launch_file(SIM_LAUNCH), {"params_file": str(params_file),
                                            "record": "true" if record else "false",
                                            "view": "true" if view else "false",
                                            "vehicle": vehicle})


def mavlink_parameters(setup: MissionSetup, port: int) -> dict[str, dict[str, Any]]:
    """Per node, what ``vehicle`` mavlink writes into the effective file: the simulated AUV's
    MAVLink endpoint sending to ``127.0.0.1:port``, where the bridge listens, the operator's
    part (armed in GUIDED, the bridge started) and the anchor on both; the bridge's
    workspace, vertical setpoints (the vehicle's mode; ``surface`` for ``plane``) and
    :data:`SIM_LINK_TIMEOUT`; and the
    vehicle's goal radius plus :data:`~poam_ros.sim.mavlink_vehicle.ARRIVAL_MARGIN` for the
    bridge, the ingest and the planner, which judge arrival from positions rounded to 1e-7°.
    Raises ConfigError when the setup has no geodetic anchor."""
    if GeoReference.from_config(setup.geo) is None:
        raise ConfigError("--vehicle mavlink needs the map's geodetic anchor (MAVLink "
                          "positions are latitude and longitude): set geo.anchor to latlon "
                          "or projected in the parameter file")
    geo = {f"geo.{name}": value for name, value in setup.geo.to_parameters().items()}
    radius = setup.vehicle.goal_radius + ARRIVAL_MARGIN
    mode = setup.vehicle.vertical_mode
    return {
        "simulated_auv": {"mavlink.connection": f"udpout:127.0.0.1:{port}",
                          "mavlink.start_armed_guided": True,
                          "mavlink.start_bridge": BRIDGE, **geo},
        BRIDGE: {"connection": f"udpin:127.0.0.1:{port}", "goal_radius": radius,
                 "link_timeout": SIM_LINK_TIMEOUT,
                 "vertical": mode if mode in ("depth", "altitude") else "surface", **geo,
                 **{f"workspace.{name}": value for name, value
                    in setup.workspace.to_parameters().items() if value != []}},
        "sensor_ingest": {"goal_radius": radius},
        "planner": {"goal_radius": radius},
    }


def write_effective_file(setup: MissionSetup, params_file: str | Path, path: str | Path,
                         overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """The effective parameter file at ``path``: per section of :data:`SECTIONS`, keyed
    ``/**/<node>``, the parameters ``params_file`` gives that node, ``setup``'s values
    (:meth:`MissionSetup.node_parameters`) written over them, then ``overrides``
    (node -> {dotted name: value})."""
    table = parameter_table([(params_file, load_parameter_tree(params_file))])
    tree: dict[str, Any] = {}
    for node in SECTIONS:
        values = parameters_for(table, node)
        if node in MissionSetup.NODES:
            values.update(setup.node_parameters(node))
        values.update((overrides or {}).get(node, {}))
        if values:
            tree[f"/**/{node}"] = {PARAMETERS_KEY: nest_parameters(values)}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_parameters(tree))
    return path


def differences(params_file: str | Path, effective_file: str | Path,
                record: bool = False, vehicle: str = "simulated") -> list[str]:
    """``node: name`` of every value a node of sim.launch.xml gets otherwise from
    ``effective_file`` than from ``params_file`` (a name one of them leaves out counts at
    its declared default), :data:`RUN_PATHS` aside."""
    changed = []
    for given, effective in zip(sim_nodes(params_file, record, vehicle=vehicle),
                                sim_nodes(effective_file, record, vehicle=vehicle)):
        node = given.name
        values, other = given.parameter_values(), effective.parameter_values()
        defaults = _defaults(node)
        for name in sorted(set(values) | set(other)):
            if name in RUN_PATHS.get(node, ()):
                continue
            if values.get(name, defaults.get(name)) != other.get(name, defaults.get(name)):
                changed.append(f"{node}: {name}")
    return changed


def _defaults(node: str) -> dict[str, Any]:
    """``{dotted name: default}`` of the parameters :class:`MissionSetup` knows ``node``
    declares ({} for a node it does not configure)."""
    if node not in MissionSetup.NODES:
        return {}
    defaults = {}
    for prefix, config_cls in MissionSetup.declared(node).items():
        lead = f"{prefix}." if prefix else ""
        values = config_from_parameters({}, config_cls, prefix).to_parameters()
        defaults.update({lead + name: value for name, value in values.items()})
    return defaults
