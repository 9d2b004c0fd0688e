"""sensor_ingest, mapper and planner as managed nodes over real DDS: every transition through
the lifecycle_msgs services, a configure that fails on a bad value and succeeds once it is set
right, shutdown from every state, state kept across deactivate and activate, and nothing
published before activation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path as FilePath

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe, call, overrides  # noqa: E402
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import IngestStatus, MapperStatus, PlannerStatus  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402

ROSOUT = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)

ROOT = FilePath(__file__).resolve().parents[2]
VERTICES = [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0]
BOWTIE = [0.0, 0.0, 20.0, 20.0, 20.0, 0.0, 0.0, 20.0]  # a self-intersecting workspace
MAPPER = {"mapping.num_inducing": 30, "mapping.train_steps": 2, "mapping.batch_size": 64,
          "mapping.device": "cpu", "workspace.vertices": VERTICES, "grid.resolution": 2.0,
          "journal.enabled": False}
# no sample budget: the test's mapper publishes maps without the mapper's status
PLANNER = {"seed": 7, "workspace.vertices": VERTICES, "pilot.num_waypoints": 4,
           "max_entropy.num_candidates": 20, "mission.max_samples": 0}
INGEST = {"workspace.vertices": VERTICES}
# node class, its parameters, the input topic its activation subscribes to, its status
NODES = {"sensor_ingest": (IngestNode, INGEST, "odom", IngestStatus),
         "mapper": (MapperNode, MAPPER, "samples", MapperStatus),
         "planner": (PlannerNode, PLANNER, "odom", PlannerStatus)}
# a value configure refuses, and one it takes: a read-only parameter (settable while
# unconfigured), a choice, and a value out of the ROS range given at start
BAD = {"sensor_ingest": ("workspace.vertices", BOWTIE, VERTICES),
       "mapper": ("grid.resolution", -1.0, 2.0),
       "planner": ("planning.planner", "bogus", "max_entropy")}
THREADS = {"sensor_ingest": "ingest_batches", "mapper": "mapper_worker",
           "planner": "planner_worker"}  # the names of the nodes' own threads
TIMEOUT = 20.0  # s; generous, the machine is shared


@pytest.fixture
def managed(ros_context, make_node, spin_until):
    """``managed(name, node_name=name, **extra)`` -> (node, probe, supervisor); the
    supervisor calls the node's lifecycle services over DDS: ``supervisor(transition_id)`` ->
    success, ``supervisor()`` -> the state's label."""
    started = []

    def start(name, node_name=None, **extra):
        cls, parameters, _, _ = NODES[name]
        node_name = node_name or name
        node = cls(node_name, context=ros_context,
                   parameter_overrides=overrides({**parameters, **extra}))
        started.append(node)
        probe = Probe(make_node("probe"))
        change = probe.node.create_client(ChangeState, f"/{node_name}/change_state")
        get = probe.node.create_client(GetState, f"/{node_name}/get_state")

        def supervisor(transition=None):
            if transition is None:
                answer = call(get, GetState.Request(), spin_until, node, probe.node)
                return answer.current_state.label
            request = ChangeState.Request(transition=Transition(id=transition))
            return call(change, request, spin_until, node, probe.node).success

        return node, probe, supervisor

    yield start
    for node in started:
        node.destroy_node()


def subscribed(probe, name, spin_until, node, count):
    """Whether the node's input topic reaches ``count`` subscribers (the node's) over DDS."""
    publisher = {"odom": probe.odom_pub, "samples": probe.samples_pub}[NODES[name][2]]
    return spin_until(lambda: publisher.get_subscription_count() == count, node, probe.node)


def status(probe, name):
    """The newest status record of node ``name`` (None before one came)."""
    kind = NODES[name][3].KIND
    statuses = probe.diagnostics.get(f"{name}: {kind}")
    return msg.status_record(statuses[-1]) if statuses else None


