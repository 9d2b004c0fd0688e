"""Each VIPS-paper experiment at its smallest setting runs and reports its numbers (whether
they pass is the benchmark's business), and App. D.3's normalisation in closed form."""

import json

import numpy as np
import pytest

from poam_ros.benchmark import streaming, vips_paper, vips_synthetic
from poam_ros.models import training


@pytest.fixture(autouse=True)
def short_lbfgs(monkeypatch):
    """The smallest setting: at most 5 L-BFGS iterations per M-step (the code path of the
    benchmark, bounded in time)."""
    monkeypatch.setattr(training, "LBFGS_MAX_ITERATIONS", 5)


def test_relative_percent_is_app_d3s_normalisation():
    assert streaming.relative_percent(1.1, 1.0, 3.0) == pytest.approx(5.0)
    assert streaming.relative_percent(0.9, 1.0, 0.0) == pytest.approx(-10.0)


def test_the_noise_model_predicts_the_training_mean_and_spread():
    y_train, y_test = np.array([0.0, 2.0]), np.array([1.0, 3.0])
    scores = streaming.noise_scores(y_train, y_test)
    assert scores["rmse"] == pytest.approx(np.sqrt(2.0))
    assert scores["nlpd"] == pytest.approx(0.5 * np.log(2 * np.pi) + 0.5 * (0 + 4) / 2)


def test_app_d_field_and_model():
    assert vips_synthetic.field(np.array([0.0]))[0] == pytest.approx(1.0)
    config = vips_synthetic.app_d_config(method="vips")
    assert (config.rbf_initial_lengthscale, config.initial_amplitude,
            config.initial_noise_variance, config.vips.delta, config.m_step) == \
        (0.5, 1.0, 0.5, 0.05, "lbfgs")


def test_fig2a_reports_m_and_rmse_per_batch():
    result = vips_synthetic.fig2a(seeds=1, size=24)
    (run,) = result["runs"]
    assert len(run["vips_M"]) == len(run["exact_rmse"]) == len(run["fixed M=10_rmse"]) == 4
    assert result["paper_M"] == [8, 15, 22, 29] and len(result["checks"]) == 3


def test_sec51_reports_m_per_batch_on_three_streams():
    result = vips_synthetic.sec51(scale=0.02)
    assert all(len(result[name]) == 10 for name in ("sorted", "shuffled", "outliers"))
    assert len(result["checks"]) == 3


def test_delta_reports_both_m_steps():
    result = vips_synthetic.delta(deltas=(0.05,), size=24)
    assert [row["m_step"] for row in result["rows"]] == ["lbfgs", "adam"]
    assert all(len(row["M"]) == 4 for row in result["rows"])


def test_concrete_reports_app_d3s_percentages(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 8))
    np.savez(tmp_path / "tiny.npz", X=x, y=x[:, 0] + 0.1 * rng.normal(size=60))
    result = vips_paper.concrete(1, tmp_path / "tiny.npz", batches=2)
    assert set(result["summary"]) == {"vips", "cv", "oips"}
    assert all(np.isfinite(values["rmse_percent_mean"]) and np.isfinite(
        values["nlpd_percent_mean"]) for values in result["summary"].values())
    assert len(result["checks"]) == 6


@pytest.mark.skipif(not vips_paper.MAGNETOMETER_FILE.exists(),
                    reason=f"no shared data at {vips_paper.MAGNETOMETER_FILE}")
def test_the_magnetometer_runs_report_m_rmse_and_nlpd(monkeypatch, capsys):
    batches, x_test, y_test, scalers = vips_paper.magnetometer_data((3,), (1,), 20, "metres")
    batches = [(x[:40], y[:40]) for x, y in batches[:2]]
    finals = vips_paper.magnetometer_run(batches, x_test[:50], y_test[:50], scalers,
                                         {"vips": 2, "oips": 2, "cv": 1})
    assert [len(finals[name]["M"]) for name in ("vips", "oips", "cv")] == [2, 2, 1]
    assert all(np.isfinite(final["rmse"]) and np.isfinite(final["nlpd"])
               for final in finals.values())
    paths, x_test, y_test, scalers = vips_paper.magnetometer_data((1, 2, 4, 5), (3,), None,
                                                                  "metres")
    assert len(paths) == 4 and all(len(x) > 7000 for x, _ in paths)
    tiny = [(x[:30], y[:30]) for x, y in paths], x_test[:50], y_test[:50], scalers
    monkeypatch.setattr(vips_paper, "magnetometer_data", lambda *_: tiny)
    vips_paper.main(["magnetometer-paths", "--methods", "vips,cv", "--cv-paths", "1"])
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    finals = result["final"]
    assert [len(finals[name]["M"]) for name in ("vips", "cv")] == [4, 1]
    assert np.isfinite(finals["cv"]["rmse"]) and np.isfinite(finals["cv"]["nlpd"])
    assert set(result["checks"]) == {"VIPS M grows with every path",
                                     "CV's M above VIPS's at every path it ran"}
