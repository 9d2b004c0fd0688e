"""A vehicle that leaves the fleet does not stall the others and rejoins from its own journal,
over real DDS: a two-vehicle fleet with a map per vehicle (``--fleet-map distributed``'s
mappers, each with its own crash journal; without the links, which carry nothing this needs)
is started node by node as ``poam-ros sim`` starts it. /auv1's processes are killed mid-mission
(SIGKILL: no orderly stop, the journal stays); fleet_sim says it left, the fleet's monitor no
longer waits for it, and /auv0's maps keep coming on a clock that runs. /auv1's nodes start
again with the same parameter file (its planner with ``skip_pilot``); its mapper resumes at
least the samples it held from its journal, fleet_sim says it rejoined, and its planner plans
again.
"""

from __future__ import annotations

import signal
import time

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.planners.fleet_state import LEFT  # noqa: E402
from poam_ros.processes import wait_or_kill  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.fleet_monitor import FleetMonitor  # noqa: E402
from poam_ros.ros.graph import Child, child_environment, start_order  # noqa: E402
from poam_ros.setup.fleet_launch import FleetOptions, fleet_nodes, write_fleet_file  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402
from poam_ros.setup.truth import mission_terrain, survey_fields  # noqa: E402

WAIT = 240.0  # s for each step on a loaded 2-core machine; each waits on a condition
LEAVE_TIMEOUT = 3.0  # s of wall time without a planner before fleet_sim lets the vehicle go
LINKS = ("fleet_link", "fleet_channel")
MAPPER1 = "auv1/mapper: mapping"
SIM1 = "fleet_sim/auv1: vehicle"


class RejoinProbe:
    """The fleet's /clock, the maps and plans per vehicle, and the newest status per name."""

    def __init__(self, node) -> None:
        self.clock = 0.0
        self.maps = {"/auv0": 0, "/auv1": 0}
        self.plans: list[Path] = []
        self.statuses: dict[str, tuple[str, object]] = {}
        node.create_subscription(Clock, "/clock", self._on_clock, qos.CLOCK)
        for namespace in self.maps:
            node.create_subscription(PointCloud2, f"{namespace}/map",
                                     lambda m, ns=namespace: self._on_map(ns), qos.LATCHED)
        node.create_subscription(Path, "/auv1/plan", self.plans.append, qos.LATCHED)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                 qos.DIAGNOSTICS)

    def _on_clock(self, message) -> None:
        self.clock = message.clock.sec + 1e-9 * message.clock.nanosec

    def _on_map(self, namespace: str) -> None:
        self.maps[namespace] += 1

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            self.statuses[status.name] = (status.message, msg.status_record(status))

    def message(self, name: str) -> str:
        return self.statuses.get(name, ("", None))[0]

    def samples(self, name: str = MAPPER1) -> int:
        record = self.statuses.get(name, ("", None))[1]
        return -1 if record is None else record.samples


