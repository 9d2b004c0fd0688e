"""The one sample filter: non-finite and exactly duplicated samples, within a batch and
against every sample stored, found without a loop over samples."""

import numpy as np

from poam_ros.models import samples
from poam_ros.models.buffer import SampleBuffer
from poam_ros.models.samples import DUPLICATE, SeenSamples, filter_samples


def _store(x, y):
    buffer = SampleBuffer(2)
    seen = SeenSamples(buffer)
    seen.add(0, np.column_stack([x, y]))
    buffer.append(x, y)
    return seen


def test_duplicates_within_a_batch_and_against_the_store_are_dropped():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(100, 2)), rng.normal(size=100)
    seen = _store(x[:50], y[:50])
    batch_x = np.vstack([x[40:60], x[55:57]])  # 10 stored, 10 new, 2 repeated in the batch
    batch_y = np.concatenate([y[40:60], y[55:57]])
    kept_x, kept_y, report = filter_samples(batch_x, batch_y, seen)
    np.testing.assert_array_equal(kept_x, x[50:60])
    np.testing.assert_array_equal(kept_y, y[50:60])
    assert report.rejected == {DUPLICATE: 12} and report.accepted == 10


def test_a_repeated_input_with_another_target_is_a_measurement():
    x = np.zeros((3, 2))
    kept_x, _, report = filter_samples(x, np.array([1.0, 2.0, 1.0]), _store(x[:1], [2.0]))
    assert len(kept_x) == 1 and report.rejected == {DUPLICATE: 2}


def test_a_hash_collision_never_drops_a_new_sample(monkeypatch):
    monkeypatch.setattr(samples, "row_hashes", lambda rows: np.zeros(len(rows), np.uint64))
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    seen = _store(x[:10], y[:10])
    _, kept_y, report = filter_samples(x, y, seen)
    np.testing.assert_array_equal(kept_y, y[10:])
    assert report.rejected == {DUPLICATE: 10}


def test_the_stored_index_grows_with_each_batch_in_row_order():
    buffer = SampleBuffer(2)
    seen = SeenSamples(buffer)
    rng = np.random.default_rng(2)
    for _ in range(5):
        x, y, _ = filter_samples(rng.normal(size=(30, 2)), rng.normal(size=30), seen)
        seen.add(len(buffer), np.column_stack([x, y]))
        buffer.append(x, y)
    assert len(seen) == 150
    assert seen.contains(np.column_stack([buffer.x, buffer.y])).all()
    assert not seen.contains(rng.normal(size=(10, 3))).any()
