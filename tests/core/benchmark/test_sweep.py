"""The benchmark sweep: records, summary, figures, failed runs recorded, resume; bad maps and
methods refused before any run; an interrupted sweep keeps its finished runs."""

import json
from pathlib import Path

import numpy as np
import pytest

from poam_ros.benchmark import sweep
from poam_ros.models import MappingConfig
from poam_ros.models.config import VipsOptions
from poam_ros.sim import default_terrain

TWO_CHANNELS = Path(__file__).resolve().parents[3] / "config" / "two_channels.yaml"


@pytest.fixture
def maps(tmp_path):
    """A folder with the map BATHY in the format of the shared SRTM grids (north row first)."""
    folder = tmp_path / "maps"
    folder.mkdir()
    np.savez(folder / "BATHY_360.npz", elevation=default_terrain().grid[::-1])
    return folder


def test_quick_sweep_records_failures_and_resumes(tmp_path, maps, small_parameter_file):
    """A map given as a file (named by its stem); exact refuses the pilot survey's samples
    beyond 50: that run fails, is recorded, and the sweep goes on."""
    out = tmp_path / "out"
    params = small_parameter_file(mapper={"mapping": {"exact": {"max_samples": 50}}})
    args = ["--maps", str(maps / "BATHY_360.npz"), "--methods", "poam,exact", "--seeds", "0",
            "--params", str(params), "--out", str(out), "--quick", "--no-progress",
            "--window-start", "600"]
    assert sweep.main(args) == 1  # one run failed
    done = json.loads((out / "runs" / "BATHY_360_poam_attentive_0.json").read_text())
    failed = json.loads((out / "runs" / "BATHY_360_exact_attentive_0.json").read_text())
    assert done["status"] == "done" and done["samples"] >= 700
    assert done["run"]["terrain"] == str(maps / "BATHY_360.npz")
    assert failed["status"] == "failed" and "ExactGPSizeError" in failed["error"]
    records = (out / "runs" / "BATHY_360_poam_attentive_0.jsonl").read_text().splitlines()
    assert len(records) == done["epochs"] and json.loads(records[-1])["num_samples"] >= 700
    summary = (out / "summary.md").read_text()
    epochs_table, window_table = summary.split("Averaged over samples 600–700")
    assert "| BATHY_360 | poam | attentive | 1 |" in epochs_table
    assert "| BATHY_360 | exact | attentive | 0 |" in epochs_table
    # The window's average is the interpolated records' (the pilot survey ends before 600).
    records = [json.loads(line) for line in records]
    assert records[0]["num_samples"] < 600
    counts = [r["num_samples"] for r in records]
    smse = np.interp(np.arange(600, 701), counts, [r["smse"] for r in records]).mean()
    assert f"| BATHY_360 | poam | attentive | 1 | {smse:.4g} |" in window_table
    assert "| BATHY_360 | exact | attentive | 0 | – | – |" in window_table
    assert (out / "curves_BATHY_360.png").stat().st_size > 0
    assert not (out / "sizing_BATHY_360.png").exists()  # no method sized itself
    assert "Model size" not in summary
    assert (out / "figures" / "BATHY_360_poam_attentive_0.png").stat().st_size > 0

    # Resume: finished runs are not redone (their records stay untouched).
    stamp = (out / "runs" / "BATHY_360_poam_attentive_0.jsonl").stat().st_mtime_ns
    sweep.main(args)
    assert (out / "runs" / "BATHY_360_poam_attentive_0.jsonl").stat().st_mtime_ns == stamp


