"""The sweep's missions as Ray tasks: a local Ray of 2 CPUs, one worker killed mid-run, the
sweep finishing with the runs of the local pool."""

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from poam_ros.benchmark import sweep
from poam_ros.sim import default_terrain

ray = pytest.importorskip("ray")

TIMEOUT = 600.0  # s for a worker to start a mission


@pytest.fixture
def two_maps(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    np.savez(folder / "BATHY_360.npz", elevation=default_terrain().grid[::-1])
    np.savez(folder / "FLIPPED_360.npz", elevation=default_terrain().grid[:, ::-1])
    return folder


def mission_workers() -> list[int]:
    """PIDs of Ray workers running a mission (their title is the task's, ``ray::_mission``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(
                    b"ray::_mission"):
                pids.append(int(entry.name))
        except OSError:  # the process ended meanwhile
            continue
    return pids


def kill_one_worker(killed: list[int], stop: threading.Event) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not stop.is_set() and time.monotonic() < deadline:
        workers = mission_workers()
        if workers:
            time.sleep(1.0)  # mid-run: the mission has started
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])
            return
        time.sleep(0.05)


def records(out: Path) -> dict[str, list]:
    return {path.name: [(r["num_samples"], r["smse"], r["msll"]) for r in map(
        json.loads, path.read_text().splitlines())] for path in (out / "runs").glob("*.jsonl")}


def test_a_ray_sweep_survives_a_killed_worker_and_equals_the_local_pool(
        tmp_path, two_maps, small_parameter_file):
    common = ["--maps", "BATHY,FLIPPED", "--seeds", "0,1", "--data-dir", str(two_maps),
              "--params", str(small_parameter_file()), "--quick", "--no-progress",
              "--figure-seeds", "", "--threads", "1"]
    assert sweep.main(common + ["--out", str(tmp_path / "pool"), "--jobs", "2"]) == 0
    killed, stop = [], threading.Event()
    killer = threading.Thread(target=kill_one_worker, args=(killed, stop))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        killer.start()
        assert sweep.main(common + ["--out", str(tmp_path / "ray"), "--cluster", "ray"]) == 0
    finally:
        stop.set()
        killer.join()
        ray.shutdown()
    assert len(killed) == 1
    pool, on_ray = records(tmp_path / "pool"), records(tmp_path / "ray")
    assert len(pool) == 4 and on_ray == pool
    statuses = [json.loads(path.read_text())
                for path in (tmp_path / "ray" / "runs").glob("*.json")]
    assert [status["status"] for status in statuses] == ["done"] * 4


def test_a_cluster_address_is_checked_before_any_run(tmp_path, capsys):
    assert sweep.main(["--maps", "params", "--seeds", "0", "--out", str(tmp_path),
                       "--cluster", "spark://host"]) == 2
    assert "--cluster must be ray or ray://HOST:PORT" in capsys.readouterr().err
