"""`poam-ros bench fleet-link`: a saturated link carries what its budget holds, no more."""

from poam_ros.benchmark.fleet_link import carry, main
from poam_ros.fleet import LinkConfig


def test_a_saturated_link_carries_its_budget():
    got = carry(LinkConfig(bandwidth=100.0), rate=100.0, seconds=20.0, period=0.1)
    assert got.peak_window_bytes <= 100
    # 13 soundings in each 97-byte packet, one a second (at 0, 1, ..., 20 s; the first may
    # hold fewer: only what was measured by then)
    assert 13.0 <= got.soundings_per_s <= 13 * 21 / 20
    assert abs(got.bytes_per_sounding - 97 / 13) < 0.05
    assert carry(LinkConfig(), rate=50.0, seconds=20.0, period=0.1).waiting == 0


def test_the_command_prints_a_row_per_budget(capsys):
    assert main(["--bandwidths", "0", "100", "--seconds", "5", "--rate", "20"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2].split()[0] == "unlimited" and rows[3].split()[0] == "100.0"
