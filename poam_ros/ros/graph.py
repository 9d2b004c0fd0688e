"""The simulated mission's graph as processes, supervised: what ``poam-ros sim`` runs.

The nodes are those ``launch/sim.launch.xml`` starts, read by the launch interpreter
(:mod:`poam_ros.launch_xml`) with ``params_file:=`` the run's effective parameter file
(:func:`~poam_ros.setup.sim_launch.write_effective_file`: the user's file with the command
line's values written over it), ``record:=`` whether a bag is recorded and ``vehicle:=``
which vehicle flies the plan (``mavlink``: the vehicle_bridge and the simulated AUV's MAVLink
endpoint, both ends of the link in the effective file). Each runs as its
own process, ``python -m <module> --ros-args -r __node:=<name> --params-file <file>
-p <name>:=<value> ... -r <from>:=<to>``, exactly as launch_ros would start it, so a
lockstep graph replays :class:`~poam_ros.mission.Mission` and ``ros2 launch poam_ros
sim.launch.xml params_file:=<out>/logs/parameters.yaml`` starts the same graph. A
:class:`MissionMonitor` in this process scores every map; the simulated AUV, the clock
source, starts once the monitor hears the other nodes, so that it misses no batch and no map.
With ``GraphOptions.robots`` > 1 the graph is a fleet's (:func:`~poam_ros.setup.fleet_launch.
fleet_nodes`: fleet.launch.xml's for N vehicles, ``fleet_sim`` the clock source) and a
:class:`~poam_ros.ros.fleet_monitor.FleetMonitor` scores the central map; its recorder records
every vehicle's topics and the fleet's (:func:`~poam_ros.setup.fleet_launch.recorded_topics`)
and its clock, too, waits for the recorder to subscribe to every vehicle's sensors.

The run ends when the planner's mission is done (or aborted) and the map holding its last
count is scored (:class:`MissionMonitor`), on Ctrl-C or SIGTERM, or with a
:class:`GraphError` when a node exits on its own, the nodes do not come up, or no map comes
for ``stall_timeout`` seconds. Whatever ends it, the children stop in stages (the clock
source, the other nodes, the recorder and the viewer), each given SIGINT, then time to exit,
then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import rclpy
from rclpy.executors import SingleThreadedExecutor

import poam_ros
from poam_ros.bags import RecorderConfig
from poam_ros.launch_xml import LaunchNode
from poam_ros.mapping.binary import declared_binary
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.params.files import load_config
from poam_ros.planners.mission_control import DONE
from poam_ros.processes import wait_or_kill
from poam_ros.ros.fleet_monitor import FleetMonitor
from poam_ros.ros.mission_monitor import MissionMonitor
from poam_ros.ros.run import StopSignals, init_rclpy
from poam_ros.setup.fleet_launch import (
    FLEET_SIM,
    FleetOptions,
    fleet_nodes,
    recorded_topics,
    vehicle_namespaces,
    write_fleet_file,
)
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.setup.sim_launch import mavlink_parameters, sim_nodes, write_effective_file
from poam_ros.setup.truth import survey_fields
from poam_ros.sim import Terrain
from poam_ros.sim.multibeam import MultibeamStreamConfig

CLOCK_SOURCE = "simulated_auv"  # the executable that publishes /clock: started last
CLOCK_SOURCES = (CLOCK_SOURCE, FLEET_SIM)  # the single vehicle's, the fleet's
RECORDER = "recorder"  # with GraphOptions.record: started first, stopped last
OBSERVERS = (RECORDER, "viewer")  # stopped last: they take what the others publish
RECORDER_INTAKE = f"{RECORDER}_intake"  # the recorder's node that holds its subscriptions
SENSOR_TOPICS = ("/odom", "/sonar/range")  # the simulated AUV's, "/sonar/swath" with multibeam
EFFECTIVE_FILE = "parameters.yaml"  # in the log folder: what every node runs with
SPIN_PERIOD = 0.1  # s: children and deadlines are checked this often
LOG_TAIL = 20  # lines of a failed child's log that the error quotes
SETTLE_TIME = 10.0  # s at most the monitor waits at the end for counts with the last batch


class GraphError(RuntimeError):
    """The graph could not run the mission; the message says which node and why."""


@dataclass
class GraphOptions:
    """How to run the graph, beyond the mission's setup."""

    mode: str | None = None  # lockstep | realtime, for the vehicle and the planner
    time_scale: float | None = None  # sim seconds per wall second; 0: as fast as possible
    torch_threads: int | None = None  # the mapper's
    start_timeout: float = 120.0  # wall s for the nodes to come up
    stall_timeout: float = 600.0  # wall s without a new map before giving up
    stop_timeout: float = 15.0  # wall s the children get to exit after SIGINT
    record: Path | None = None  # a bag to create: the recorder node records the mission
    view: dict[str, Any] | None = None  # the viewer's parameters: serve the live view
    robots: int = 1  # vehicles: more than one flies fleet.launch.xml's graph
    fleet: FleetOptions = field(default_factory=FleetOptions)  # with robots > 1
    vehicle: str = "simulated"  # or mavlink: the bridge flies the plan (sim_launch.VEHICLES)
    mavlink_port: int = 14550  # the loopback UDP port the bridge listens on


