"""``poam-ros mission`` end to end on a small setup: progress, summary and files."""

import json

from poam_ros.cli.mission import mission


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
    assert dropped["no_return"] == 0 and dropped["outside_workspace"] >= 0
    assert (f"dropped soundings: {dropped['outside_workspace']} outside the workspace, 0 "
            f"without a return") in printed
    assert f"{summary['epoch_averages']['smse']:.4f}" in printed
    assert len([line for line in printed.splitlines() if line[:5].strip().isdigit()]) \
        == len(epochs)


def test_a_bad_setup_is_one_line_and_status_2(tmp_path, capsys):
    assert mission(["--map", str(tmp_path / "missing.npz"), "--out", str(tmp_path)]) == 2
    assert "missing.npz: terrain file not found" in capsys.readouterr().err
