"""The fast paths of the M-step and of prediction compute the plain paths' functions.

At fixed parameters: the ELBO from the cached base stack with the attention network run once on
Z equals the kernel evaluated afresh (value and gradient); the prediction factors from the
cached stack equal those from the inputs; the clamp of exp's argument leaves predictions bit
for bit unchanged; the GPU code path (whole matrices, fused Adam) gives the CPU path's update;
a factorisation under deferred checks records its failure instead of raising. The M-step's own
fast path (deferred checks, mini-batches drawn up front) is tested in ``test_training.py``.
"""

import numpy as np
import pytest
import torch

from poam_ros.benchmark.dispatch import use_gpu_code_path
from poam_ros.kernels import base_stack
from poam_ros.models import NumericalError, load_model
from poam_ros.models.linalg import deferred_checks, robust_cholesky
from poam_ros.models.objectives import FixedPosteriorElbo

pytestmark = pytest.mark.usefixtures("single_thread")

QUERY = np.random.default_rng(5).uniform(-30, 30, (300, 2))


def hyper_parameters(model):
    return [*model.kernel.parameters(), *model.likelihood.parameters()]


def test_cached_elbo_equals_the_kernel_evaluated_afresh(trained):
    """FixedPosteriorElbo's fast path (cached K(Z, Z) stack, w̄(Z) once for K_uu and K_uf)
    against the same ELBO with both kernel matrices from ``covariance``: value and gradient."""
    model = trained[0]
    batch = model.trainer.minibatch()
    results = []
    for train_inducing in (False, True):  # True: the plain path, Z a leaf
        model.trainer.minibatches = [batch]
        loss = FixedPosteriorElbo(model, train_inducing).loss()
        results.append((loss, *torch.autograd.grad(loss, hyper_parameters(model))))
    for fast, plain in zip(*results):
        assert torch.allclose(fast, plain, rtol=1e-11, atol=1e-14)


def test_prediction_factors_from_the_cached_stack_are_the_same(trained):
    model = trained[0]
    model.prediction.refresh()
    plain = model.prediction.factors
    model.prediction.refresh(model.kernel.base_kernel.precompute(model.inducing, model.inducing))
    assert torch.equal(plain.alpha, model.prediction.factors.alpha)
    assert torch.equal(plain.q, model.prediction.factors.q)


def test_the_clamp_of_exp_leaves_float64_predictions_bit_for_bit(trained, monkeypatch):
    model = trained[0]
    query = np.vstack([QUERY, [[1e4, -1e4], [80.0, 0.0]]])  # and far outside the survey
    clamped = model.predict(query)
    monkeypatch.setattr(base_stack, "exp_floor", lambda dtype: -float("inf"))
    model.prediction.refresh()
    exact = model.predict(query)
    for a, b in zip(clamped, exact):
        assert np.array_equal(a, b)


def test_deferred_factorisations_record_instead_of_raising():
    good = torch.eye(3, dtype=torch.float64)
    bad = -torch.eye(3, dtype=torch.float64)
    with deferred_checks() as checks:
        robust_cholesky(good, 1e-6, 3, "good")
    assert checks.read(torch.tensor(2.5)) == (True, [2.5])
    with deferred_checks() as checks:
        robust_cholesky(bad, 1e-6, 3, "bad")  # would raise outside
        checks.record(torch.isfinite(torch.tensor(1.0)))
    assert checks.read()[0] is False
    with deferred_checks() as checks:
        checks.record(torch.isfinite(torch.tensor(float("nan"))))
    assert checks.read()[0] is False
    with pytest.raises(NumericalError, match="bad: Cholesky failed"):
        robust_cholesky(bad, 1e-6, 3, "bad")


def test_the_gpu_code_path_computes_the_cpu_paths_update(trained):
    """Without training steps (Adam amplifies round-off), an update on whole matrices equals
    the update on row blocks to round-off; with them, the same mini-batches are drawn."""
    _, path, batch = trained
    models = [load_model(path), load_model(path)]
    use_gpu_code_path(models[1])
    for model in models:
        model.config = model.config.replace(train_steps=0)
        model.add_data(*batch)
        model.update()
    assert torch.equal(models[0].inducing, models[1].inducing)
    assert torch.allclose(models[0].posterior.mean, models[1].posterior.mean, rtol=1e-9,
                          atol=1e-10)
    for a, b in zip(models[0].predict(QUERY), models[1].predict(QUERY)):
        assert np.abs(a - b).max() < 1e-8


def test_float32_kernel_evaluation_in_predict_stays_close(trained):
    model = trained[0]
    mean, std = model.predict(QUERY)
    same = model.predict(QUERY, kernel_dtype=torch.float64)
    assert np.array_equal(mean, same[0]) and np.array_equal(std, same[1])
    mean32, std32 = model.predict(QUERY, kernel_dtype=torch.float32)
    assert np.abs(mean32 - mean).max() < 1e-4 * np.ptp(mean)
    assert np.abs(std32 - std).max() < 1e-4 * std.max()
