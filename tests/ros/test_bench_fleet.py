"""``poam-ros bench fleet`` runs its smallest matrix, the single vehicle and a coordinated
fleet of two with a central map, each through ``poam-ros sim``, and reports every run: the
table's row per fleet, the commands, the seed and the records."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

ROOT = Path(__file__).resolve().parents[2]


def test_bench_fleet_flies_the_single_vehicle_and_a_fleet_and_reports_both(
        ros_domain_id, tmp_path, small_parameter_file):
    out = tmp_path / "bench"
    finished = subprocess.run(
        [sys.executable, "-m", "poam_ros", "bench", "fleet", "--robots", "1", "2",
         "--coordination", "on", "--maps", "central", "--max-samples", "300", "--seed", "3",
         "--params", str(small_parameter_file()), "--domain-id", str(ros_domain_id),
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    printed = finished.stdout
    assert "poam-ros bench fleet: 2 run(s), seed 3" in printed
    rows = {label: next((line for line in printed.splitlines() if line.startswith(label)
                         and "failed" not in line and "sim" not in line), None)
            for label in ("1 vehicle", "2 vehicles, coordination on, central")}
    assert all(rows.values()), printed
    runs = json.loads((out / "fleet.json").read_text())["runs"]
    assert [run["setting"]["robots"] for run in runs] == [1, 2]
    for run in runs:
        assert run["status"] == 0 and run["samples"] >= 300 * run["setting"]["robots"]
        assert run["mission_time"] > 0 and run["command"][1:4] == ["-m", "poam_ros", "sim"]
        assert f"{' '.join(run['command'][2:])}" in printed
    # the single vehicle reaches its own final accuracy by its own mission's end
    assert 0 < runs[0]["time_to_single"] <= runs[0]["mission_time"]
