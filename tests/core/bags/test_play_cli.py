"""``poam-ros play`` checks its options and the bag before it starts publishing: one line on
stderr, status 2 (rclpy is not needed to refuse)."""

from __future__ import annotations

import sys

import pytest

from poam_ros.cli.bags import play


@pytest.mark.parametrize("args, message", [
    (["--rate", "0"], "--rate must be > 0, got 0.0"),
    (["--delay", "-1"], "--delay must be >= 0, got -1.0"),
    (["--remap", "/odom=/x"], "--remap takes FROM:=TO, got '/odom=/x'"),
    (["--topics", "/nothing"], "has none of the topics asked for (/nothing); it holds: "
                               "/diagnostics, /odom, /plan, /sonar/range"),
    (["--exclude", "/diagnostics", "/odom", "/plan", "/sonar/range"],
     "nothing to play: of {bag}'s topics (/diagnostics, /odom, /plan, /sonar/range), none is "
     "left"),
])
def test_play_refuses_bad_options_before_it_starts(survey_bag, monkeypatch, capsys, args,
                                                   message):
    _, bag = survey_bag
    monkeypatch.setitem(sys.modules, "rclpy", None)  # playing would need it
    assert play([str(bag), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("poam-ros play: ")
    assert message.format(bag=bag) in err


def test_play_refuses_a_missing_bag(tmp_path, capsys):
    assert play([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == (f"poam-ros play: no bag at {tmp_path / 'missing'}: the "
                                       f"path does not exist\n")
