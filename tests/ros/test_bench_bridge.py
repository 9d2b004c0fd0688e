"""``poam-ros bench bridge`` runs: the bridge node in its own process, the simulated
autopilot over UDP and a probe over DDS, and prints its numbers."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

ROOT = Path(__file__).resolve().parents[2]


def test_bench_bridge_prints_latencies_and_cpu_share(ros_domain_id, tmp_path):
    output = tmp_path / "bridge.json"
    finished = subprocess.run(
        [sys.executable, "-m", "poam_ros", "bench", "bridge", "--seconds", "2",
         "--domain-id", str(ros_domain_id), "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    for label in ("plan -> SET_POSITION_TARGET_GLOBAL_INT", "GLOBAL_POSITION_INT -> odom"):
        line = next(line for line in finished.stdout.splitlines() if line.startswith(label))
        counted = re.search(r"median +[\d.]+ ms +p99 +[\d.]+ ms +\((\d+) messages\)", line)
        assert counted and int(counted.group(1)) > 0, line
    assert re.search(r"bridge process CPU share +[\d.]+ % of one core", finished.stdout)
    assert output.exists()
