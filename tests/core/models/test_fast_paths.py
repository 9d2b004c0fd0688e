"""The fast paths of the M-step and of prediction compute the plain paths' functions.

At fixed parameters: the ELBO from the cached base stack with the attention network run once on
Z equals the kernel evaluated afresh (value and gradient); the prediction factors from the
cached stack equal those from the inputs; the clamp of exp's argument leaves predictions bit
for bit unchanged; the GPU code path (whole matrices, fused Adam) gives the CPU path's update.
The M-step that reads the device once gives the result of the one checked step by step.
"""

import numpy as np
import pytest
import torch

from poam_ros.benchmark.dispatch import DispatchCounter, use_gpu_code_path
from poam_ros.kernels import base_stack
from poam_ros.models import MappingConfig, NumericalError, load_model, make_model
from poam_ros.models.linalg import DeferredChecks, deferred_checks, robust_cholesky
from poam_ros.models.objectives import FixedPosteriorElbo

pytestmark = pytest.mark.usefixtures("single_thread")

QUERY = np.random.default_rng(5).uniform(-30, 30, (300, 2))


@pytest.fixture
def trained(stream, tmp_path):
    """A small attentive-kernel POAM after three updates, saved, and its next batch."""
    config = MappingConfig(num_inducing=60, train_steps=3, batch_size=64, device="cpu",
                           dtype="float64")
    model = make_model(config)
    batches = stream(4, 80)
    for x, y in batches[:3]:
        model.add_data(x, y)
        model.update()
    path = tmp_path / "model.pt"
    model.save(path)
    return model, path, batches[3]


def hyper_parameters(model):
    return [*model.kernel.parameters(), *model.likelihood.parameters()]


def test_cached_elbo_equals_the_kernel_evaluated_afresh(trained):
    """FixedPosteriorElbo's fast path (cached K(Z, Z) stack, w̄(Z) once for K_uu and K_uf)
    against the same ELBO with both kernel matrices from ``covariance``: value and gradient."""
    model = trained[0]
    batch = model._minibatch()
    results = []
    for train_inducing in (False, True):  # True: the plain path, Z a leaf
        model._minibatches = [batch]
        loss = FixedPosteriorElbo(model, train_inducing).loss()
        results.append((loss, *torch.autograd.grad(loss, hyper_parameters(model))))
    for fast, plain in zip(*results):
        assert torch.allclose(fast, plain, rtol=1e-11, atol=1e-14)


def test_prediction_factors_from_the_cached_stack_are_the_same(trained):
    model = trained[0]
    model._refresh_factors()
    plain = model._factors
    model._refresh_factors(model.kernel.base_kernel.precompute(model.inducing, model.inducing))
    assert torch.equal(plain.alpha, model._factors.alpha)
    assert torch.equal(plain.q, model._factors.q)


def test_the_clamp_of_exp_leaves_float64_predictions_bit_for_bit(trained, monkeypatch):
    model = trained[0]
    query = np.vstack([QUERY, [[1e4, -1e4], [80.0, 0.0]]])  # and far outside the survey
    clamped = model.predict(query)
    monkeypatch.setattr(base_stack, "exp_floor", lambda dtype: -float("inf"))
    model._refresh_factors()
    exact = model.predict(query)
    for a, b in zip(clamped, exact):
        assert np.array_equal(a, b)


def test_minibatches_drawn_ahead_are_the_ones_drawn_step_by_step(trained):
    model = trained[0]
    state = model.generator.get_state()
    ahead = model._draw_minibatches(4)
    after = model.generator.get_state()
    model.generator.set_state(state)
    for x, y in ahead:
        x_now, y_now = model._minibatch()
        assert torch.equal(x, x_now) and torch.equal(y, y_now)
    assert torch.equal(model.generator.get_state(), after)


def checked_twin(path, monkeypatch):
    """The saved model, loaded with its M-step checked step by step (the replay path)."""
    twin = load_model(path)
    monkeypatch.setattr(twin, "_train_hyperparameters",
                        lambda x, y: twin._checked_training(x, y, twin._hyper_snapshot()))
    return twin


def assert_same_models(a, b):
    for x, y in zip([*a.kernel.state_dict().values(), *a.likelihood.state_dict().values()],
                    [*b.kernel.state_dict().values(), *b.likelihood.state_dict().values()]):
        assert torch.equal(x, y)
    assert torch.equal(a.generator.get_state(), b.generator.get_state())
    for x, y in zip(a.predict(QUERY), b.predict(QUERY)):
        assert np.array_equal(x, y)


def test_the_deferred_m_step_equals_the_checked_one(trained, monkeypatch):
    _, path, batch = trained
    fast, checked = load_model(path), checked_twin(path, monkeypatch)
    reports = []
    for model in (fast, checked):
        model.add_data(*batch)
        reports.append(model.update())
    assert reports[0].loss == reports[1].loss and reports[0].training_failure is None
    assert_same_models(fast, checked)


def test_a_failed_deferred_check_replays_the_m_step_checked(trained, monkeypatch):
    """Whatever the deferred pass computed is discarded: the replay starts from the state
    before the M-step, with the same mini-batches."""
    _, path, batch = trained
    fast, checked = load_model(path), checked_twin(path, monkeypatch)
    read = DeferredChecks.read
    monkeypatch.setattr(DeferredChecks, "read", lambda self, *v: (False, read(self, *v)[1]))
    for model in (fast, checked):
        model.add_data(*batch)
        model.update()
    assert_same_models(fast, checked)


def test_a_factorisation_needing_more_jitter_than_configured_still_trains(stream):
    """Repeated inducing inputs without jitter: K_uu is singular, the deferred first attempt
    fails, and the checked replay escalates the jitter as the M-step always did."""
    model = make_model(MappingConfig(num_inducing=30, train_steps=2, batch_size=32,
                                     device="cpu", jitter=0.0))
    first, second = stream(2, 60)
    model.add_data(*first)
    z = np.random.default_rng(2).uniform(-30, 30, (10, 2))
    model.fix_inducing_inputs(np.vstack([z, z]))
    model.update()
    model.add_data(*second)
    report = model.update()
    assert report.training_failure is None and np.isfinite(report.loss)


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


def test_the_m_step_reads_the_device_once(trained):
    """On the GPU code path ten steps and the prediction factors wait for the device once."""
    model = trained[0]
    use_gpu_code_path(model)
    model.config = model.config.replace(train_steps=10)
    x, y = model._minibatch()
    with DispatchCounter() as counter:
        model._train_hyperparameters(x, y)
    assert counter.syncs == 1, dict(counter.sync_by_op)


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
