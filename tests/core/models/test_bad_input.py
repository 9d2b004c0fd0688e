"""Every kind of bad input has its documented outcome, and the model never returns NaN."""

import numpy as np
import pytest
import torch

from poam_ros.models import ModelNotReadyError, NumericalError
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.poam import POAM
from poam_ros.models.samples import InvalidBatchError


@pytest.fixture
def model(stream, small_config):
    m = POAM(small_config)
    m.add_data(*stream(1, 100)[0])
    m.update()
    return m


def test_nonfinite_samples_are_dropped_and_counted(model):
    x = np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, np.inf], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([1.0, 1.0, 1.0, np.nan, -np.inf])
    report = model.add_data(x, y)
    assert report.accepted == 1
    assert report.rejected == {"nonfinite_input": 2, "nonfinite_target": 2}
    assert model.rejections["nonfinite_input"] == 2
    assert np.isfinite(model.buffer.x).all() and np.isfinite(model.buffer.y).all()


@pytest.mark.parametrize("x, y, message", [
    (np.zeros((4, 3)), np.zeros(4), r"shape \(N, 2\)"),
    (np.zeros(4), np.zeros(4), r"shape \(N, 2\)"),
    (np.zeros((4, 2)), np.zeros(3), r"targets must have shape \(4,\)"),
    (np.zeros((4, 2)), np.zeros((4, 2)), "targets must have shape"),
    ([["a", "b"]], [1.0], "not numeric"),
])
def test_malformed_batches_raise_and_are_counted(model, x, y, message):
    before = model.num_samples
    with pytest.raises(InvalidBatchError, match=message):
        model.add_data(x, y)
    assert model.rejections["malformed_batch"] == 1
    assert model.num_samples == before


def test_empty_batch_changes_nothing(model):
    report = model.add_data(np.empty((0, 2)), np.empty(0))
    assert report.accepted == 0 and not report.rejected
    assert model.update().skipped


def test_duplicates_are_dropped_but_repeated_measurements_kept(model):
    x = np.array([[5.0, 5.0], [5.0, 5.0], [5.0, 5.0]])
    y = np.array([1.0, 1.0, 1.5])
    report = model.add_data(x, y)
    assert report.accepted == 2 and report.rejected == {"duplicate": 1}
    assert model.add_data(x[:1], y[:1]).rejected == {"duplicate": 1}  # seen in an earlier batch
    model.update()
    assert np.isfinite(model.predict(x)[0]).all()


def test_duplicate_inducing_candidates_do_not_break_the_update(model):
    x = np.repeat(np.array([[1.0, 2.0]]), 50, axis=0)
    model.add_data(x, np.linspace(0, 1, 50))
    report = model.update()
    assert report.num_inducing <= model.config.num_inducing


def test_prediction_before_update_is_refused(small_config):
    with pytest.raises(ModelNotReadyError):
        POAM(small_config).predict(np.zeros((1, 2)))


def test_bad_queries_are_refused(model):
    with pytest.raises(InvalidBatchError, match="NaN or inf"):
        model.predict(np.array([[np.nan, 0.0]]))
    with pytest.raises(InvalidBatchError, match="shape"):
        model.predict(np.zeros((3, 3)))


def test_predictions_finite_and_positive_far_from_data(model):
    far = np.array([[1e4, -1e4], [0.0, 0.0]])
    mean, std = model.predict(far)
    assert np.isfinite(mean).all() and (std > 0).all()


def test_cholesky_escalates_jitter_then_reports():
    singular = torch.ones(4, 4, dtype=torch.float64)  # rank one, PSD
    factor = robust_cholesky(singular, jitter=1e-12, max_tries=8, what="test")
    assert torch.isfinite(factor).all()
    with pytest.raises(NumericalError, match="test: Cholesky failed with relative jitter up to"):
        robust_cholesky(-torch.eye(3, dtype=torch.float64), jitter=1e-6, max_tries=3, what="test")
    with pytest.raises(NumericalError, match="non-finite"):
        robust_cholesky(torch.full((2, 2), float("nan"), dtype=torch.float64), 1e-6, 3, "test")


def test_failed_update_keeps_the_previous_model(model, stream):
    query = np.array([[1.0, 1.0]])
    before = model.predict(query)
    inducing = model.inducing
    with torch.no_grad():
        model.likelihood.raw_noise.fill_(float("nan"))
    model.add_data(*stream(1, 30)[0])
    with pytest.raises(NumericalError):
        model.update()
    assert model.inducing is inducing and model.num_pending == 30
    with torch.no_grad():
        model.likelihood.raw_noise.fill_(0.0)
    model.prediction.refresh()
    assert np.isfinite(model.predict(query)[0]).all()
    model.update()  # the pending batch is used once the model is healthy again
    assert model.num_pending == 0
    assert not np.array_equal(before[0], model.predict(query)[0])


def test_failed_first_update_leaves_an_empty_model(stream, small_config):
    model = POAM(small_config)
    model.add_data(*stream(1, 50)[0])
    with torch.no_grad():
        model.likelihood.raw_noise.fill_(float("nan"))
    with pytest.raises(NumericalError):
        model.update()
    assert not model.ready and model.posterior is None and model.num_pending == 50
    with torch.no_grad():
        model.likelihood.raw_noise.fill_(0.0)
    model.update()
    assert model.ready and model.num_pending == 0
