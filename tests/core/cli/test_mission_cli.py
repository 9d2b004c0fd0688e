"""``poam-ros mission`` end to end on a small setup: progress, summary and files; a bad setup
refused before anything starts; a stop signal keeps the epochs so far."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from poam_ros.cli.mission import mission, print_unmapped
from poam_ros.models.registry import METHODS


def test_the_mission_prints_each_epoch_and_writes_its_records(tmp_path, capsys,
                                                               small_parameter_file):
    out = tmp_path / "out"
    assert mission(["--params", str(small_parameter_file()), "--max-samples", "500",
                    "--seed", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "mission.json").read_text())
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert (out / "mission.png").is_file()
    assert summary["epochs"] == len(epochs) >= 2 and summary["final"] == epochs[-1]
    assert epochs[-1]["num_samples"] >= 500 > epochs[-2]["num_samples"]
    assert summary["setup"]["mission"]["seed"] == 2
    dropped = summary["dropped"]  # the vehicle stays over the terrain here
    assert dropped["no_return"] == 0 and "returned nothing" not in printed
    outside = dropped["outside_workspace"]
    assert (f"{outside} soundings outside the workspace were not mapped (legs that cross its "
            f"boundary)" in printed) == (outside > 0)
    assert "warning" not in printed.lower()
    lines = printed.splitlines()
    first = next(i for i, line in enumerate(lines) if line[:5].strip() == "0")
    assert "epoch 0 is the pilot survey" in lines[first + 1]
    assert f"{summary['epoch_averages']['smse']:.4f}" in printed
    assert len([line for line in lines if line[:5].strip().isdigit()]) == len(epochs)
    assert summary["outcome"] == "budget"


def test_soundings_not_mapped_are_said_as_information(capsys):
    print_unmapped(40, 3)
    assert capsys.readouterr() == (
        "40 soundings outside the workspace were not mapped (legs that cross its boundary)\n"
        "3 soundings returned nothing (the vehicle swung beyond the terrain) and were not "
        "mapped\n", "")


def test_a_bad_setup_is_one_line_and_status_2(tmp_path, capsys):
    assert mission(["--map", str(tmp_path / "missing.npz"), "--out", str(tmp_path)]) == 2
    assert "missing.npz: terrain file not found" in capsys.readouterr().err


def _unknown_key(path):
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      methd: poam\n")
    return path


def _flat_family_key(path):
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      vips_delta: 0.01\n")
    return path


def _broken_yaml(path):
    path.write_text("mapper: [\n")
    return path


@pytest.mark.parametrize("args, message", [
    (["--method", "poamm"],
     f"MappingConfig.method must be one of {list(METHODS)}, got 'poamm'"),
    (["--device", "gpu"], "MappingConfig.device must be one of ['auto', 'cpu', 'cuda'], got 'gpu'"),
    (["--max-samples", "-5"], "MissionControlConfig.max_samples must be >= 0, got -5"),
    (["--max-samples", "many"], "argument --max-samples: invalid int value: 'many'"),
    (["--params", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: no such parameter file"),
    (["--params", _unknown_key], "unknown parameter(s) mapping.methd"),
    (["--params", _flat_family_key],
     "unknown parameter(s) mapping.vips_delta (now mapping.vips.delta)"),
    (["--params", _broken_yaml], "not a YAML parameter file: while parsing a flow node"),
])
def test_every_bad_value_is_one_line_naming_it_and_nothing_starts(tmp_path, capsys, args,
                                                                  message):
    args = [str(a(tmp_path / "params.yaml")) if callable(a) else a.format(tmp=tmp_path)
            for a in args]
    out = tmp_path / "out"
    assert exit_status(mission, [*args, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith("poam-ros mission: ")
    assert message.format(tmp=tmp_path) in captured.err
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_where_there_is_none_is_refused_before_the_mission_starts(tmp_path, capsys):
    assert mission(["--device", "cuda", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("poam-ros mission: device 'cuda': torch sees no CUDA "
                                       "device here; choose one of: auto, cpu\n")
    assert not (tmp_path / "out").exists()


def test_a_workspace_off_the_terrain_is_refused_before_the_mission_starts(
        tmp_path, capsys, small_parameter_file):
    params = small_parameter_file(planner={"workspace": {"vertices": [
        -30.0, -30.0, 300.0, -30.0, 300.0, 30.0, -30.0, 30.0]}})
    assert mission(["--params", str(params), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "reach outside the terrain extent" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("vertices, message", [
    ([], "WorkspaceConfig.vertices needs at least 3"),
    ([0.0, 0.0, 10.0, 10.0, 10.0, 0.0, 0.0, 10.0], "WorkspaceConfig.vertices is degenerate"),
    ([0.0, 0.0, 5.0, 0.0, 10.0, 0.0], "WorkspaceConfig.vertices is degenerate"),
], ids=["empty", "self-intersecting", "collinear"])
def test_an_empty_or_degenerate_workspace_is_one_line_never_the_default(
        tmp_path, capsys, small_parameter_file, vertices, message):
    params = small_parameter_file(planner={"workspace": {"vertices": vertices}})
    assert mission(["--params", str(params), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_a_terrain_s_filled_voids_are_a_warning_of_the_command(tmp_path,
                                                               small_parameter_file):
    """Elevations made up are said in the command's output at warning level, with a count,
    and the mission runs."""
    grid = np.add.outer(np.linspace(0.0, 50.0, 60), np.linspace(0.0, 30.0, 60))
    grid[10:13, 20:24] = np.nan
    np.save(tmp_path / "voids.npy", grid)
    result = subprocess.run(
        [sys.executable, "-m", "poam_ros", "mission", "--params", str(small_parameter_file()),
         "--map", str(tmp_path / "voids.npy"), "--max-samples", "500",
         "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (f"WARNING poam_ros.sim.terrain_io: {tmp_path / 'voids.npy'}: filled 12 of 3600 "
            f"cell(s)") in result.stderr


def test_a_survey_area_off_the_georeferenced_raster_is_one_line(tmp_path, capsys):
    default = Path(__file__).resolve().parents[3] / "config" / "topobathy.yaml"
    text = default.read_text()
    assert "survey_box: [-125.84, -125.52, 48.02, 48.22]" in text
    params = tmp_path / "far.yaml"
    params.write_text(text.replace("survey_box: [-125.84, -125.52, 48.02, 48.22]",
                                   "survey_box: [-10.0, -9.0, 10.0, 11.0]"))
    assert mission(["--params", str(params), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "lies partly outside the raster" in err
    assert not (tmp_path / "out").exists()


def exit_status(command, argv) -> int:
    """``command(argv)``'s status, argparse's where it exits."""
    try:
        return command(argv)
    except SystemExit as error:
        return error.code


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_ends_the_mission_keeping_its_epochs(tmp_path, small_parameter_file,
                                                           signum):
    """Ctrl-C or SIGTERM during the mission: status 130, a line saying so, and the epochs
    printed so far in epochs.jsonl with their summary. SIGINT reaches the command with the
    disposition a background job of a non-interactive shell inherits, ignored, so that
    the command must set its own handler."""
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "poam_ros", "mission", "--params", str(small_parameter_file()),
         "--max-samples", "1000000", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    printed = []
    try:
        while not printed or printed[-1][:5].strip() != "0":  # until epoch 0's line
            printed.append(process.stdout.readline())
            assert printed[-1], (printed, process.stderr.read())
        process.send_signal(signum)
        rest, err = process.communicate(timeout=60)  # a hang guard, not a speed test
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    shown = [line.split() for line in printed + rest.splitlines() if line[:5].strip().isdigit()]
    assert len(epochs) >= len(shown) >= 1
    assert [[e["epoch"], e["num_samples"]] for e in epochs[:len(shown)]] == \
        [[int(line[0]), int(line[1])] for line in shown]
    summary = json.loads((out / "mission.json").read_text())
    assert summary["outcome"] == "interrupted" and summary["epochs"] == len(epochs)
    assert err.strip().splitlines() == [f"poam-ros mission: interrupted after {len(epochs)} "
                                        f"epoch(s); kept in {out}: epochs.jsonl, mission.json"]


@pytest.mark.parametrize("params, map_file, expected", [
    (None, None, "topobathy.yaml"),       # the embedded default survey at true scale
    (None, "tile.hgt", "poam_ros.yaml"),  # a map of the user's: the paper's placement
    ("mine.yaml", "tile.hgt", "mine.yaml"),
])
def test_the_parameter_file_a_command_reads(tmp_path, params, map_file, expected):
    import argparse
    import shutil

    from poam_ros.cli.mission import setup_from_args
    from poam_ros.setup.mission_setup import default_parameter_file

    if params:
        params = shutil.copy(default_parameter_file(), tmp_path / params)
    args = argparse.Namespace(params=params and Path(params), map=map_file, seed=None,
                              max_samples=None, method=None, device=None)
    setup, path = setup_from_args(args)
    assert path.name == expected
    assert (setup.terrain.placement == "georeferenced") == (expected == "topobathy.yaml")
