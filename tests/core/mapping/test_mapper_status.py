"""The mapper's status bookkeeping, without ROS: counts, health, latency parts, baselines."""

import math
import statistics
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from poam_ros.mapping.mapper_status import (
    ERROR,
    LATENCY_WINDOW,
    OK,
    WARN,
    MapperTally,
    target_baselines,
)
from poam_ros.mapping.metrics import TargetBaseline
from poam_ros.models import UpdateReport


def _model(y, inducing=3, rejections=None):
    """What the tally reads of a model: its size, targets, device, method and rejections."""
    y = np.asarray(y, dtype=float)
    return SimpleNamespace(num_samples=len(y), inducing=np.zeros((inducing, 2)), ready=True,
                           buffer=SimpleNamespace(y=y), device="cpu", method="poam",
                           rejections=Counter(rejections or {}))


def test_a_new_tally_waits_for_samples():
    tally = MapperTally(device="cpu", method="poam")
    assert tally.health(serving=False, paused=False) == (OK, "waiting for samples")
    assert tally.health(serving=True, paused=False) == (OK, "mapping")
    assert tally.health(serving=True, paused=True) == (OK, "paused")
    record = tally.record(paused=False, buffered=[], journal="off")
    assert (record.updates, record.samples, record.failures, record.method) == (0, 0, 0, "poam")
    assert record.update_time is None and record.target_mean is None and record.channels is None
    assert math.isnan(record.latency) and math.isnan(record.median_latency)


def test_an_update_and_its_latency_in_parts():
    tally = MapperTally(device="cpu", method="poam")
    report = UpdateReport(num_new=4, total_time=0.5, loss=1.25)
    tally.updated(_model([1.0, 3.0, 3.0, 5.0]), report, map_time=0.25)
    # arrived at 10 s, taken at 10.5 s, published at 12 s: 0.5 s queued, 0.5 s updating,
    # 0.25 s predicting the map, the rest (0.75 s) the node's
    tally.timed(arrival=10.0, taken=10.5, published=12.0, update_time=report.total_time)
    record = tally.record(paused=False, buffered=[2, 5], journal="/tmp/j")
    assert (record.updates, record.samples, record.inducing_points) == (1, 4, 3)
    assert (record.latency, record.queue_wait, record.node_overhead) == (2.0, 0.5, 0.75)
    assert (record.map_predict_time, record.update_time, record.loss) == (0.25, 0.5, 1.25)
    assert (record.buffered_batches, record.buffered_samples, record.journal) == (2, 7, "/tmp/j")
    assert (record.target_mean, record.target_std) == pytest.approx((3.0, math.sqrt(2.0)))


def test_the_median_latency_is_over_the_last_window():
    tally = MapperTally()
    latencies = [float(k) for k in range(LATENCY_WINDOW + 5)]
    for latency in latencies:
        tally.timed(arrival=0.0, taken=0.0, published=latency, update_time=0.0)
    record = tally.record(paused=False, buffered=[], journal="off")
    assert record.median_latency == statistics.median(latencies[-LATENCY_WINDOW:])


def test_a_failure_is_an_error_until_the_next_update():
    tally = MapperTally()
    tally.rejections["wrong_frame"] += 2
    tally.fail("update failed: Cholesky", _model([1.0], rejections={"update_failed": 80}))
    assert tally.health(serving=True, paused=False) == (ERROR, "update failed: Cholesky")
    record = tally.record(paused=False, buffered=[], journal="off")
    assert record.failures == 1 and record.last_failure == "update failed: Cholesky"
    assert record.rejected == {"update_failed": 80, "wrong_frame": 2}
    tally.updated(_model([1.0, 2.0]), UpdateReport(num_new=1, training_failure="NaN loss"))
    assert tally.health(serving=True, paused=False) == (
        WARN, "hyper-parameter training failed: NaN loss")


def test_a_skipped_update_counts_no_update():
    tally = MapperTally()
    tally.updated(_model([1.0, 2.0]), UpdateReport(num_new=0))
    assert tally.updates == 0 and tally.num_samples == 2


def test_a_reset_keeps_only_the_queries_answered():
    tally = MapperTally(device="cpu", method="poam")
    tally.queries = 3
    tally.updated(_model([1.0, 2.0]), UpdateReport(num_new=2))
    tally.autosaved(0.125)
    tally.map_stamp = 7
    tally.reset("cuda:0", "vips")
    record = tally.record(paused=False, buffered=[], journal="off")
    assert (record.queries_answered, record.updates, record.samples, record.autosaves) == (
        3, 0, 0, 0)
    assert (record.device, record.method, record.map_stamp) == ("cuda:0", "vips", 0)
    assert tally.report is None and record.target_mean is None


def test_channel_baselines_skip_an_unmeasured_channel():
    y = np.array([[1.0, 10.0, np.nan], [3.0, np.nan, np.nan], [5.0, 14.0, np.nan]])
    tally = MapperTally(channels=("temperature", "salinity"))
    tally.updated(_model(y), UpdateReport(num_new=3))
    record = tally.record(paused=False, buffered=[], journal="off")
    assert record.channels == ("depth", "temperature", "salinity")
    assert record.target_mean == pytest.approx(3.0)
    assert record.channel_target_means == {"temperature": pytest.approx(12.0)}
    assert set(record.channel_target_stds) == {"temperature"}


def test_target_baselines_of_one_or_several_channels():
    assert target_baselines(np.array([1.0, 3.0])) == TargetBaseline.of(np.array([1.0, 3.0]))
    baselines = target_baselines(np.array([[1.0, np.nan], [3.0, np.nan]]))
    assert baselines[0] == TargetBaseline.of(np.array([1.0, 3.0])) and baselines[1] is None
