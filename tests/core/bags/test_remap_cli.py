"""``poam-ros remap`` end to end on a simulator's survey bag: outputs written, metrics
against ground truth; bad input is one clear line and exit status 1."""

from __future__ import annotations

import json

import numpy as np
import yaml

from poam_ros.cli.bags import remap
from poam_ros.params.mission_setup import default_parameter_file


def small_params(tmp_path):
    """The package's parameter file with a small, fast model and a short pilot."""
    tree = yaml.safe_load(default_parameter_file().read_text())
    tree["mapper"]["ros__parameters"]["mapping"].update(num_inducing=30, train_steps=2,
                                                        device="cpu")
    tree["planner"]["ros__parameters"]["pilot"]["num_waypoints"] = 4
    tree["mission"]["ros__parameters"]["mission"]["seed"] = 2
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def test_remap_writes_the_map_metrics_and_figure(tmp_path, survey_bag, capsys):
    _, bag = survey_bag
    out = tmp_path / "out"
    assert remap([str(bag), "--params", str(small_params(tmp_path)), "--out", str(out)]) == 0
    summary = json.loads((out / "remap.json").read_text())
    assert summary["updates"] == 3 and summary["final"]["smse"] > 0
    assert summary["comparison_with_live"] is None and not summary["bag_damage"]
    layers = np.load(out / "map.npz")
    assert layers["mean"].shape == layers["x"].shape
    assert (out / "remap.png").stat().st_size > 10_000 and (out / "model.pt").is_file()
    assert "final:    SMSE" in capsys.readouterr().out


def test_bad_input_is_one_clear_line(tmp_path, capsys):
    assert remap([str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.strip() == \
        f"poam-ros remap: no bag at {tmp_path / 'missing'}: the path does not exist"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "junk_0.mcap").write_bytes(b"\x00" * 100)
    assert remap([str(tmp_path / "junk")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "neither an MCAP nor an sqlite3 file" in err[0]


def test_source_samples_needs_the_recorded_batches(survey_bag, capsys):
    _, bag = survey_bag  # written without ROS: sensors, plans, diagnostics, no /samples
    assert remap([str(bag), "--source", "samples", "--samples-topic", "/batches"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no /batches (sensor_msgs/msg/PointCloud2) to map " \
        "(source samples)" in err[0]
