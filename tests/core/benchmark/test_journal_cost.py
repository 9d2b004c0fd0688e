"""The journal benchmark: both loops timed, bytes on disk, and both restarts hold the survey."""

import json
import math

from poam_ros.benchmark import journal_cost


def test_measures_the_cost_and_both_restarts(tmp_path):
    code = journal_cost.main(["--out", str(tmp_path), "--samples", "600", "--tail", "200",
                              "--batch", "50", "--updates", "4", "--autosave-every", "2",
                              "--num-inducing", "20", "--threads", "1"])
    assert code == 0
    result = json.loads((tmp_path / "journal_cost.json").read_text())
    plain, journaled = result["without"], result["with"]
    assert len(plain["updates"]) == len(journaled["updates"]) == 4
    assert plain["num_samples"] == journaled["num_samples"] == 200
    assert journaled["journal_bytes_per_sample"] == 24 + 24 / 50  # a record's header per batch
    assert journaled["autosave_samples"] == 200 and journaled["autosave_bytes"] > 24 * 200
    assert journaled["append_fsync_median"] > 0
    restarts = result["restart"]
    assert (restarts["autosave + tail"]["from_autosave"],
            restarts["autosave + tail"]["from_journal"]) == (400, 200)
    assert (restarts["journal only"]["from_autosave"],
            restarts["journal only"]["from_journal"]) == (0, 600)
    for row in restarts.values():
        assert row["num_samples"] == 600 and row["failure"] is None
        assert math.isclose(row["total"], row["read"] + row["load"] + row["replay"] + row["map"])
    assert "| autosave + tail | 400 | 200 |" in (tmp_path / "journal_cost.md").read_text()
