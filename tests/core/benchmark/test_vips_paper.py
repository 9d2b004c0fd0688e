"""The VIPS paper's benchmark: the magnetometer's starting kernel and the per-batch trace of the
hyper-parameters."""

import math

import numpy as np
import pytest
import torch

from poam_ros.benchmark import streaming, vips_paper
from poam_ros.models import make_model
from poam_ros.scalers import StandardScaler


def matern52(r: float) -> float:
    s = math.sqrt(5.0) * r
    return (1.0 + s + s * s / 3.0) * math.exp(-s)


def test_the_magnetometer_model_starts_from_the_authors_kernel_in_microtesla():
    """Constant 500 µT², Matérn variance 1 µT², lengthscale 1, noise 0.1 µT², whatever the
    targets' spread: the kernel in standardised units times σ_y² gives them back."""
    target_std = 12.0  # µT
    model = make_model(vips_paper.magnetometer_config(target_std).replace(method="vips"), 2)
    x = torch.tensor([[0.0, 0.0], [0.0, 1.0], [80.0, 0.0]], dtype=torch.float64)
    with torch.no_grad():
        k = model.covariance(x, x)[0] * target_std ** 2
    assert k.tolist() == pytest.approx([501.0, 500.0 + matern52(1.0), 500.0], rel=1e-6)
    values = vips_paper.in_microtesla(streaming.hyperparameters(model), target_std)
    assert values == pytest.approx({"constant_variance": 500.0, "matern_variance": 1.0,
                                    "lengthscale": 1.0, "noise_variance": 0.1}, rel=1e-6)


def test_each_batch_row_holds_the_hyperparameters_after_that_update():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 4.0, (60, 2))
    y = 40.0 + 5.0 * np.sin(2.0 * x[:, 0]) + rng.normal(0.0, 0.3, 60)
    batches = [(x[:30], y[:30]), (x[30:], y[30:])]
    x_test = rng.uniform(0.0, 4.0, (20, 2))
    config = vips_paper.magnetometer_config(5.0).replace(method="vips", vips={"delta": 0.095})

    def scalers():
        return streaming.identity_scalers(2)[0], StandardScaler(40.0, 5.0)

    rows = streaming.stream(config, batches, scalers(), x_test, np.zeros(20))
    model = make_model(config, 2)
    model.intake.x_scaler, model.intake.y_scaler = scalers()
    for row, batch in zip(rows, batches):
        model.add_data(*batch)
        model.update()
        expected = streaming.hyperparameters(model)
        assert {k: row[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert rows[0]["lengthscale"] != rows[1]["lengthscale"]  # the M-step ran on each batch
    assert set(expected) == {"amplitude", "noise", "lengthscale", "constant"}


def test_a_held_kernel_replaces_the_start_and_stays_fixed_over_the_stream():
    """``--hold-kernel``: the given µT² and m values are the kernel after every update."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 4.0, (60, 2))
    y = 40.0 + 5.0 * np.sin(2.0 * x[:, 0]) + rng.normal(0.0, 0.3, 60)
    held = {"constant": 300.0, "matern": 20.0, "lengthscale": 0.5, "noise": 0.2}
    config = vips_paper.magnetometer_config(5.0, held).replace(method="oips",
                                                               oips={"rho": 0.93})
    scalers = streaming.identity_scalers(2)[0], StandardScaler(40.0, 5.0)
    rows = streaming.stream(config, [(x[:30], y[:30]), (x[30:], y[30:])], scalers,
                            x[:10], y[:10])
    for row in rows:
        assert vips_paper.in_microtesla(row, 5.0) == pytest.approx(
            {"constant_variance": 300.0, "matern_variance": 20.0, "lengthscale": 0.5,
             "noise_variance": 0.2}, rel=1e-6)  # the softplus round trip's rounding


def test_the_concrete_model_starts_from_the_authors_kernel():
    """Variance 1, lengthscale 1, noise variance 0.1 in standardised units (their code's
    start for the UCI sets), unless another initial noise is asked for."""
    model = make_model(vips_paper.concrete_config().replace(method="vips"), 8)
    assert streaming.hyperparameters(model) == pytest.approx(
        {"amplitude": 1.0, "lengthscale": 1.0, "noise": 0.1}, rel=1e-6)
    ard = make_model(vips_paper.concrete_config(ard=True, noise=1.0).replace(method="vips"), 8)
    values = streaming.hyperparameters(ard)
    assert values["lengthscale"] == pytest.approx([1.0] * 8, rel=1e-4)
    assert values["noise"] == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("protocol", vips_paper.CONCRETE_PROTOCOLS)
def test_concrete_splits_train_in_sorted_batches_and_test_the_rest(protocol):
    first_input = np.random.default_rng(3).permutation(1030).astype(float)
    splits = vips_paper.concrete_splits(first_input, 10, protocol)
    assert len(splits) == 10
    for split, (parts, test) in enumerate(splits):
        assert len(parts) == 20
        train = np.concatenate(parts)
        assert sorted(np.concatenate([train, test]).tolist()) == list(range(1030))
        highs = [first_input[part].max() for part in parts]
        lows = [first_input[part].min() for part in parts]
        assert all(high < low for high, low in zip(highs, lows[1:]))  # batches in cement order
        # folds: batches of 51 rows in fifths of 11, 10, 10, 10, 10 (the last, 61: 13, 12, …)
        folds = 19 * 11 + 13 if split % 5 == 0 else 19 * 10 + 12
        assert len(test) == (folds if protocol == "folds" else 103)


def test_concrete_folds_partition_every_batch_and_repeat_from_a_new_shuffle():
    """The authors' 5-fold: the five test sets of a shuffle are disjoint and cover every row,
    each a fifth of every batch of N // 20 (the last batch takes the remainder)."""
    first_input = np.arange(1030, dtype=float)
    splits = vips_paper.concrete_splits(first_input, 10, "folds")
    for five in (splits[:5], splits[5:]):
        tests = np.concatenate([test for _, test in five])
        assert sorted(tests.tolist()) == list(range(1030))
    batch_sizes = [len(part) for part in splits[0][0]]
    assert batch_sizes == [40] * 19 + [48]  # 51 rows, 11 tested; the last batch 61, 13 tested
    assert not np.array_equal(np.sort(splits[0][1]), np.sort(splits[5][1]))
