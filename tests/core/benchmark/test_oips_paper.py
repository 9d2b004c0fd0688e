"""The OIPS paper's benchmark: Eq. 5 in closed form, the adaptive grid, and each experiment's
smallest setting runs and reports its numbers."""

import json

import numpy as np
import pytest

from poam_ros.benchmark import oips_paper


def test_the_bound_starts_at_one_point_and_tends_to_the_cube_over_alpha():
    alpha = (0.3 * np.sqrt(-3 * np.log(0.7)) / 2) ** 3
    bound = oips_paper.theorem1_bound(np.array([0, 1, 10 ** 7]), 0.3, 0.7, 3)
    assert bound[0] == pytest.approx(1.0)
    assert bound[1] == pytest.approx(2.0 - alpha)
    assert bound[2] == pytest.approx(1.0 / alpha)


def test_the_grid_spans_the_bounds_with_a_power_of_points():
    points = oips_paper.grid(np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, 4.0]), 1000)
    assert points.shape == (1000, 3)
    assert points.min(0).tolist() == [0.0, -1.0, 2.0] and points.max(0).tolist() == [1, 1, 4]


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_theorem1_runs_and_reports_the_empirical_m_beside_the_bound(capsys):
    oips_paper.main(["theorem1", "--max-n", "100", "--runs", "2"])
    result = last_json(capsys.readouterr().out)
    assert result["N"] == [10, 30, 100]
    assert len(result["M_mean"]) == len(result["bound"]) == 3
    assert all(1 <= m <= 100 for m in result["M_mean"])


def test_the_toys_run_and_report_m_and_nll_per_batch(capsys):
    oips_paper.main(["toys", "--datasets", "A", "--steps", "2"])
    result = last_json(capsys.readouterr().out)
    rows = result["results"]["A"]
    selections = ("k-means/opt", "OIPS/opt", "OIPS", "Grid")
    assert set(rows) == {*selections, "exact GP", "OIPS final M by rho"}
    for method in (*selections, "exact GP"):
        assert len(rows[method]) == 4
        assert all(np.isfinite(row["nll"]) and row["M"] >= 1 for row in rows[method])
    assert rows["k-means/opt"][-1]["M"] == rows["Grid"][-1]["M"] == 25
    # the exact GP holds every sample at the same fixed kernel: no selection maps better
    assert [row["M"] for row in rows["exact GP"]] == [50, 100, 150, 200]
    assert rows["exact GP"][-1]["nll"] <= min(rows[m][-1]["nll"] for m in selections) + 1e-3
    assert len(result["checks"]) == 2
