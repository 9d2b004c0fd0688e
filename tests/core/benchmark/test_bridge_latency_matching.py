"""How ``poam-ros bench bridge`` pairs what it sent with what came back, worked by hand."""

import pytest

from poam_ros.benchmark.bridge_latency import plan_latencies, summary, telemetry_latencies


def test_a_plan_is_paired_with_the_first_target_at_its_goal_after_it():
    plans = [(1.0, (10.0, 0.0)), (2.0, (0.0, 10.0)), (3.0, (5.0, 5.0))]
    targets = [(0.9, 10.0, 0.0, -30.0),  # before the plan: a re-sent old target
               (1.02, 10.0, 0.0, -30.0), (1.5, 10.0, 0.0, -30.0),
               (2.03, 0.0, 10.0, -30.0)]  # the third plan's target never came
    assert plan_latencies(plans, targets) == pytest.approx([0.02, 0.03])


def test_telemetry_is_paired_by_its_boot_time_through_the_reported_offset():
    sent = [(0.0, 10.0), (0.1, 10.1), (0.2, 10.2), (0.3, 10.3)]  # boot s, perf s
    offsets = [(9.0, 100.0), (10.25, 100.001)]  # (perf s, offset s): the bridge's reports
    received = [(100.1003, 10.115), (100.0001, 10.012),  # stamps: boot + offset
                (100.301, 10.32),  # after the second report: its offset
                (100.25, 10.4)]  # between two sends: no match
    assert telemetry_latencies(sent, received, offsets, 0.1) == pytest.approx(
        [0.015, 0.012, 0.02])
    assert telemetry_latencies(sent, received, [], 0.1) == []  # no offset yet: no pairs


def test_summary_in_milliseconds():
    row = summary([0.010, 0.020, 0.030])
    assert row["count"] == 3 and row["median_ms"] == pytest.approx(20.0)
    assert summary([])["count"] == 0
