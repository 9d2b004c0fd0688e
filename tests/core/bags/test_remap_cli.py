"""``poam-ros remap`` end to end on a simulator's survey bag: outputs written, metrics
against ground truth, figures titled; bad input is one clear line and exit status 2 before
the bag is read; an interrupted remap keeps its updates."""

from __future__ import annotations

import json

import numpy as np
import yaml

from poam_ros.cli.bags import remap
from poam_ros.setup.mission_setup import default_parameter_file


def small_params(tmp_path):
    """The package's parameter file with a small, fast model and a short pilot."""
    tree = yaml.safe_load(default_parameter_file().read_text())
    tree["/**/mapper"]["ros__parameters"]["mapping"].update(num_inducing=30, train_steps=2,
                                                        device="cpu")
    tree["/**/planner"]["ros__parameters"]["pilot"]["num_waypoints"] = 4
    tree["/**/mission"]["ros__parameters"]["mission"]["seed"] = 2
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
    printed = capsys.readouterr().out
    assert "final:    SMSE" in printed
    assert "(update 0 fits the scalers and chooses the inducing inputs from scratch" in printed


def test_bad_input_is_one_clear_line(tmp_path, capsys):
    assert remap([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == \
        f"poam-ros remap: no bag at {tmp_path / 'missing'}: the path does not exist"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "junk_0.mcap").write_bytes(b"\x00" * 100)
    assert remap([str(tmp_path / "junk")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "neither an MCAP nor an sqlite3 file" in err[0]


def test_source_samples_needs_the_recorded_batches(survey_bag, capsys):
    _, bag = survey_bag  # written without ROS: sensors, plans, diagnostics, no /samples
    assert remap([str(bag), "--source", "samples", "--samples-topic", "/batches"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no /batches (sensor_msgs/msg/PointCloud2) to map " \
        "(source samples)" in err[0]


def test_bad_options_are_one_line_before_the_bag_is_read(tmp_path, survey_bag, capsys):
    _, bag = survey_bag
    out = tmp_path / "out"
    for args, message in [
            (["--method", "poamm"], "MappingConfig.method must be one of ['poam', "),
            (["--map", str(tmp_path / "missing.npz")], "missing.npz: terrain file not found"),
            (["--params", str(tmp_path / "missing.yaml")], "missing.yaml: no such parameter "
                                                           "file"),
            (["--torch-threads", "-1"], "torch_threads must be >= 0, got -1")]:
        assert remap([str(bag), *args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_a_bag_without_ground_truth_gets_its_map_titled(tmp_path, survey_bag, capsys,
                                                       monkeypatch):
    import poam_ros.figures as figures

    saved = []
    save = figures.save_figure
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: saved.append(fig) or
                        save(fig, path))
    _, bag = survey_bag
    out = tmp_path / "out"
    assert remap([str(bag), "--params", str(small_params(tmp_path)), "--truth", "none",
                  "--out", str(out)]) == 0
    summary = json.loads((out / "remap.json").read_text())
    [fig] = saved
    assert fig._suptitle.get_text() == (f"the survey of {bag.name} · poam · "
                                        f"{summary['samples']:,} samples · remap, seed 2")
    panels, bars = fig.axes[:3], fig.axes[3:]  # the colour bars come after the panels
    assert [ax.get_title() for ax in panels] == [
        "predicted mean", "standard deviation", "learned lengthscale"]
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in panels] == [("x [m]", "y [m]")] * 3
    assert [bar.get_ylabel() for bar in bars] == ["elevation [m]", "std [m]", "lengthscale [m]"]
    assert (out / "remap.png").stat().st_size > 10_000


def test_an_interrupted_remap_keeps_its_updates(tmp_path, survey_bag, capsys, monkeypatch):
    """Ctrl-C (KeyboardInterrupt, as the command's signal handler raises it) after two
    updates: status 130, a line saying so, the two updates in epochs.jsonl."""
    import poam_ros.bags.remap as remap_module

    real = remap_module.remap_bag

    def two_updates(*args):
        *args, on_update = args
        updates = []

        def stop_after_two(record):
            on_update(record)
            updates.append(record)
            if len(updates) == 2:
                raise KeyboardInterrupt

        return real(*args, stop_after_two)

    monkeypatch.setattr(remap_module, "remap_bag", two_updates)
    _, bag = survey_bag
    out = tmp_path / "out"
    assert remap([str(bag), "--params", str(small_params(tmp_path)), "--out", str(out)]) == 130
    assert capsys.readouterr().err == (f"poam-ros remap: interrupted after 2 update(s); kept "
                                       f"in {out / 'epochs.jsonl'}\n")
    updates = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert [u["epoch"] for u in updates] == [0, 1] and not (out / "remap.json").exists()