@dataclass
class GraphRun:
    """What the monitor saw; ``outcome`` is ``budget`` (the mission is done), ``aborted``
    or ``interrupted``."""

    records: list[EpochRecord]
    monitor: MissionMonitor
    terrain: Terrain
    wall_time: float  # s from starting the nodes to the last record
    outcome: str
    exit_codes: dict[str, int | str] = field(default_factory=dict)  # "killed" if it had to be


def graph_overrides(options: GraphOptions, log_dir: Path) -> dict[str, dict[str, Any]]:
    """Per node, what the command line writes into the effective parameter file besides the
    setup's values: ``mode``, ``time_scale`` and ``torch_threads`` when given, the mission's
    own crash journal (a killed run never resumes into the next one), the bag and the
    viewer's parameters."""
    clock = FLEET_SIM if options.robots > 1 else CLOCK_SOURCE
    overrides: dict[str, dict[str, Any]] = {
        clock: {}, "planner": {},
        "mapper": {"journal.path": str(log_dir / "mapper.journal")}}
    if options.mode is not None:
        overrides[clock]["mode"] = overrides["planner"]["mode"] = options.mode
    if options.time_scale is not None:
        overrides[clock]["time_scale"] = float(options.time_scale)
    if options.torch_threads is not None:
        overrides["mapper"]["torch_threads"] = options.torch_threads
    if options.record is not None:
        overrides[RECORDER] = {"output": str(options.record)}
    if options.view is not None:
        overrides["viewer"] = dict(options.view)
    return overrides


