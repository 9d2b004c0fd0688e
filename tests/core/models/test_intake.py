"""The intake (:class:`~poam_ros.models.intake.Intake`): samples, counters and scalers.

Its state loaded into a fresh intake is the same intake (buffer, duplicates still recognised,
counters, rejections, scalers, a fixed Z); setting pending samples aside drops the oldest ones
and counts them; a failed first update gets unfitted scalers back (the input scaler without
the extent it was given).
"""

import numpy as np
import torch

from poam_ros.models.intake import Intake
from poam_ros.models.samples import DUPLICATE, UPDATE_FAILED


def filled(rng) -> Intake:
    intake = Intake(2)
    x = rng.uniform(-5, 5, (30, 2))
    intake.add(x, x.sum(1))
    intake.fit_scalers()
    intake.take(20)
    intake.fixed_z = torch.zeros(3, 2, dtype=torch.float64)
    return intake


def test_a_loaded_intake_is_the_saved_one():
    intake = filled(np.random.default_rng(0))
    intake.add(intake.buffer.x[:2], intake.buffer.y[:2])  # duplicates, counted
    loaded = Intake(2)
    loaded.load_state_dict(intake.state_dict(), torch.device("cpu"), torch.float64)
    assert loaded.num_samples == 30 and loaded.num_pending == 10 and loaded.num_fitted == 20
    assert loaded.rejections == intake.rejections and loaded.rejections[DUPLICATE] == 2
    assert np.array_equal(loaded.buffer.x, intake.buffer.x)
    assert np.array_equal(loaded.x_scaler.low, intake.x_scaler.low)
    assert loaded.y_scaler.std == intake.y_scaler.std
    assert loaded.fixed_inducing and torch.equal(loaded.fixed_z, intake.fixed_z)
    assert loaded.add(intake.buffer.x[-1:], intake.buffer.y[-1:]).accepted == 0


def test_set_aside_drops_the_oldest_pending_samples():
    intake = filled(np.random.default_rng(1))
    newest = intake.buffer.x[-6:].copy()
    assert intake.set_aside(4) == 4
    assert intake.num_samples == 26 and intake.num_pending == 6
    assert np.array_equal(intake.buffer.x[20:], newest)
    assert intake.rejections[UPDATE_FAILED] == 4
    assert intake.add(newest[:1], newest[:1].sum(1)).accepted == 0  # still held


def test_fit_scalers_returns_unfitted_ones_without_the_extent():
    intake = Intake(2)
    intake.add(np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([1.0, 3.0]))
    intake.x_scaler.extent = (np.array([-10.0, -10.0]), np.array([10.0, 10.0]))
    x_unfitted, y_unfitted = intake.fit_scalers()
    assert intake.x_scaler.fitted and intake.x_scaler.high.tolist() == [10.0, 10.0]
    assert not x_unfitted.fitted and x_unfitted.extent is None and not y_unfitted.fitted