@pytest.mark.parametrize("name", NODES)
def test_every_transition_through_the_lifecycle_services(managed, spin_until, name):
    node, probe, supervisor = managed(name, autostart=False)
    assert supervisor() == "unconfigured"
    assert subscribed(probe, name, spin_until, node, 0)
    steps = [(Transition.TRANSITION_CONFIGURE, "inactive", 0),
             (Transition.TRANSITION_ACTIVATE, "active", 1),
             (Transition.TRANSITION_DEACTIVATE, "inactive", 0),
             (Transition.TRANSITION_CLEANUP, "unconfigured", 0),
             (Transition.TRANSITION_CONFIGURE, "inactive", 0),
             (Transition.TRANSITION_ACTIVATE, "active", 1)]
    for transition, label, subscribers in steps:
        assert supervisor(transition), (transition, label)
        assert supervisor() == label
        assert subscribed(probe, name, spin_until, node, subscribers), label
        if label != "unconfigured":  # a configured node reports, with its state
            assert spin_until(lambda: getattr(status(probe, name), "lifecycle_state", None)
                              == label, node, probe.node, timeout=TIMEOUT), label
    assert not supervisor(Transition.TRANSITION_CONFIGURE)  # not from active
    assert supervisor(Transition.TRANSITION_ACTIVE_SHUTDOWN)
    assert supervisor() == "finalized" and node.finalized.is_set()
    assert subscribed(probe, name, spin_until, node, 0)


@pytest.mark.parametrize("name", NODES)
def test_a_bad_value_fails_configure_until_it_is_set_right(managed, spin_until, name):
    parameter, bad, good = BAD[name]
    # A name of its own: rcl sends a logger's /rosout through the first node of that name
    # in the process, and no more once that node is gone (the other tests' nodes).
    node_name = f"misconfigured_{name}"
    node, probe, supervisor = managed(name, node_name, autostart=False, **{parameter: bad})
    logs = []
    # transient local, as rcl's /rosout publisher: a log sent before the match still comes
    probe.node.create_subscription(Log, "/rosout", logs.append, ROSOUT)
    assert not supervisor(Transition.TRANSITION_CONFIGURE)
    assert supervisor() == "unconfigured"  # and alive: it answers
    field = parameter.rpartition(".")[2]  # the message names its config's field
    assert spin_until(lambda: any(log.name == node_name and "configure failed" in log.msg
                                  and field in log.msg for log in logs),
                      node, probe.node), [log.msg for log in logs]
    assert not supervisor(Transition.TRANSITION_CONFIGURE)  # nothing changed: fails again

    client = AsyncParameterClient(probe.node, node_name)
    assert client.wait_for_services(timeout_sec=TIMEOUT)
    future = client.set_parameters([Parameter(parameter, value=good)])
    assert spin_until(future.done, node, probe.node)
    assert all(result.successful for result in future.result().results)
    assert supervisor(Transition.TRANSITION_CONFIGURE)
    assert supervisor(Transition.TRANSITION_ACTIVATE) and supervisor() == "active"
    # configured: the parameter is read-only (grid.resolution changes the live map instead)
    if parameter != "grid.resolution":
        refused = node.set_parameters([Parameter(parameter, value=bad)])[0]
        assert not refused.successful and "read-only" in refused.reason


def test_a_bad_value_at_autostart_stops_the_start(ros_context):
    parameter, bad, _ = BAD["planner"]
    with pytest.raises(Exception, match="planner"):
        PlannerNode(context=ros_context, parameter_overrides=overrides({**PLANNER,
                                                                         parameter: bad}))


@pytest.mark.parametrize("name", NODES)
@pytest.mark.parametrize("before", ["unconfigured", "inactive", "active"])
def test_shutdown_from_every_state(managed, spin_until, name, before):
    node, probe, supervisor = managed(name, autostart=before == "active")
    if before == "inactive":
        assert supervisor(Transition.TRANSITION_CONFIGURE)
    assert supervisor() == before
    transition = {"unconfigured": Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,
                  "inactive": Transition.TRANSITION_INACTIVE_SHUTDOWN,
                  "active": Transition.TRANSITION_ACTIVE_SHUTDOWN}[before]
    assert supervisor(transition)
    assert supervisor() == "finalized" and node.finalized.is_set()
    assert subscribed(probe, name, spin_until, node, 0)
    # its threads are gone; what it published stops
    assert not [thread for thread in _threads() if thread.startswith(THREADS[name])]
    probe.diagnostics.clear()
    spin_until(lambda: False, node, probe.node, timeout=1.5)
    assert status(probe, name) is None


def _threads():
    import threading

    return [thread.name for thread in threading.enumerate() if thread.is_alive()]


