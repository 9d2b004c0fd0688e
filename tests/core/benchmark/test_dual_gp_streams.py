"""The dual GP paper's classification streams at their smallest settings, on small files of
the data sets' formats: each command runs and reports its numbers beside the paper's and its
checks (whether they pass is the benchmark's business, docs/benchmarks.md)."""

import json

import numpy as np
import pytest

from poam_ros.benchmark import dual_gp_paper, dual_gp_streams


@pytest.fixture
def data_dir(tmp_path):
    """uci/mammographic.csv (standardised inputs, a 0/1 label last) and the banana's four
    files, each small, labels from a smooth boundary."""
    rng = np.random.default_rng(0)
    (tmp_path / "uci").mkdir()
    x = rng.normal(size=(60, 3))
    label = (x[:, 0] + x[:, 1] > 0).astype(float)
    np.savetxt(tmp_path / "uci" / "mammographic.csv", np.column_stack([x, label]),
               delimiter=",")
    (tmp_path / "banana").mkdir()
    for part, n in (("train", 40), ("test", 30)):
        x = rng.uniform(-2.5, 2.5, size=(n, 2))
        np.savetxt(tmp_path / "banana" / f"banana_{part}_x.txt", x, delimiter=",")
        np.savetxt(tmp_path / "banana" / f"banana_{part}_y.txt",
                   np.where(x[:, 0] * x[:, 1] > 0, 1.0, -1.0), delimiter=",")
    return tmp_path


def run(capsys, argv) -> tuple[int, dict]:
    code = dual_gp_paper.main(argv)
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("offline", [False, True])
def test_uci_reports_nlpd_and_accuracy_beside_tables_1_and_6(data_dir, capsys, offline):
    code, result = run(capsys, ["uci", "--data-dir", str(data_dir), "--folds", "3", "--runs",
                                "1", "--batches", "3", "--train-steps", "1",
                                "--offline-steps", "2"] + (["--offline"] if offline else []))
    assert code == (0 if all(result["checks"].values()) else 1)
    assert result["batches"] == (1 if offline else 3) and len(result["folds"]) == 1
    fold = result["folds"][0]
    assert 0.0 <= fold["accuracy"] <= 1.0 and fold["nlpd"] > 0.0
    assert result["paper"]["nlpd"] == [0.41, 0.05] and len(result["checks"]) == 2


def test_uci_runs_another_kernel_and_size_when_asked(data_dir, capsys):
    _, result = run(capsys, ["--kernel", "rbf", "--ard", "uci", "--data-dir", str(data_dir),
                             "--folds", "3", "--runs", "1", "--offline", "--offline-steps", "2",
                             "--inducing", "7"])
    assert result["kernel"] == {"name": "rbf", "ard": True} and result["inducing"] == 7
    assert result["folds"][0]["nlpd"] > 0.0


@pytest.mark.parametrize("argv, message", [
    (["--ard", "uci"], "--ard needs --kernel rbf"),
    (["--kernel", "rbf", "banana"], "banana runs the paper's Matérn-5/2 only"),
    (["--kernel", "rbf", "--ard", "magnetometer"], "--ard is for the paper's streams")])
def test_a_kernel_the_experiment_cannot_run_is_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        dual_gp_paper.main(argv)
    assert message in capsys.readouterr().err


def test_memory_compares_leverage_with_random_on_the_same_folds(data_dir, capsys):
    code, result = run(capsys, ["memory", "--data-dir", str(data_dir), "--folds", "3",
                                "--runs", "2", "--batches", "3", "--train-steps", "1"])
    assert code == (0 if all(result["checks"].values()) else 1)
    assert set(result["ours"]) == {"random", "leverage"}
    assert [f["fold"] for f in result["folds"]["random"]] == [0, 1]
    assert len(result["per_fold_gain"]) == 2 and len(result["checks"]) == 3


def test_banana_streams_four_batches_against_the_offline_model(data_dir, capsys):
    code, result = run(capsys, ["banana", "--data-dir", str(data_dir), "--train-steps", "1",
                                "--offline-steps", "2"])
    assert code == (0 if all(result["checks"].values()) else 1)
    for name in ("fixed (Fig. 8)", "learned (Fig. 9)"):
        assert 0.0 <= result[name]["mean_abs_probability_gap"] <= 1.0
    assert len(result["checks"]) == 4


def test_batches_are_consecutive_along_the_first_input():
    x = np.array([[3.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
    batches = dual_gp_streams.sorted_batches(x, np.arange(4.0), 2)
    assert [b[1].tolist() for b in batches] == [[3.0, 1.0], [2.0, 0.0]]
