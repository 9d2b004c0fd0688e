"""The benchmark sweep: records, summary, figures, failed runs recorded, resume."""

import json

import numpy as np
import pytest

from poam_ros.benchmark import sweep
from poam_ros.sim import default_terrain


def test_quick_sweep_records_failures_and_resumes(tmp_path):
    maps = tmp_path / "maps"
    maps.mkdir()
    # A map file in the format of the shared SRTM grids (north row first).
    np.savez(maps / "BATHY_360.npz", elevation=default_terrain().grid[::-1])
    out = tmp_path / "out"
    args = ["--maps", "BATHY,MISSING", "--seeds", "0", "--data-dir", str(maps), "--out",
            str(out), "--quick", "--no-progress", "--window-start", "600"]
    assert sweep.main(args) == 1  # one run failed
    done = json.loads((out / "runs" / "BATHY_poam_attentive_0.json").read_text())
    failed = json.loads((out / "runs" / "MISSING_poam_attentive_0.json").read_text())
    assert done["status"] == "done" and done["samples"] >= 700
    assert failed["status"] == "failed" and "MISSING_360.npz" in failed["error"]
    records = (out / "runs" / "BATHY_poam_attentive_0.jsonl").read_text().splitlines()
    assert len(records) == done["epochs"] and json.loads(records[-1])["num_samples"] >= 700
    summary = (out / "summary.md").read_text()
    epochs_table, window_table = summary.split("Averaged over samples 600–700")
    assert "| BATHY | poam | attentive | 1 |" in epochs_table
    assert "| MISSING | poam | attentive | 0 |" in epochs_table
    # The window's average is the interpolated records' (the pilot survey ends before 600).
    records = [json.loads(line) for line in records]
    assert records[0]["num_samples"] < 600
    counts = [r["num_samples"] for r in records]
    smse = np.interp(np.arange(600, 701), counts, [r["smse"] for r in records]).mean()
    assert f"| BATHY | poam | attentive | 1 | {smse:.4g} |" in window_table
    assert "| MISSING | poam | attentive | 0 | – | – |" in window_table
    assert (out / "curves_BATHY.png").stat().st_size > 0
    assert (out / "figures" / "BATHY_poam_attentive_0.png").stat().st_size > 0

    # Resume: finished runs are not redone (their records stay untouched).
    stamp = (out / "runs" / "BATHY_poam_attentive_0.jsonl").stat().st_mtime_ns
    sweep.main(args)
    assert (out / "runs" / "BATHY_poam_attentive_0.jsonl").stat().st_mtime_ns == stamp


def test_seed_ranges():
    assert sweep.parse_seeds("0-3") == [0, 1, 2, 3]
    assert sweep.parse_seeds("2,5") == [2, 5]
    assert sweep.parse_seeds("0,3-5,9") == [0, 3, 4, 5, 9]


def test_a_window_outside_the_budget_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        sweep.main(["--quick", "--window-start", "700", "--out", str(tmp_path)])
    assert "--window-start must lie between 0 and the budget of 700 samples" in \
        capsys.readouterr().err


def test_parallel_jobs_give_the_runs_of_a_sequential_sweep(tmp_path):
    maps = tmp_path / "maps"
    maps.mkdir()
    np.savez(maps / "BATHY_360.npz", elevation=default_terrain().grid[::-1])
    common = ["--maps", "BATHY", "--seeds", "0,1", "--data-dir", str(maps), "--quick",
              "--no-progress", "--figure-seeds", "", "--threads", "1"]
    assert sweep.main(common + ["--out", str(tmp_path / "one")]) == 0
    assert sweep.main(common + ["--out", str(tmp_path / "two"), "--jobs", "2"]) == 0
    for seed in (0, 1):
        name = f"runs/BATHY_poam_attentive_{seed}.jsonl"
        one = [json.loads(line) for line in (tmp_path / "one" / name).read_text().splitlines()]
        two = [json.loads(line) for line in (tmp_path / "two" / name).read_text().splitlines()]
        assert [(r["num_samples"], r["smse"], r["msll"]) for r in one] == \
            [(r["num_samples"], r["smse"], r["msll"]) for r in two]
