"""A mapper process killed with SIGKILL resumes its map at the next start: the crash journal
over real DDS, from the samples topic to the restored model's diagnostics."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from graph_helpers import Probe  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from poam_ros.processes import wait_or_kill  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STATUS = "mapper: mapping"
BATCHES, SAMPLES = 5, 80
WAIT = 60.0  # s for each step; generous, the machine is shared


def mapper_command(tmp_path):
    parameters = {"mapping.num_inducing": 20, "mapping.train_steps": 1,
                  "mapping.batch_size": 32, "mapping.device": "cpu", "torch_threads": 1,
                  "workspace.vertices": "[0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0]",
                  "grid.resolution": 2.0, "diagnostics_period": 0.2,
                  "save_path": str(tmp_path / "map.pt"),
                  # autosaves after updates 2 and 4: the restart loads one and replays batch 5
                  "journal.autosave_updates": 2, "journal.autosave_period": 0.0}
    arguments = [item for name, value in parameters.items()
                 for item in ("-p", f"{name}:={value}")]
    return [sys.executable, "-m", "poam_ros.ros.mapper_node", "--ros-args", *arguments]


def batch(seed):
    xy = np.random.default_rng(seed).uniform(0.0, 20.0, (SAMPLES, 2))
    return xy, np.sin(xy[:, 0] / 3.0) + xy[:, 1] / 10.0


def value(probe, name):
    """The field ``name`` of the mapper's newest status, None before one came."""
    if STATUS not in probe.diagnostics:
        return None
    return getattr(probe.last_status(STATUS)[2], name)


def spin_until(executor, predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        executor.spin_once(timeout_sec=0.05)
    return True


def test_a_mapper_killed_after_n_batches_resumes_them_all(ros_context, ros_domain_id, tmp_path):
    journal = tmp_path / "map.journal"
    node = rclpy.create_node("crash_probe", context=ros_context)
    probe = Probe(node)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    processes = []

    def start(log):
        with open(log, "w") as handle:
            processes.append(subprocess.Popen(mapper_command(tmp_path), cwd=ROOT,
                                              stdout=handle, stderr=subprocess.STDOUT))
        return processes[-1]

    try:
        first = start(logs[0])
        assert spin_until(executor, lambda: probe.samples_pub.get_subscription_count() > 0), \
            logs[0].read_text()
        for index in range(BATCHES):
            probe.send_samples(*batch(index), stamp_ns=(index + 1) * 1_000_000_000)
            assert spin_until(executor, lambda: value(probe, "updates") == index + 1), \
                f"batch {index + 1} not mapped: {logs[0].read_text()}"
        assert spin_until(executor, lambda: value(probe, "autosaves") == 2)
        assert value(probe, "samples") == BATCHES * SAMPLES
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=WAIT)
        assert first.returncode == -signal.SIGKILL
        assert sorted(p.name for p in journal.glob("autosave-*")) == ["autosave-00000002.pt"]

        probe.diagnostics.clear()
        probe.maps.clear()
        second = start(logs[1])
        assert spin_until(executor, lambda: value(probe, "updates") == 1 and probe.maps), \
            f"no map after the restart: {logs[1].read_text()}"
        restored = value(probe, "samples")
        assert (BATCHES - 1) * SAMPLES <= restored <= BATCHES * SAMPLES  # none twice
        assert restored == BATCHES * SAMPLES  # in fact all: each was journaled on arrival
        log = logs[1].read_text()
        assert "restoring the map" in log
        assert f"{4 * SAMPLES} samples from autosave-00000002.pt + {SAMPLES} samples in 1 " \
               f"record of segment 2" in log
        assert value(probe, "journal") == str(journal)
        # The map carries on: a new batch after the restart is mapped on top.
        probe.send_samples(*batch(99), stamp_ns=99_000_000_000)
        assert spin_until(executor, lambda: value(probe, "samples")
                          == (BATCHES + 1) * SAMPLES)

        second.send_signal(signal.SIGINT)  # an orderly stop ends the map with the process
        assert second.wait(timeout=WAIT) == 0
        assert not journal.exists()
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                wait_or_kill(process, 30)
        executor.remove_node(node)
        executor.shutdown()
        node.destroy_node()
