"""``poam-ros bench seabed-class`` at its smallest: it runs and reports both methods' scores
(not that they pass)."""

import json

import pytest

from poam_ros.benchmark import seabed_class


def test_reports_each_method_and_the_class_alone_on_the_first_s_readings(small_parameter_file,
                                                                          capsys):
    params = small_parameter_file()
    code = seabed_class.main(["--params", str(params), "--seeds", "0", "--max-samples", "600",
                              "--methods", "poam-mt,dual-gp-independent",
                              "--num-inducing", "10", "--train-steps", "1",
                              "--eval-grid", "6"])
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    per_seed = [row for row in rows if "seed" in row]
    assert [row["method"] for row in per_seed] == ["poam-mt", "dual-gp-independent",
                                                   seabed_class.ALONE]
    assert per_seed[0]["labels"] == per_seed[2]["labels"] > 0 and per_seed[1]["labels"] > 0
    for row in per_seed:
        assert 0.0 <= row["accuracy"] <= 1.0 and row["nlpd"] > 0.0
    assert per_seed[0]["nlpd_readings"] > 0.0 and per_seed[1]["nlpd_readings"] > 0.0
    assert [row["seeds"] for row in rows[-3:]] == [1, 1, 1]


def test_a_method_that_does_not_map_the_class_beside_the_depth_is_refused(capsys):
    with pytest.raises(SystemExit) as exit:
        seabed_class.main(["--methods", "poam"])
    assert exit.value.code == 2
    assert "--methods: poam not among" in capsys.readouterr().err
