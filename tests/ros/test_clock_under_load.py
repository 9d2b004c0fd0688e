"""Sim time at time_scale 400 on a loaded machine: no false clock resets, real ones found.

The simulated AUV of config/topobathy.yaml at 400 simulated seconds per wall second (odometry
400 and soundings 20 a wall second, a sounding every 20 s of sim time) feeds the sensor
ingest and the planner, each in its own process, while bounded busy loops keep every core
of the machine loaded. Late and skipped messages then open gaps in each stream's stamps far
wider than ``stamp_jump_threshold`` (10 s; short queues make sure of it): the clock rule must
take them for what they are, the stream's clock running fast
(:mod:`poam_ros.ingest.clock_jumps`). Then the simulator is restarted, its clock back at 0:
that jump back must still be found, once per stream.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe  # noqa: E402

from poam_ros.processes import wait_or_kill  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "config" / "topobathy.yaml"
LOAD_LIMIT = 240.0  # s: the busy loops end by then whatever happens to the test
RUN = 8.0  # s of wall time per simulator run: about 3,200 s of sim time at 400 x
# The nodes' statuses on /diagnostics, by name.
INGEST, PLANNER, SIMULATOR = "sensor_ingest: samples", "planner: planning", "simulated_auv: vehicle"
# The ingest's queues as short as the planner's odometry queue (100 messages: 0.25 s at
# 400 x): under load each overflows, as a robot's short sensor queues do, and skips runs of
# messages, so that the stamps leap.
SHORT_QUEUES = ("-p", "qos_overrides./odom.subscription.depth:=100",
                "-p", "qos_overrides./sonar/range.subscription.depth:=10")
CLOCK_DROPS = ("clock_reset", "stamp_outlier", "pose_stamp_outlier")


def node(module: str, log: Path, *arguments: str) -> subprocess.Popen:
    """A node of this source tree in a process, its output (the log lines) into ``log``."""
    with log.open("w") as output:
        return subprocess.Popen(
            [sys.executable, "-m", f"poam_ros.ros.{module}", "--ros-args", "--params-file",
             str(PARAMS), *arguments], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=output, stderr=subprocess.STDOUT)


def busy_loops() -> list[subprocess.Popen]:
    """One bounded busy loop per core this process may use (at least two)."""
    loop = f"import time\nend = time.monotonic() + {LOAD_LIMIT}\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", loop])
            for _ in range(max(2, len(os.sched_getaffinity(0))))]


def run_simulator(probe, spin_until, log: Path) -> None:
    """The simulated AUV (real-time mode: it flies the planner's pilot survey without a
    mapper) for :data:`RUN` wall seconds once the ingest has placed a sounding of it."""
    probe.diagnostics.pop(SIMULATOR, None)
    simulator = node("simulated_auv_node", log, "-p", "mode:=realtime", "-p",
                     "time_scale:=400.0")
    try:
        assert spin_until(lambda: SIMULATOR in probe.diagnostics, probe.node, timeout=120.0), \
            log.read_text()
        before = probe.last_status(INGEST)[2].samples_accepted
        assert spin_until(lambda: probe.last_status(INGEST)[2].samples_accepted > before,
                          probe.node, timeout=60.0), "no sounding placed"
        spin_until(lambda: simulator.poll() is not None, probe.node, timeout=RUN)
        assert simulator.poll() is None, log.read_text()
    finally:
        simulator.terminate()
        wait_or_kill(simulator, 30)


def test_no_false_clock_resets_at_time_scale_400_under_load(ros_domain_id, make_node,
                                                             spin_until, tmp_path):
    load = busy_loops()
    logs = {name: tmp_path / f"{name}.log" for name in ("ingest", "planner", "sim1", "sim2")}
    nodes = {"ingest": node("ingest_node", logs["ingest"], "-p", "use_sim_time:=true",
                            *SHORT_QUEUES),
             "planner": node("planner_node", logs["planner"], "-p", "use_sim_time:=true",
                             "-p", "mode:=realtime")}
    try:
        probe = Probe(make_node("clock_probe"))
        assert spin_until(lambda: INGEST in probe.diagnostics and probe.plans, probe.node,
                          timeout=120.0), "the ingest and planner did not start"
        run_simulator(probe, spin_until, logs["sim1"])
        _, _, ingest = probe.last_status(INGEST)
        _, _, planner = probe.last_status(PLANNER)
        run_simulator(probe, spin_until, logs["sim2"])  # the clock starts again from 0: a jump back
        _, _, ingest_after = probe.last_status(INGEST)
        _, _, planner_after = probe.last_status(PLANNER)
    finally:
        for process in load:
            process.kill()
        for process in nodes.values():
            process.terminate()
        for process in (*nodes.values(), *load):
            wait_or_kill(process, 30)
    print(ingest, planner, ingest_after, planner_after,
          {name: log.read_text()[-3000:] for name, log in logs.items()})
    assert ingest.samples_accepted >= 20  # soundings placed: the test saw the stream
    assert not {reason: n for reason, n in ingest.dropped.items()
                if reason in CLOCK_DROPS and n}, ingest
    assert not any(ingest.clock_resets.values()), ingest.clock_resets
    assert planner.clock_resets == 0 and not planner.dropped.get("pose_stamp_outlier"), planner
    assert ingest_after.clock_resets.get("odom") == 1, ingest_after
    assert ingest_after.clock_resets.get("range") == 1, ingest_after
    assert ingest_after.samples_accepted > ingest.samples_accepted
    assert planner_after.clock_resets == 1, planner_after