@pytest.mark.parametrize("entry, message", [
    ("MISSING", "--maps: no map file at {maps}/MISSING_360.npz (tile 'MISSING' looked up in "
                "--data-dir)"),
    ("{maps}/sub/BATHY_360.npz", "--maps: no map file at {maps}/sub/BATHY_360.npz"),
    ("{maps}/BATHY_360.npz", "--maps: {maps}/BATHY_360.npz and {maps}/BATHY_360.npz would "
                             "both be named 'BATHY_360'"),
])
def test_a_bad_map_is_one_line_before_any_run(tmp_path, maps, capsys, entry, message):
    out = tmp_path / "out"
    assert sweep.main(["--maps", f"{maps}/BATHY_360.npz,{entry.format(maps=maps)}",
                       "--data-dir", str(maps), "--seeds", "0", "--quick", "--no-progress",
                       "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"poam-ros bench sweep: {message.format(maps=maps)}\n"
    assert not out.exists()


def test_an_unknown_method_is_one_line_before_any_run(tmp_path, maps, capsys):
    out = tmp_path / "out"
    assert sweep.main(["--maps", "BATHY", "--data-dir", str(maps), "--methods", "poam,poamm",
                       "--quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "got 'poamm'" in err and "'ssgp++'" in err
    assert not out.exists()


def test_an_interrupted_sweep_keeps_its_finished_runs(tmp_path, maps, capsys, monkeypatch):
    """Ctrl-C (KeyboardInterrupt, as the command's signal handler raises it) during the
    second run: status 130, a line saying so; the first run stays and is not redone."""
    finished = []

    def run_one(spec, *args, **kwargs):
        if finished:
            raise KeyboardInterrupt
        finished.append(real_run_one(spec, *args, **kwargs))

    real_run_one = sweep.run_one
    monkeypatch.setattr(sweep, "run_one", run_one)
    out = tmp_path / "out"
    args = ["--maps", "BATHY", "--data-dir", str(maps), "--seeds", "0,1", "--quick",
            "--no-progress", "--out", str(out)]
    assert sweep.main(args) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"poam-ros bench sweep: interrupted; 1 of 2 runs finished, kept in {out / 'runs'}; "
        f"the same command resumes")
    assert json.loads((out / "runs" / "BATHY_poam_attentive_0.json").read_text())["status"] \
        == "done"
    assert not (out / "runs" / "BATHY_poam_attentive_1.json").exists()
    monkeypatch.setattr(sweep, "run_one", real_run_one)
    stamp = (out / "runs" / "BATHY_poam_attentive_0.jsonl").stat().st_mtime_ns
    assert sweep.main(args) == 0
    assert (out / "runs" / "BATHY_poam_attentive_0.jsonl").stat().st_mtime_ns == stamp


def test_seed_ranges():
    assert sweep.parse_seeds("") == []
    assert sweep.parse_seeds("0-3") == [0, 1, 2, 3]
    assert sweep.parse_seeds("2,5") == [2, 5]
    assert sweep.parse_seeds("0,3-5,9") == [0, 3, 4, 5, 9]


def test_a_window_outside_the_budget_is_refused(tmp_path, maps, capsys):
    assert sweep.main(["--maps", "BATHY", "--data-dir", str(maps), "--quick",
                       "--window-start", "700", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("poam-ros bench sweep: --window-start must lie between 0 "
                                       "and the budget of 700 samples, got 700\n")


def test_parallel_jobs_give_the_runs_of_a_sequential_sweep(tmp_path, maps):
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


def test_a_two_channel_sweep_tabulates_and_plots_each_channel(tmp_path):
    """config/two_channels.yaml over the parameter file's own terrain (``--maps params``): the
    summary has a row per method and channel whose SMSE is the run's average over its scored
    epochs, and curves and figures come per channel."""
    out = tmp_path / "out"
    assert sweep.main(["--maps", "params", "--params", str(TWO_CHANNELS), "--methods",
                       "poam-independent", "--seeds", "0", "--out", str(out), "--quick",
                       "--no-progress"]) == 0
    name = "params_poam-independent_attentive_0"
    records = [json.loads(line)
               for line in (out / "runs" / f"{name}.jsonl").read_text().splitlines()]
    assert json.loads((out / "runs" / f"{name}.json").read_text())["run"]["terrain"] == ""
    summary = (out / "summary.md").read_text()
    for channel in ("depth", "temperature"):
        smse = np.mean([r["extra"][f"smse_{channel}"] for r in records])
        assert f"| params | poam-independent | attentive | 1 | {channel} | {smse:.4g} |" \
            in summary
        assert (out / f"curves_params_{channel}.png").stat().st_size > 0
    assert records[0]["extra"]["smse_depth"] == records[0]["smse"]
    assert (out / "figures" / f"{name}.png").stat().st_size > 0
    assert (out / "figures" / f"{name}_temperature.png").stat().st_size > 0


def _mapping_file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_method_runs_with_its_own_mapping_values_beside_the_others(tmp_path, maps):
    """--method-params: poam capped at 40 inducing inputs, ovc++ at the sweep's 100, in one
    sweep; the status files and setup.json say which values each method ran with."""
    out = tmp_path / "out"
    own = _mapping_file(tmp_path / "poam.yaml", "mapper:\n  ros__parameters:\n    mapping:\n"
                                                "      num_inducing: 40\n")
    assert sweep.main(["--maps", "BATHY", "--data-dir", str(maps), "--methods", "poam,ovc++",
                       "--method-params", f"poam={own}", "--seeds", "0", "--quick",
                       "--no-progress", "--figure-seeds", "", "--window-start", "0",
                       "--out", str(out)]) == 0

    def sizes(method):
        lines = (out / "runs" / f"BATHY_{method}_attentive_0.jsonl").read_text().splitlines()
        return [json.loads(line)["num_inducing"] for line in lines]

    assert max(sizes("poam")) == 40 and max(sizes("ovc++")) == 100
    status = json.loads((out / "runs" / "BATHY_poam_attentive_0.json").read_text())
    assert status["run"]["mapping"] == [["num_inducing", 40]]
    assert json.loads((out / "runs" / "BATHY_ovc++_attentive_0.json").read_text())[
        "run"]["mapping"] == []
    setup = json.loads((out / "setup.json").read_text())
    assert setup["method_params"] == {"poam": {"num_inducing": 40}}
    assert setup["mapping"]["num_inducing"] == 100


def test_methods_that_size_themselves_get_a_model_size_table_and_figure(tmp_path, maps):
    """poam-vips capped at 30 beside poam: its row of the model-size table is its records'
    mean inducing inputs added per update and the updates the cap stopped; poam has none."""
    out = tmp_path / "out"
    cap = _mapping_file(tmp_path / "vips.yaml", "mapper:\n  ros__parameters:\n    mapping:\n"
                                                "      num_inducing: 30\n")
    assert sweep.main(["--maps", "BATHY", "--data-dir", str(maps), "--methods", "poam,poam-vips",
                       "--method-params", f"poam-vips={cap}", "--seeds", "0", "--quick",
                       "--no-progress", "--figure-seeds", "", "--out", str(out)]) == 0
    lines = (out / "runs" / "BATHY_poam-vips_attentive_0.jsonl").read_text().splitlines()
    extras = [json.loads(line)["extra"] for line in lines]
    added = np.mean([e["inducing_added"] for e in extras])
    stopped = sum(e["cap_bound"] for e in extras)
    assert stopped > 0  # the cap of 30 binds on this map
    _, sizing = (out / "summary.md").read_text().split("Model size of the methods")
    assert f"| BATHY | poam-vips | attentive | 1 | 30 | {added:.1f} | {stopped:.1f} |" in sizing
    assert "| poam |" not in sizing
    assert (out / "sizing_BATHY.png").stat().st_size > 0


@pytest.mark.parametrize("entry, text, message", [
    ("poam", None, "expected METHOD=FILE, got 'poam'"),
    ("svgp={file}", "mapper:\n  ros__parameters:\n    mapping: {num_inducing: 40}\n",
     "'svgp' is not among --methods"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {num_inducing: 40}\n"
                    "planner:\n  ros__parameters: {}\n",
     "may hold only mapper: ros__parameters: mapping: values"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {method: ovc}\n",
     "(not mapping.method)"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {num_inducng: 40}\n",
     "num_inducng"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {num_inducing: 0}\n",
     "num_inducing"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {vips_delta: 0.01}\n",
     "mapping.vips_delta (now mapping.vips.delta)"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {vips: {delta: -1.0}}\n",
     "VipsOptions.delta must be >= 0.0"),
    ("poam={file}", "mapper:\n  ros__parameters:\n    mapping: {grid: {resolution: 1.0}}\n",
     "(not mapping.grid.resolution)"),
])
def test_method_parameters_are_checked_before_any_run(tmp_path, maps, capsys, entry, text,
                                                      message):
    out = tmp_path / "out"
    file = tmp_path / "own.yaml"
    if text is not None:
        file.write_text(text)
    assert sweep.main(["--maps", "BATHY", "--data-dir", str(maps), "--methods", "poam",
                       "--method-params", entry.format(file=file), "--quick",
                       "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--method-params" in err and message in err
    assert not out.exists()


def test_a_method_s_family_options_are_its_own_values(tmp_path):
    own = _mapping_file(tmp_path / "own.yaml",
                        "mapper:\n  ros__parameters:\n    mapping:\n      num_inducing: 40\n"
                        "      vips: {delta: 0.01}\n")
    values = sweep.method_parameters([f"poam-vips={own}"], ["poam", "poam-vips"])
    assert values == {"poam-vips": (("num_inducing", 40), ("vips.delta", 0.01))}
    spec = sweep.RunSpec("map", "poam-vips", "rbf", 0, "", values["poam-vips"])
    config = spec.mapping_config(MappingConfig(num_inducing=100))
    assert config.num_inducing == 40 and config.vips == VipsOptions(delta=0.01)


def test_a_method_given_twice_is_refused(tmp_path):
    own = _mapping_file(tmp_path / "own.yaml",
                        "mapper:\n  ros__parameters:\n    mapping: {num_inducing: 40}\n")
    with pytest.raises(sweep.ConfigError, match="'poam' is given twice"):
        sweep.method_parameters([f"poam={own}", f"poam={own}"], ["poam"])
