"""The stack under a namespace, over DDS: a file keyed ``/**/<node>`` gives the nodes of
``/auv1`` its values (read back through their parameter services), a file that gives a node
nothing is said at start, two robots' mappers on one domain keep files of their own (and a
second writer of one journal is refused), and the robot template refuses to start while a
required value is unset, one line each."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter, parameter_value_to_python  # noqa: E402

from poam_ros.mapping.journal import Journal, JournalBusy  # noqa: E402
from poam_ros.models import StateFileError  # noqa: E402
from poam_ros.params import ConfigError  # noqa: E402
from poam_ros.params.files import load_node_parameters  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "config" / "robot.yaml"
NODES = {"sensor_ingest": IngestNode, "mapper": MapperNode, "planner": PlannerNode}
SMALL_MAPPER = {"mapping.num_inducing": 40, "mapping.device": "cpu"}

STACK_FILE = """\
/**:
  ros__parameters:
    workspace:
      vertices: [0.0, 0.0, 400.0, 0.0, 400.0, 300.0, 0.0, 300.0]
    geo: {anchor: latlon, origin_latitude: 48.12, origin_longitude: -125.68}
/**/sensor_ingest:
  ros__parameters:
    sonar_rate: 0.5
    goal_radius: 4.0
/**/mapper:
  ros__parameters:
    grid: {resolution: 20.0}
    mapping: {num_inducing: 40, device: cpu}
    journal: {enabled: false}
/**/planner:
  ros__parameters:
    goal_radius: 4.0
    max_entropy: {num_candidates: 100}
mapper:                 # the root namespace's /mapper only: not /auv1/mapper's
  ros__parameters:
    grid: {resolution: 99.0}
