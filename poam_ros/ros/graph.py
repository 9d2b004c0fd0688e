"""The simulated mission's graph as processes, supervised: what ``poam-ros sim`` runs.

The nodes of ``launch/sim.launch.xml`` (simulated AUV, sensor ingest, mapper, planner) each
run as their own process, ``python -m <module> --ros-args --params-file <file>
--params-file <graph parameters>``: the user's parameter file, then what
:meth:`MissionSetup.node_parameters` derives from it (the seeds and the start of the ROS-free
mission, the command line's overrides), so that a lockstep graph replays
:class:`~poam_ros.mission.Mission`. A :class:`MissionMonitor` in this process scores every
map; the simulated AUV, the clock source, starts once the monitor hears the other nodes,
so that it misses no batch and no map.

The run ends when the planner's mission is done (or aborted) and the map holding its last
count is scored (:class:`MissionMonitor`), on Ctrl-C or SIGTERM, or with a
:class:`GraphError` when a node exits on its own, the nodes do not come up, or no map comes
for ``stall_timeout`` seconds. Whatever ends it, the children stop in stages (the clock
source, the other nodes, the recorder), each given SIGINT, then time to exit, then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
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
from poam_ros.mapping.epochs import EpochRecord
from poam_ros.params.files import PARAMETERS_KEY, dump_parameters, load_config
from poam_ros.planners.mission_control import DONE
from poam_ros.processes import wait_or_kill
from poam_ros.ros.mission_monitor import MissionMonitor
from poam_ros.ros.run import StopSignals, init_rclpy
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.setup.truth import survey_fields
from poam_ros.sim import Terrain
from poam_ros.sim.multibeam import MultibeamStreamConfig

#: node name -> module, in start order; the last one is the clock source
NODES = {"sensor_ingest": "poam_ros.ros.ingest_node", "mapper": "poam_ros.ros.mapper_node",
         "planner": "poam_ros.ros.planner_node",
         "simulated_auv": "poam_ros.ros.simulated_auv_node"}
CLOCK_SOURCE = "simulated_auv"
RECORDER = ("recorder", "poam_ros.ros.recorder_node")  # with GraphOptions.record
RECORDER_DISCOVERY = 0.1  # s: the graph's recorder searches for new topics this often
RECORDER_INTAKE = f"{RECORDER[0]}_intake"  # the recorder's node that holds its subscriptions
SENSOR_TOPICS = ("/odom", "/sonar/range")  # the simulated AUV's, "/sonar/swath" with multibeam
SPIN_PERIOD = 0.1  # s: children and deadlines are checked this often
LOG_TAIL = 20  # lines of a failed child's log that the error quotes
SETTLE_TIME = 2.5  # s the nodes' diagnostics get to catch up at the end


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


def graph_parameters(setup: MissionSetup, options: GraphOptions,
                     recording: Callable[[str], bool] | None = None,
                     sensor_topics: tuple[str, ...] = SENSOR_TOPICS) -> dict[str, dict[str, Any]]:
    """Per node, the parameters given on top of the parameter file. ``recording`` says which
    topics the recorder takes (None: no recorder); ``sensor_topics`` are the vehicle's."""
    parameters = {node: setup.node_parameters(node)
                  for node in ("simulated_auv", "sensor_ingest", "mapper", "planner")}
    # float64 samples: the model gets the positions the ingest computed, unrounded (the
    # ranges stay float32, as sensor_msgs/Range carries them).
    parameters["sensor_ingest"]["float64_samples"] = True
    for node in ("sensor_ingest", "mapper", "planner"):
        parameters[node]["use_sim_time"] = True  # as sim.launch.xml: the AUV is the clock
    parameters["mapper"]["evaluation_grid"] = setup.mission.eval_grid  # for the monitor
    if options.mode is not None:
        parameters["simulated_auv"]["mode"] = parameters["planner"]["mode"] = options.mode
    if options.time_scale is not None:
        parameters["simulated_auv"]["time_scale"] = float(options.time_scale)
    if options.torch_threads is not None:
        parameters["mapper"]["torch_threads"] = options.torch_threads
    if options.record is not None:
        parameters["recorder"] = {"output": str(options.record),
                                  "discovery_period": RECORDER_DISCOVERY}
        if recording is not None and all(map(recording, sensor_topics)):
            # The vehicle's first reading reaches the ingest and the recorder both.
            parameters["simulated_auv"]["hold_for"] = ["sensor_ingest", RECORDER_INTAKE]
    return parameters