def child_environment() -> dict[str, str]:
    """This process's environment for the children: discovery on this host unless the
    user chose otherwise, and this process's poam_ros first on the path (an editable
    install, an install space or a source tree alike)."""
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    root = str(Path(poam_ros.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Child:
    """One node's process, ``python -m module *arguments``, its output in
    ``<log_dir>/<name>.log`` after a first line with the command; ``executable`` says which of
    the package's it runs."""

    def __init__(self, name: str, module: str, arguments: list[str], log_dir: Path,
                 env: dict[str, str], executable: str | None = None) -> None:
        self.name, self.executable = name, executable or name
        self.log_path = log_dir / f"{name}.log"
        self.command = [sys.executable, "-m", module, *arguments]
        with open(self.log_path, "wb") as log:
            log.write(f"{shlex.join(self.command)}\n".encode())
            log.flush()
            # Its own session: a Ctrl-C at the terminal reaches this process alone, which
            # then stops the children in order.
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            start_new_session=True, preexec_fn=_die_with_parent)

    @classmethod
    def launch(cls, node: LaunchNode, log_dir: Path, env: dict[str, str]) -> "Child":
        """``node`` started as launch_ros starts it."""
        arguments = [*node.arguments, "--ros-args", *node.ros_arguments(log_dir / "launch")]
        # a fleet's vehicles run nodes of one name: each its own log (auv1_planner.log)
        name = node.fqn.strip("/").replace("/", "_")
        return cls(name, node.module, arguments, log_dir, env, node.executable)

    def tail(self) -> str:
        with open(self.log_path, errors="replace") as log:
            return "".join(deque(log, maxlen=LOG_TAIL))


def start_order(nodes: list[LaunchNode]) -> list[LaunchNode]:
    """The launch file's nodes in its order, the clock source moved last."""
    return sorted(nodes, key=lambda node: node.executable in CLOCK_SOURCES)


def write_graph_file(setup: MissionSetup, params_file: Path, options: GraphOptions,
                     log_dir: Path, terrain: Terrain | None = None) -> Path:
    """The run's effective parameter file, ``<log_dir>/parameters.yaml``: ``params_file``
    with ``setup``'s values and :func:`graph_overrides` written over it (a fleet's, with
    ``options.robots`` > 1: the vehicles start over ``terrain``; with vehicle mavlink, then
    :func:`~poam_ros.setup.sim_launch.mavlink_parameters`)."""
    overrides = graph_overrides(options, log_dir)
    if options.robots > 1:
        if options.record is not None:  # the file's topics, in every vehicle's namespace
            overrides[RECORDER]["topics"] = recorded_topics(
                load_config(params_file, RECORDER, RecorderConfig).topics, options.robots,
                options.fleet.central)
        return write_fleet_file(setup, params_file, log_dir / EFFECTIVE_FILE, options.robots,
                                terrain, overrides, options.fleet)
    if options.vehicle == "mavlink":
        for node, values in mavlink_parameters(setup, options.mavlink_port).items():
            overrides.setdefault(node, {}).update(values)
    return write_effective_file(setup, params_file, log_dir / EFFECTIVE_FILE, overrides)


def run_graph(setup: MissionSetup, terrain: Terrain, effective: Path, options: GraphOptions,
              log_dir: Path, on_epoch: Callable[[EpochRecord], None] | None = None,
              on_start: Callable[[Child], None] | None = None,
              on_state: Callable[[str, str, str], None] | None = None) -> GraphRun:
    """Run sim.launch.xml's graph (fleet.launch.xml's, with ``options.robots`` > 1) with the
    parameter file ``effective``
    (:func:`write_graph_file`) until the planner's mission ends (or Ctrl-C); see the module
    docstring. ``terrain``: the setup's, which the monitor scores against
    (:func:`~poam_ros.setup.truth.mission_terrain`; the caller's checks have loaded it).
    ``on_start`` sees each node's process as it starts; ``on_state(namespace, state,
    reason)`` each vehicle's change of mission state in a fleet."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # the monitor's too
    fleet = options.robots > 1
    starts = start_order(fleet_nodes(effective, options.robots, options.fleet.central,
                                     record=options.record is not None,
                                     view=options.view is not None)
                         if fleet else
                         sim_nodes(effective, record=options.record is not None,
                                   view=options.view is not None, vehicle=options.vehicle))
    recording = _recording(effective) if options.record is not None else None
    if recording is not None:
        unrecorded = [topic for topic in _sensor_topics(effective, options.robots)
                      if not recording(topic)]
        if unrecorded:  # sim.launch.xml's record:=true holds the clock for the recorder
            raise GraphError(f"the recorder does not record {', '.join(unrecorded)}: with "
                             f"--record the clock waits until it subscribes to every sensor; "
                             f"add them to its topics (or all_topics: true)")
    env = child_environment()
    context = rclpy.Context()
    with StopSignals() as signals:  # Ctrl-C, SIGTERM: the children stop in order
        init_rclpy(context=context)
        stop = signals.requested
        executor = SingleThreadedExecutor(context=context)
        children: list[Child] = []
        monitor = None
        start = time.monotonic()
        outcome = "interrupted"
        try:
            fields = survey_fields(setup, terrain)[0]
            binary = declared_binary(setup.mapping.channel_likelihoods)
            monitor = (FleetMonitor(terrain, vehicle_namespaces(options.robots), on_epoch,
                                    fields, on_state, options.fleet.central, binary=binary,
                                    context=context) if fleet
                       else MissionMonitor(terrain, on_epoch, fields=fields, binary=binary,
                                           context=context))
            for node in _monitor_nodes(monitor):
                executor.add_node(node)
            for node in starts:
                if node.executable in CLOCK_SOURCES:
                    deadline = time.monotonic() + options.start_timeout
                    _spin_until(lambda: not _not_ready(monitor, recording), executor, children,
                                stop, lambda: time.monotonic() > deadline and (
                                    f"no sign of {', '.join(_not_ready(monitor, recording))} "
                                    f"within {options.start_timeout:g} s"))
                children.append(Child.launch(node, log_dir, env))
                if on_start is not None:
                    on_start(children[-1])
            _spin_until(lambda: monitor.finished, executor, children, stop,
                        lambda: time.monotonic() - monitor.last_progress > options.stall_timeout
                        and (f"no new map for {options.stall_timeout:g} s; the nodes say: "
                             + "; ".join(f"{name}: {text}"
                                         for name, text in monitor.messages.items())))
            outcome = "budget" if monitor.mission_state == DONE else monitor.mission_state
            # A last look at the diagnostics (published once a second), so that the
            # summary's counts include the last batch.
            settle = time.monotonic() + SETTLE_TIME
            _spin_until(lambda: monitor.counts_current() or time.monotonic() > settle,
                        executor, children, stop, lambda: False)
        except (_Interrupted, KeyboardInterrupt):  # a second Ctrl-C: at once
            pass
        finally:
            end = monitor.last_progress if monitor is not None and monitor.records else \
                time.monotonic()
            codes = stop_in_stages(children, options.stop_timeout)
            executor.shutdown()
            if monitor is not None:
                for node in _monitor_nodes(monitor):
                    node.destroy_node()
            rclpy.try_shutdown(context=context)
        return GraphRun(monitor.records, monitor, terrain, end - start, outcome, codes)


def _monitor_nodes(monitor: MissionMonitor) -> list[MissionMonitor]:
    """The monitor's nodes: itself, and a distributed fleet's monitor of each further
    vehicle's map."""
    return [monitor, *getattr(monitor, "vehicle_monitors", {}).values()]


def _sensor_topics(effective: Path, robots: int) -> list[str]:
    """The simulated sensors' topics (a fleet's: in every vehicle's namespace), the swaths
    with the multibeam enabled."""
    clock = FLEET_SIM if robots > 1 else CLOCK_SOURCE
    sensors = SENSOR_TOPICS + (("/sonar/swath",) if load_config(
        effective, clock, MultibeamStreamConfig, "multibeam").enabled else ())
    if robots == 1:
        return list(sensors)
    return [f"{namespace}{topic}" for namespace in vehicle_namespaces(robots)
            for topic in sensors]


def _recording(params_file: Path) -> Callable[[str], bool]:
    """Whether the graph's recorder, as ``params_file`` configures it, takes a topic (by
    its absolute name)."""
    config = load_config(params_file, RECORDER, RecorderConfig)
    if config.all_topics:
        return lambda name: True
    topics = {topic if topic.startswith("/") else f"/{topic}" for topic in config.topics}
    return topics.__contains__


def _not_ready(monitor: MissionMonitor, recording: Callable[[str], bool] | None) -> list[str]:
    """What the clock source waits for: nodes the monitor has not heard and, with a recorder
    (``recording``: whether it takes a topic), ``recorder: <topic>`` for each topic it takes
    that has a publisher but no subscription of the recorder yet."""
    missing = monitor.missing_sources()
    if recording is None:
        return missing
    return missing + [f"recorder: {name}" for name, _ in monitor.get_topic_names_and_types()
                      if recording(name) and monitor.get_publishers_info_by_topic(name)
                      and not any(info.node_name == RECORDER_INTAKE
                                  for info in monitor.get_subscriptions_info_by_topic(name))]


class _Interrupted(Exception):
    """Ctrl-C or SIGTERM came: the run ends, as ``interrupted``."""


def _spin_until(done: Callable[[], bool], executor: SingleThreadedExecutor,
                children: list[Child], stop: threading.Event,
                give_up: Callable[[], str | bool]) -> None:
    """Spin the monitor until ``done()``; ``stop`` ends it with :class:`_Interrupted`, a
    child's exit or a reason from ``give_up()`` with a :class:`GraphError`."""
    while not done():
        if stop.is_set():
            raise _Interrupted
        executor.spin_once(timeout_sec=SPIN_PERIOD)
        for child in children:
            code = child.process.poll()
            if code is not None:
                raise GraphError(f"{child.name} exited with status {code} before the "
                                 f"mission ended; the end of {child.log_path}:\n{child.tail()}")
        reason = give_up()
        if reason:
            raise GraphError(reason)


def stop_in_stages(children: list[Child], timeout: float) -> dict[str, int | str]:
    """Stop the graph in three stages, each SIGINT, up to ``timeout`` s, then SIGKILL: the
    clock source (the rest see no new data), the other nodes, the observers (the recorder and
    the viewer take what the others publish until they are gone: the bag and the live view
    end with the mission's end). A stage starts once the one before has exited, so that no
    node tears down its DDS endpoints while its peers tear down theirs. The exit status of
    each child, "killed" for one that had to be."""
    stages = ([c for c in children if c.executable in CLOCK_SOURCES],
              [c for c in children if c.executable not in (*CLOCK_SOURCES, *OBSERVERS)],
              [c for c in children if c.executable in OBSERVERS])
    codes: dict[str, int | str] = {}
    for stage in stages:
        for child in stage:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout
        for child in stage:
            codes[child.name] = wait_or_kill(child.process, deadline - time.monotonic())
    return codes


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when this process dies, even by SIGKILL, so that
    no node outlives its supervisor (Linux; elsewhere nothing)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


# Looked up before any fork: after one, with the DDS threads running, only the call is safe.
_PR_SET_PDEATHSIG = 1
_PRCTL = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform.startswith("linux") else None
