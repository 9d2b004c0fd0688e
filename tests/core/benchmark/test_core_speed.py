"""The core speed benchmark: its table and JSON, and a failing update reported, not fatal."""

import json
import math

from poam_ros.benchmark import core_speed
from poam_ros.models import MappingConfig, make_model
from poam_ros.models.linalg import NumericalError


def test_measures_every_size_and_prediction(tmp_path):
    code = core_speed.main(["--out", str(tmp_path), "--sizes", "200,400", "--repeats", "2",
                            "--num-inducing", "30", "--threads", "1", "--batch-sizes", "300,900"])
    assert code == 0
    table = (tmp_path / "core_speed.md").read_text()
    assert "| 200 |" in table and "| 400 |" in table
    assert "Failed updates (NumericalError): 0" in table
    assert (tmp_path / "core_speed.png").stat().st_size > 0
    result = json.loads((tmp_path / "core_speed.json").read_text())
    assert [row["batch"] for row in result["batches"]] == [300, 900]
    for row in result["batches"]:  # measured in a fresh process each
        assert row["num_inducing"] == 30 and row["peak_growth_bytes"] >= 0
        assert 0 < row["rmse"] < 20 and math.isfinite(row["nll"])
    assert "| 900 |" in table and result["accuracy"]["rmse"] > 0


def test_a_batch_the_method_refuses_is_a_row_that_says_so():
    config = MappingConfig(method="ssgp++", num_inducing=20, train_steps=1, max_whole_batch=100)
    row = core_speed.first_update(config, 150, threads=1)
    assert "at most 100 new samples" in row["failure"]


def test_a_failing_update_is_counted_and_the_run_goes_on(monkeypatch):
    def flaky_model(config):
        model = make_model(config)
        update, calls = model.update, []

        def failing_every_third():
            calls.append(1)
            if len(calls) % 3 == 0:
                raise NumericalError("I + A: Cholesky failed (injected)")
            return update()
        model.update = failing_every_third
        return model

    monkeypatch.setattr(core_speed, "make_model", flaky_model)
    lines = []
    result = core_speed.measure(MappingConfig(num_inducing=20, train_steps=1), sizes=(100, 200),
                                batch=20, repeats=3, fill_chunk=100, log=lines.append)
    assert result["failed_updates"] >= 2
    assert sum("update failed" in line for line in lines) == result["failed_updates"]
    assert all(not math.isnan(row["update"]) for row in result["updates"])


def test_variants_are_timed_side_by_side_on_the_same_samples(tmp_path):
    """Eager and padded updates interleaved: the same data, so the same M and map."""
    code = core_speed.main(["--out", str(tmp_path), "--sizes", "200", "--repeats", "2",
                            "--num-inducing", "40", "--threads", "1", "--no-batches",
                            "--variants", "padded", "--variants-size", "300"])
    assert code == 0
    rows = json.loads((tmp_path / "core_speed.json").read_text())["variants"]["rows"]
    assert list(rows) == ["eager", "padded"] and rows["eager"]["over_eager"] == 1.0
    assert rows["eager"]["num_inducing"] == rows["padded"]["num_inducing"] == 40
    assert abs(rows["eager"]["rmse"] - rows["padded"]["rmse"]) < 1e-9
    assert "| padded | 40 |" in (tmp_path / "core_speed.md").read_text()