class Fleet:
    """The fleet's nodes as processes, logged into ``log_dir``, watched by a probe node."""

    def __init__(self, context, tmp_path, params_file) -> None:
        self.log_dir = tmp_path / "logs"
        self.log_dir.mkdir()
        setup = MissionSetup.from_file(params_file)
        terrain = mission_terrain(setup)
        overrides = {"fleet_sim": {"fleet.leave_timeout": LEAVE_TIMEOUT, "time_scale": 50.0},
                     "planner": {"mission.max_samples": 1_000_000},  # flies on all the while
                     "mapper": {"journal.path": str(self.log_dir / "mapper.journal")}}
        effective = write_fleet_file(setup, params_file, self.log_dir / "parameters.yaml", 2,
                                     terrain, overrides,
                                     FleetOptions(central=False, coordination=False))
        self.nodes = [node for node in start_order(fleet_nodes(effective, 2, central=False))
                      if node.name not in LINKS]
        self.env = child_environment()
        self.children: list[Child] = []
        self.node = rclpy.create_node("rejoin_probe", context=context)
        self.probe = RejoinProbe(self.node)
        # poam-ros sim's monitor: the fleet's mission state, who left
        self.monitor = FleetMonitor(terrain, ["/auv0", "/auv1"], central=False,
                                    fields=survey_fields(setup, terrain)[0], context=context)
        self.executor = SingleThreadedExecutor(context=context)
        for node in (self.node, self.monitor, *self.monitor.vehicle_monitors.values()):
            self.executor.add_node(node)

    def start(self, namespace: str = "", suffix: str = "", *extra: str) -> None:
        """The nodes in ``namespace`` (all: ""), each as poam-ros sim starts it, with the
        ``extra`` parameters (``-p`` arguments) for the planner."""
        for node in self.nodes:
            if not node.namespace.startswith(namespace):
                continue
            arguments = [*node.arguments, "--ros-args",
                         *node.ros_arguments(self.log_dir / "launch"),
                         *(extra if node.name == "planner" else ())]
            self.children.append(Child(node.fqn.strip("/").replace("/", "_") + suffix,
                                       node.module, arguments, self.log_dir, self.env,
                                       node.executable))

    def kill(self, namespace: str) -> None:
        for child in self.children:
            if child.name.startswith(namespace.strip("/")) and child.process.poll() is None:
                child.process.send_signal(signal.SIGKILL)
                child.process.wait(timeout=30)

    def spin_until(self, predicate, what: str, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            dead = [c.name for c in self.children
                    if c.process.poll() not in (None, -signal.SIGKILL)]
            assert not dead and time.monotonic() < deadline, \
                f"{what}: not within {timeout:g} s (exited: {dead})\n" + "\n".join(
                    f"--- {c.name}\n{c.tail()}" for c in self.children)
            self.executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        for child in reversed(self.children):
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGINT)
        for child in self.children:
            wait_or_kill(child.process, 30)
        self.executor.shutdown()
        for node in (self.node, self.monitor, *self.monitor.vehicle_monitors.values()):
            node.destroy_node()


@pytest.fixture
def fleet(ros_context, ros_domain_id, tmp_path, small_parameter_file):
    params = small_parameter_file(mapper={"journal": {
        "enabled": True, "autosave_updates": 2, "autosave_period": 0.0}})
    fleet = Fleet(ros_context, tmp_path, params)
    yield fleet
    fleet.close()


def test_a_vehicle_that_leaves_does_not_stall_the_fleet_and_rejoins_from_its_journal(fleet):
    probe = fleet.probe
    fleet.start()
    fleet.spin_until(lambda: probe.maps["/auv1"] >= 2 and probe.samples() > 0
                     and probe.maps["/auv0"] >= 1, "both vehicles mapping")
    fleet.kill("/auv1")
    held = probe.samples()  # the journal holds these, and those in flight
    fleet.spin_until(lambda: probe.message(SIM1).startswith(LEFT),
                     "fleet_sim lets /auv1 go")
    maps, clock = probe.maps["/auv0"], probe.clock
    fleet.spin_until(lambda: probe.maps["/auv0"] >= maps + 2 and probe.clock > clock,
                     "/auv0 maps on a running clock without /auv1")
    assert probe.message(SIM1).startswith(LEFT)
    fleet.spin_until(lambda: fleet.monitor.vehicles_left == {"/auv1"}, "the monitor hears it")

    probe.statuses.pop(MAPPER1)
    plans = len(probe.plans)
    fleet.start("/auv1", "_again", "-p", "skip_pilot:=true")
    # the autosave first, then the journal's records after it, replayed as one batch
    fleet.spin_until(lambda: probe.samples() >= held, f"/auv1's mapper back with {held} samples")
    assert "restoring the map" in (fleet.log_dir / "auv1_mapper_again.log").read_text()
    # a new plan from the new planner, the pilot's and then an informative one
    fleet.spin_until(lambda: len(probe.plans) >= plans + 2 and not probe.message(
        SIM1).startswith(LEFT), "/auv1 plans and flies again")
    clock = probe.clock
    fleet.spin_until(lambda: probe.clock > clock + 1.0 and not fleet.monitor.vehicles_left,
                     "the fleet's clock runs on, /auv1 in it")
    log = (fleet.log_dir / "fleet_sim.log").read_text()
    assert log.count("/auv1 left the fleet") == 1 and log.count("/auv1 rejoined") == 1