def test_the_mapper_continues_the_same_map_after_deactivate_and_activate(managed, spin_until,
                                                                         tmp_path):
    node, probe, supervisor = managed("mapper", **{"journal.enabled": True,
                                                    "journal.path": str(tmp_path / "journal")})
    assert subscribed(probe, "mapper", spin_until, node, 1)
    rng = np.random.default_rng(0)
    first = rng.uniform(0.0, 20.0, (80, 2))
    probe.send_samples(first, np.sin(first[:, 0] / 3.0), stamp_ns=1_000_000_000)
    assert spin_until(lambda: probe.maps and getattr(status(probe, "mapper"), "samples", 0)
                      == 80, node, probe.node, timeout=60.0)
    before = msg.cloud_to_arrays(probe.maps[-1])
    journal = sorted(path.name for path in (tmp_path / "journal").iterdir())

    assert supervisor(Transition.TRANSITION_DEACTIVATE)
    assert spin_until(lambda: status(probe, "mapper").lifecycle_state == "inactive",
                      node, probe.node, timeout=TIMEOUT)
    assert status(probe, "mapper").samples == 80
    assert sorted(path.name for path in (tmp_path / "journal").iterdir()) == journal

    probe.maps.clear()
    assert supervisor(Transition.TRANSITION_ACTIVATE)
    assert spin_until(lambda: probe.maps, node, probe.node, timeout=TIMEOUT)  # again
    after = msg.cloud_to_arrays(probe.maps[-1])
    for layer in ("mean", "std", "lengthscale"):  # the same model
        np.testing.assert_array_equal(after[layer], before[layer])
    record = status(probe, "mapper")
    assert (record.samples, record.updates) == (80, 1)

    assert subscribed(probe, "mapper", spin_until, node, 1)
    second = rng.uniform(0.0, 20.0, (40, 2))
    probe.send_samples(second, np.sin(second[:, 0] / 3.0), stamp_ns=2_000_000_000)
    assert spin_until(lambda: (status(probe, "mapper").samples,
                               status(probe, "mapper").updates) == (120, 2),
                      node, probe.node, timeout=60.0)


def test_the_ingest_keeps_its_poses_and_its_plan_across_deactivate(managed, spin_until):
    node, probe, supervisor = managed("sensor_ingest", flush_grace=0.2)  # s: a batch's wait
    batches = []
    plan_pub = probe.node.create_publisher(Path, "plan", qos.LATCHED)
    probe.node.create_subscription(PointCloud2, "samples", batches.append, qos.SAMPLES)
    assert subscribed(probe, "sensor_ingest", spin_until, node, 1)
    # The plan's one waypoint is reached at 4 s: one (empty) batch. Taken again, the plan
    # would be reached again by the poses kept since that arrival: a second batch.
    plan_pub.publish(cv.path_from_waypoints(Header(frame_id="map"), np.array([[4.0, 0.0]])))
    assert spin_until(lambda: getattr(status(probe, "sensor_ingest"), "plan_waypoints", 0) == 1,
                      node, probe.node, timeout=TIMEOUT)
    for second in range(1, 6):
        probe.send_odom((float(second), 0.0), second * 1_000_000_000)
    assert spin_until(lambda: batches and status(probe, "sensor_ingest").poses_kept == 5,
                      node, probe.node, timeout=TIMEOUT)

    assert supervisor(Transition.TRANSITION_DEACTIVATE)
    probe.send_odom((6.0, 0.0), 6_000_000_000)  # nobody listens
    assert spin_until(lambda: status(probe, "sensor_ingest").lifecycle_state == "inactive",
                      node, probe.node, timeout=TIMEOUT)
    assert status(probe, "sensor_ingest").poses_kept == 5

    assert supervisor(Transition.TRANSITION_ACTIVATE)
    assert subscribed(probe, "sensor_ingest", spin_until, node, 1)
    probe.send_odom((7.0, 0.0), 7_000_000_000)
    assert spin_until(lambda: status(probe, "sensor_ingest").poses_kept == 6
                      and status(probe, "sensor_ingest").lifecycle_state == "active",
                      node, probe.node, timeout=TIMEOUT)
    assert status(probe, "sensor_ingest").latest_pose_time == pytest.approx(7.0)
    # The latched plan came again to the new subscription: no new plan, no second batch.
    spin_until(lambda: len(batches) > 1, node, probe.node, timeout=1.5)
    assert len(batches) == 1


