"""``poam-ros bench seabed-class`` at its smallest: it runs and reports both methods' scores
(not that they pass)."""

import json

from poam_ros.benchmark import seabed_class


def test_reports_both_methods_on_the_same_readings(small_parameter_file, capsys):
    params = small_parameter_file()
    code = seabed_class.main(["--params", str(params), "--seeds", "0", "--max-samples", "600",
                              "--num-inducing", "10", "--train-steps", "1",
                              "--eval-grid", "6"])
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    per_seed = [row for row in rows if "seed" in row]
    assert [row["method"] for row in per_seed] == list(seabed_class.METHODS)
    assert per_seed[0]["labels"] == per_seed[1]["labels"] > 0
    for row in per_seed:
        assert 0.0 <= row["accuracy"] <= 1.0 and row["nlpd"] > 0.0
    assert per_seed[0]["nlpd_readings"] > 0.0
    assert [row["seeds"] for row in rows[-2:]] == [1, 1]
