"""Averaging a mission's epoch records: over decision epochs and over a window of sample counts."""

import numpy as np
import pytest

from poam_ros.mapping.epochs import AVERAGED_METRICS, EpochRecord, epoch_averages, sample_averages


def record(num_samples: int, smse: float, **values) -> EpochRecord:
    fields = dict.fromkeys(AVERAGED_METRICS, 0.0) | {"smse": smse} | values
    return EpochRecord(epoch=0, num_samples=num_samples, inducing_time=0.0,
                       variational_time=0.0, training_time=0.0, num_inducing=10,
                       sim_time=0.0, **fields)


def test_the_window_weighs_each_epoch_by_the_samples_it_spans():
    # SMSE 1 at 500 samples, 0.5 at 1,000, 0.1 at 1,100 and on to 5,000 (a long last leg).
    records = [record(500, 1.0), record(1000, 0.5), record(1100, 0.1), record(5000, 0.1)]
    window = sample_averages(records, 1000, 5000)
    # The first leg (1,000..1,100) falls linearly from 0.5 to 0.1; the rest is 0.1.
    counts = np.arange(1000, 5001)
    expected = np.where(counts <= 1100, 0.5 - 0.4 * (counts - 1000) / 100, 0.1).mean()
    assert window["smse"] == pytest.approx(expected, rel=1e-12)
    assert window["smse"] < 0.11 < epoch_averages(records)["smse"] == pytest.approx(0.425)


def test_a_window_the_records_do_not_span_has_no_average():
    records = [record(1200, 0.3), record(5000, 0.1)]
    assert sample_averages(records, 1000, 5000) is None  # starts after the window does
    assert sample_averages(records[:1], 1000, 1100) is None
    assert sample_averages([], 1000, 5000) is None
    assert sample_averages(records, 1200, 5000)["smse"] == pytest.approx(0.2)


def test_epochs_that_add_no_samples_count_once_with_their_last_map():
    # A failed update repeats the count with the previous map; the later record stands.
    records = [record(1000, 0.4), record(2000, 0.9), record(2000, 0.2), record(3000, 0.2)]
    assert sample_averages(records, 1000, 3000)["smse"] == pytest.approx(0.25, rel=1e-3)