def test_the_planner_keeps_its_plan_and_ignores_the_map_it_had(managed, spin_until):
    node, probe, supervisor = managed("planner")
    assert spin_until(lambda: probe.plans, node, probe.node)
    pilot = msg.path_to_waypoints(probe.plans[-1])
    probe.send_map(500_000_000)  # a map before the goal is reached
    for number, point in enumerate(pilot):
        probe.send_odom(point, (number + 1) * 1_000_000_000)
    assert spin_until(lambda: getattr(status(probe, "planner"), "state", "")
                      == "waiting for map", node, probe.node, timeout=TIMEOUT)

    assert supervisor(Transition.TRANSITION_DEACTIVATE)
    assert supervisor(Transition.TRANSITION_ACTIVATE)
    assert subscribed(probe, "planner", spin_until, node, 1)
    # The latched map came again: lockstep still waits for one made after the goal.
    spin_until(lambda: False, node, probe.node, timeout=1.0)
    record = status(probe, "planner")
    assert (record.state, record.maps_received, len(probe.plans)) == ("waiting for map", 1, 1)


@pytest.mark.parametrize("name", NODES)
def test_with_autostart_false_nothing_is_published_until_activated(managed, spin_until, name):
    node, probe, supervisor = managed(name, autostart=False)
    outputs = lambda: (probe.plans, probe.goals, probe.maps, probe.queries)  # noqa: E731
    spin_until(lambda: False, node, probe.node, timeout=1.0)
    assert status(probe, name) is None and not any(outputs())
    assert supervisor(Transition.TRANSITION_CONFIGURE)
    assert spin_until(lambda: getattr(status(probe, name), "lifecycle_state", None)
                      == "inactive", node, probe.node, timeout=TIMEOUT)
    assert not any(outputs())
    assert supervisor(Transition.TRANSITION_ACTIVATE)
    if name == "planner":  # the pilot survey, at activation
        assert spin_until(lambda: probe.plans and probe.goals, node, probe.node)


PROCESS_NAME = "supervised_planner"  # not a name this module's own nodes leave in the graph


def planner_process(*parameters: str) -> subprocess.Popen:
    """The planner's console script in a process named ``PROCESS_NAME``, in this module's
    domain."""
    arguments = [argument for parameter in ("pilot.num_waypoints:=4", *parameters)
                 for argument in ("-p", parameter)]
    return subprocess.Popen([sys.executable, "-m", "poam_ros.ros.planner_node", "--ros-args",
                             "-r", f"__node:={PROCESS_NAME}", *arguments], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stderr=subprocess.PIPE, text=True)


def test_a_bad_value_stops_an_autostarting_process_with_one_line(ros_domain_id):
    process = planner_process("planning.planner:=bogus")
    _, errors = process.communicate(timeout=120)
    lines = errors.strip().splitlines()
    assert process.returncode == 1 and len(lines) == 1, errors
    assert "bad configuration" in lines[0] and "bogus" in lines[0]


def test_a_supervised_process_waits_unconfigured_and_ends_on_shutdown(ros_domain_id,
                                                                      make_node, spin_until):
    process = planner_process("autostart:=false", "planning.planner:=bogus")
    try:
        probe = Probe(make_node("process_supervisor"))
        change = probe.node.create_client(ChangeState, f"/{PROCESS_NAME}/change_state")
        get = probe.node.create_client(GetState, f"/{PROCESS_NAME}/get_state")
        assert get.wait_for_service(timeout_sec=60.0)
        # A request sent before discovery has matched both ways goes unanswered: ask again.
        assert any(spin_until(get.call_async(GetState.Request()).done, probe.node, timeout=2.0)
                   for _ in range(30))
        configure = ChangeState.Request(transition=Transition(
            id=Transition.TRANSITION_CONFIGURE))
        assert not call(change, configure, spin_until, probe.node).success
        assert process.poll() is None  # alive, unconfigured
        client = AsyncParameterClient(probe.node, PROCESS_NAME)
        assert client.wait_for_services(timeout_sec=TIMEOUT)
        future = client.set_parameters([Parameter("planning.planner", value="max_entropy")])
        assert spin_until(future.done, probe.node)
        assert call(change, configure, spin_until, probe.node).success
        activate, shutdown = (ChangeState.Request(transition=Transition(id=transition))
                              for transition in (Transition.TRANSITION_ACTIVATE,
                                                 Transition.TRANSITION_ACTIVE_SHUTDOWN))
        assert call(change, activate, spin_until, probe.node).success
        assert spin_until(lambda: probe.plans, probe.node, timeout=TIMEOUT)
        assert len(probe.plans[0].poses) == 4  # the pilot survey
        assert call(change, shutdown, spin_until, probe.node).success
        assert process.wait(timeout=30) == 0  # the shutdown ended the process
    finally:
        if process.poll() is None:
            process.kill()
        _, errors = process.communicate(timeout=30)
    assert "configure failed" in errors and "stopped" in errors, errors