def write_parameter_file(path: Path, parameters: dict[str, dict[str, Any]]) -> Path:
    """``parameters`` (node -> {dotted name: value}) as a ROS 2 ``--params-file``."""
    tree: dict[str, Any] = {}
    for node, values in parameters.items():
        section = tree.setdefault(node, {}).setdefault(PARAMETERS_KEY, {})
        for name, value in values.items():
            *parents, leaf = name.split(".")
            level = section
            for parent in parents:
                level = level.setdefault(parent, {})
            level[leaf] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_parameters(tree))
    return path


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
    """One node's process, running ``module``, its output in ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, module: str, parameter_files: list[Path], log_dir: Path,
                 env: dict[str, str]) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        files = [arg for path in parameter_files for arg in ("--params-file", str(path))]
        self.command = [sys.executable, "-m", module, "--ros-args", *files]
        with open(self.log_path, "wb") as log:
            # Its own session: a Ctrl-C at the terminal reaches this process alone, which
            # then stops the children in order.
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            start_new_session=True, preexec_fn=_die_with_parent)

    def tail(self) -> str:
        with open(self.log_path, errors="replace") as log:
            return "".join(deque(log, maxlen=LOG_TAIL))


def run_graph(setup: MissionSetup, terrain: Terrain, params_file: Path, options: GraphOptions,
              log_dir: Path, on_epoch: Callable[[EpochRecord], None] | None = None,
              on_start: Callable[[Child], None] | None = None) -> GraphRun:
    """Run the graph until the planner's mission ends (or Ctrl-C);
    see the module docstring. ``terrain``: the setup's, which the monitor scores against
    (:func:`~poam_ros.setup.truth.mission_terrain`; the caller's checks have loaded it).
    ``on_start`` sees each node's process as it starts."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # the monitor's too
    recording = _recording(params_file) if options.record is not None else None
    sensors = SENSOR_TOPICS + (("/sonar/swath",) if load_config(
        params_file, CLOCK_SOURCE, MultibeamStreamConfig, "multibeam").enabled else ())
    parameters = graph_parameters(setup, options, recording, sensors)
    # The mission's own crash journal: a killed run never resumes into the next one.
    parameters["mapper"]["journal.path"] = str(log_dir / "mapper.journal")
    files = [params_file, write_parameter_file(log_dir / "graph_parameters.yaml", parameters)]
    env = child_environment()
    # The recorder first, so that it hears every node from its first message; stopped last.
    starts = ([RECORDER] if options.record is not None else []) + list(NODES.items())
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
            monitor = MissionMonitor(terrain, on_epoch,
                                     fields=survey_fields(setup, terrain)[0], context=context)
            executor.add_node(monitor)
            for name, module in starts:
                if name == CLOCK_SOURCE:
                    deadline = time.monotonic() + options.start_timeout
                    _spin_until(lambda: not _not_ready(monitor, recording), executor, children,
                                stop, lambda: time.monotonic() > deadline and (
                                    f"no sign of {', '.join(_not_ready(monitor, recording))} "
                                    f"within {options.start_timeout:g} s"))
                children.append(Child(name, module, files, log_dir, env))
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
                monitor.destroy_node()
            rclpy.try_shutdown(context=context)
        return GraphRun(monitor.records, monitor, terrain, end - start, outcome, codes)


def _recording(params_file: Path) -> Callable[[str], bool]:
    """Whether the graph's recorder, as ``params_file`` configures it, takes a topic (by
    its absolute name)."""
    config = load_config(params_file, RECORDER[0], RecorderConfig)
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
    clock source (the rest see no new data), the other nodes, the recorder (it takes what
    they publish until they are gone). A stage starts once the one before has exited, so
    that no node tears down its DDS endpoints while its peers tear down theirs. The exit
    status of each child, "killed" for one that had to be."""
    stages = ([c for c in children if c.name == CLOCK_SOURCE],
              [c for c in children if c.name not in (CLOCK_SOURCE, RECORDER[0])],
              [c for c in children if c.name == RECORDER[0]])
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
