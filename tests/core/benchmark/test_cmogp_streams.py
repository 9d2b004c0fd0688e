"""The continual multi-task GP paper's single-channel experiments at their smallest settings,
on small files of the data sets' formats: each command runs and reports its numbers beside
the paper's and its checks (whether they pass is the benchmark's business)."""

import json

import numpy as np
import pytest
import scipy.io

from poam_ros.benchmark import cmogp_paper, cmogp_streams


@pytest.fixture
def data_dir(tmp_path):
    """banana/banana.mat (labels ±1) and solar/nasa.mat (year, month, count, its sd)."""
    rng = np.random.default_rng(0)
    (tmp_path / "banana").mkdir()
    x = rng.uniform(-2.5, 2.5, size=(200, 2))
    scipy.io.savemat(tmp_path / "banana" / "banana.mat",
                     {"banana_X": x, "banana_Y": np.where(x[:, :1] * x[:, 1:] > 0, 1.0, -1.0)})
    (tmp_path / "solar").mkdir()
    months = np.arange(130)
    count = 60 + 50 * np.sin(2 * np.pi * months / 132) + rng.uniform(0, 5, 130)
    scipy.io.savemat(tmp_path / "solar" / "nasa.mat", {"nasa": np.column_stack(
        [1749 + months // 12, months % 12 + 1, count, np.sqrt(count)])})
    return tmp_path


def run(capsys, argv) -> tuple[int, dict]:
    code = cmogp_paper.main(argv)
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("order", ["streaming", "overlapping", "incremental"])
def test_the_single_channel_toys_report_tables_1_to_3(capsys, order):
    code, result = run(capsys, [order, "--batches", "3", "--steps", "1"])
    assert code == (0 if all(result["checks"].values()) else 1)
    assert [row["M"] for row in result["rows"]] <= cmogp_streams.inducing_schedule(order, 3)
    assert result["rows"][-1]["total"] >= result["rows"][-1]["new"] > 0
    assert result["paper_new"] == cmogp_streams.SINGLE_TABLES[order][0]


def test_the_batches_follow_each_order():
    streaming, _ = cmogp_streams.single_data("streaming", 0, 4)
    assert all(a[0].max() <= b[0].min() for a, b in zip(streaming, streaming[1:]))
    overlapping, _ = cmogp_streams.single_data("overlapping", 0, 4)
    assert all(b[0].min() < a[0].max() for a, b in zip(overlapping, overlapping[1:]))
    total = sum(len(b[0]) for b in overlapping)
    assert total == sum(len(b[0]) for b in streaming)
    incremental, _ = cmogp_streams.single_data("incremental", 0, 4)
    assert all(b[0].max() - b[0].min() > 1.5 for b in incremental)
    assert cmogp_streams.inducing_schedule("overlapping", 10)[-1] == 22


def test_banana_reports_table_4_and_the_likelihood_used(data_dir, capsys):
    code, result = run(capsys, ["banana", "--data-dir", str(data_dir), "--steps", "1"])
    assert code == (0 if all(result["checks"].values()) else 1)
    assert result["likelihood"] in ("bernoulli", "gaussian stand-in")
    assert [row["t"] for row in result["rows"]] == [1, 2, 3, 4]
    assert all(0.0 <= row["error_new"] <= 1.0 for row in result["rows"])


def test_solar_reports_the_error_over_one_sample_updates(data_dir, capsys):
    code, result = run(capsys, ["solar", "--data-dir", str(data_dir), "--updates", "4",
                                "--every", "2"])
    assert code == (0 if all(result["checks"].values()) else 1)
    assert [row["updates"] for row in result["trace"]] == [0, 2, 4]
    assert all(row["rmse_warmup"] > 0 for row in result["trace"])


def test_banana_holds_the_given_number_of_inducing_inputs(data_dir, capsys):
    """``--num-inducing`` replaces the schedule 9, 16, 25, 36 for all four batches."""
    _, result = run(capsys, ["banana", "--data-dir", str(data_dir), "--steps", "1",
                             "--num-inducing", "12"])
    assert [row["M"] for row in result["rows"]] == [12] * 4
    _, result = run(capsys, ["banana", "--data-dir", str(data_dir), "--steps", "1"])
    assert [row["M"] for row in result["rows"]] == [9, 16, 25, 36]