"""


def context_with(domain_id: int, *ros_args: str):
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id, args=["--ros-args", *ros_args])
    return context


def spin_until(context, predicate, nodes, timeout):
    executor = SingleThreadedExecutor(context=context)
    for node in nodes:
        executor.add_node(node)
    deadline = time.monotonic() + timeout
    try:
        while not predicate() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        return predicate()
    finally:
        executor.shutdown()


def live_values(context, probe, nodes, fqn: str, names: list[str]) -> dict:
    """``names`` of the node ``fqn`` as its parameter service answers them."""
    client = probe.create_client(GetParameters, f"{fqn}/get_parameters")
    assert client.wait_for_service(timeout_sec=30.0), fqn
    future = client.call_async(GetParameters.Request(names=names))
    assert spin_until(context, future.done, [probe, *nodes], timeout=30.0), fqn
    values = [parameter_value_to_python(value) for value in future.result().values]
    return {name: list(value) if isinstance(value, list) else value
            for name, value in zip(names, values)}


def test_a_namespaced_stack_takes_its_file_s_values(ros_domain_id, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "robot.yaml"
    path.write_text(STACK_FILE)
    context = context_with(ros_domain_id, "-r", "__ns:=/auv1", "--params-file", str(path))
    nodes = []
    try:
        for node_class in NODES.values():
            nodes.append(node_class(context=context))
        probe = Node("probe", context=context)
        for node in nodes:
            fqn = node.get_fully_qualified_name()
            assert fqn.startswith("/auv1/")
            expected = load_node_parameters(path, fqn)
            assert live_values(context, probe, nodes, fqn, list(expected)) == expected, fqn
        assert load_node_parameters(path, "/auv1/mapper")["grid.resolution"] == 20.0
        probe.destroy_node()
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)


def test_a_file_that_gives_a_node_nothing_is_said_in_one_line(ros_domain_id, tmp_path):
    """The plain ``planner:`` section is the root namespace's; the planner of /auv1 says so,
    then stops on a bad value given on the command line (so that it ends)."""
    path = tmp_path / "plain.yaml"
    path.write_text("planner:\n  ros__parameters:\n    goal_radius: 3.0\n"
                    "mapper:\n  ros__parameters:\n    grid: {resolution: 5.0}\n")
    process = subprocess.run(
        [sys.executable, "-m", "poam_ros.ros.planner_node", "--ros-args", "-r", "__ns:=/auv1",
         "--params-file", str(path), "-p", "goal_radius:=-1.0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    warnings = [line for line in process.stderr.splitlines() if "[WARN]" in line]
    assert len(warnings) == 1, process.stderr
    assert "[auv1.planner]" in warnings[0]
    assert f"{path} has no section for /auv1/planner (sections: " in warnings[0]
    assert "planner" in warnings[0] and "mapper" in warnings[0]
    assert "key them /**/planner" in warnings[0]
    assert process.returncode == 1 and "goal_radius" in process.stderr


def test_two_robots_mappers_keep_files_of_their_own(ros_context, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("HOME", str(tmp_path))
    overrides = [Parameter(name, value=value) for name, value in SMALL_MAPPER.items()]
    mappers = []
    try:
        for namespace in ("auv1", "auv2"):
            mappers.append(MapperNode(context=ros_context, namespace=namespace,
                                      parameter_overrides=overrides))
        journals = [tmp_path / ".ros" / "poam_ros" / robot / "mapper" / "map_state.journal"
                    for robot in ("auv1", "auv2")]
        for directory in journals:
            assert (directory / "lock").is_file(), directory
            with pytest.raises(JournalBusy):  # its mapper holds it
                Journal(directory)
        capfd.readouterr()
        # A second /auv1/mapper (one robot started twice) maps without the journal.
        mappers.append(MapperNode(context=ros_context, namespace="auv1",
                                  parameter_overrides=overrides))
        err = capfd.readouterr().err
        assert "mapping without a crash journal" in err and str(journals[0]) in err, err
    finally:
        for mapper in mappers:
            mapper.destroy_node()


def test_a_state_file_path_takes_the_node_s_name(ros_context, tmp_path):
    """``{node}`` in state_file, as in save_path: /auv1/mapper reads auv1/mapper/..."""
    state = tmp_path / "auv1" / "mapper" / "map_state.pt"
    state.parent.mkdir(parents=True)
    state.write_bytes(b"")  # unreadable: the start stops naming the file it tried
    overrides = [Parameter(name, value=value) for name, value in SMALL_MAPPER.items()]
    overrides += [Parameter("state_file", value=str(tmp_path / "{node}" / "map_state.pt")),
                  Parameter("journal.enabled", value=False)]
    with pytest.raises(StateFileError, match=str(state)):
        MapperNode(context=ros_context, namespace="auv1", parameter_overrides=overrides)


@pytest.mark.parametrize("name", NODES)
def test_the_robot_template_refuses_to_start_naming_each_unset_value(ros_domain_id, name,
                                                                      capfd):
    required = load_node_parameters(TEMPLATE, f"/auv1/{name}")["required"]
    context = context_with(ros_domain_id, "-r", "__ns:=/auv1", "--params-file", str(TEMPLATE))
    try:
        capfd.readouterr()
        with pytest.raises(ConfigError, match="required value"):
            NODES[name](context=context)
        errors = [line for line in capfd.readouterr().err.splitlines() if "[ERROR]" in line]
    finally:
        rclpy.try_shutdown(context=context)
    assert len(errors) == len(required) >= 3
    for entry, line in zip(required, errors):
        assert f"[auv1.{name}]" in line
        assert f"{' or '.join(entry.split('|'))} must be set for a robot" in line


FILLED = """\
/**:
  ros__parameters:
    geo: {origin_latitude: 48.12, origin_longitude: -125.68}
    workspace:
      vertices: [0.0, 0.0, 400.0, 0.0, 400.0, 300.0, 0.0, 300.0]
/**/sensor_ingest:
  ros__parameters: {goal_radius: 5.0, sonar_rate: 1.0}
/**/mapper:
  ros__parameters:
    grid: {resolution: 10.0}
    mapping: {num_inducing: 40, device: cpu}
/**/planner:
  ros__parameters:
    goal_radius: 5.0
    vertical_mode: altitude
    altitude: 20.0
    mission: {home: [10.0, 10.0], max_time: 3600.0}
"""


def test_the_filled_in_template_starts_and_the_mapper_has_its_workspace(
        ros_domain_id, tmp_path, monkeypatch, capfd):
    """The template then a file of the robot's values (as a filled-in copy): every node
    starts, the mapper on a grid over the workspace (30 rows x 40 columns of 10 m)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    filled = tmp_path / "auv1.yaml"
    filled.write_text(FILLED)
    context = context_with(ros_domain_id, "-r", "__ns:=/auv1", "--params-file", str(TEMPLATE),
                           "--params-file", str(filled))
    nodes = []
    try:
        capfd.readouterr()
        for node_class in NODES.values():
            nodes.append(node_class(context=context))
        err = capfd.readouterr().err
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert "[ERROR]" not in err, err
    assert "30 x 40 map grid" in err, err
