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


class CrashRig:
    """Mapper processes started in turn on one save path, fed and watched by a probe node."""

    def __init__(self, context, tmp_path):
        self.tmp_path, self.journal = tmp_path, tmp_path / "map.journal"
        self.node = rclpy.create_node("crash_probe", context=context)
        self.probe = Probe(self.node)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.processes, self.logs = [], []

    def start(self):
        """A mapper process, its output to ``<n>.log``; the probe's records cleared."""
        self.probe.diagnostics.clear()
        self.probe.maps.clear()
        self.logs.append(self.tmp_path / f"{len(self.logs)}.log")
        with open(self.logs[-1], "w") as handle:
            self.processes.append(subprocess.Popen(mapper_command(self.tmp_path), cwd=ROOT,
                                                   stdout=handle, stderr=subprocess.STDOUT))
        return self.processes[-1]

    def log(self):
        return self.logs[-1].read_text()

    def spin_until(self, predicate):
        return spin_until(self.executor, predicate)

    def value(self, name):
        return value(self.probe, name)

    def map_and_kill(self):
        """A first mapper maps the BATCHES batches, one update each, autosaves twice and
        is killed."""
        first = self.start()
        assert self.spin_until(lambda: self.probe.samples_pub.get_subscription_count() > 0), \
            self.log()
        for index in range(BATCHES):
            self.probe.send_samples(*batch(index), stamp_ns=(index + 1) * 1_000_000_000)
            assert self.spin_until(lambda: self.value("updates") == index + 1), \
                f"batch {index + 1} not mapped: {self.log()}"
        assert self.spin_until(lambda: self.value("autosaves") == 2)
        assert self.value("samples") == BATCHES * SAMPLES
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=WAIT)
        assert first.returncode == -signal.SIGKILL
        assert sorted(p.name for p in self.journal.glob("autosave-*")) \
            == ["autosave-00000002.pt"]

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                wait_or_kill(process, 30)
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.node.destroy_node()


@pytest.fixture
def rig(ros_context, ros_domain_id, tmp_path):
    rig = CrashRig(ros_context, tmp_path)
    yield rig
    rig.close()


def test_a_mapper_killed_after_n_batches_resumes_them_all(rig):
    rig.map_and_kill()
    second = rig.start()
    assert rig.spin_until(lambda: rig.value("updates") == 1 and rig.probe.maps), \
        f"no map after the restart: {rig.log()}"
    restored = rig.value("samples")
    assert (BATCHES - 1) * SAMPLES <= restored <= BATCHES * SAMPLES  # none twice
    assert restored == BATCHES * SAMPLES  # in fact all: each was journaled on arrival
    log = rig.log()
    assert "restoring the map" in log
    assert f"{4 * SAMPLES} samples from autosave-00000002.pt + {SAMPLES} samples in 1 " \
           f"record of segment 2" in log
    assert rig.value("journal") == str(rig.journal)
    # The map carries on: a new batch after the restart is mapped on top.
    rig.probe.send_samples(*batch(99), stamp_ns=99_000_000_000)
    assert rig.spin_until(lambda: rig.value("samples") == (BATCHES + 1) * SAMPLES)

    second.send_signal(signal.SIGINT)  # an orderly stop ends the map with the process
    assert second.wait(timeout=WAIT) == 0
    assert not rig.journal.exists()


def test_a_killed_mapper_whose_autosave_is_gone_resumes_the_records_left(rig):
    """The autosave held batches 1-4 (their segments went when it was written); the journal
    still holds batch 5, which a restart maps as a map of its own, never deletes."""
    rig.map_and_kill()
    (rig.journal / "autosave-00000002.pt").unlink()
    second = rig.start()
    assert rig.spin_until(lambda: rig.value("updates") == 1 and rig.probe.maps), \
        f"no map after the restart: {rig.log()}"
    assert rig.value("samples") == SAMPLES
    assert f"no autosave before segment 2 (the samples before it are lost) + {SAMPLES} " \
           f"samples in 1 record of segment 2" in rig.log()
    assert "WARN" in rig.log() and "a map of its own" in rig.log()
    assert rig.value("journal") \
        == f"{rig.journal}; resumed without the samples before segment 2"
    assert rig.spin_until(lambda: rig.value("autosaves") == 1)  # a whole map again
    second.send_signal(signal.SIGINT)
    assert second.wait(timeout=WAIT) == 0
    assert not rig.journal.exists()
