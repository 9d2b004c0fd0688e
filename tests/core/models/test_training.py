"""The M-step (:class:`~poam_ros.models.training.Trainer`): its fast path is its checked path.

The mini-batches drawn up front are those drawn step by step, from the same generator states;
the M-step that reads the device once (deferred checks) gives the result of the one checked
step by step, and when a deferred check fails, the replay starts from the state before the
M-step with the same mini-batches; a factorisation that needs more jitter than configured is
escalated by that replay; on the GPU code path ten steps and the prediction factors wait for
the device once.
"""

import numpy as np
import pytest
import torch

from poam_ros.benchmark.dispatch import DispatchCounter, use_gpu_code_path
from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.linalg import DeferredChecks

pytestmark = pytest.mark.usefixtures("single_thread")

QUERY = np.random.default_rng(5).uniform(-30, 30, (300, 2))


def test_minibatches_drawn_ahead_are_the_ones_drawn_step_by_step(trained):
    model = trained[0]
    state = model.generator.get_state()
    ahead = model.trainer.draw_minibatches(4)
    after = model.generator.get_state()
    model.generator.set_state(state)
    for x, y in ahead:
        x_now, y_now = model.trainer.minibatch()
        assert torch.equal(x, x_now) and torch.equal(y, y_now)
    assert torch.equal(model.generator.get_state(), after)


def checked_twin(path, monkeypatch):
    """The saved model, loaded with its M-step checked step by step (the replay path)."""
    twin = load_model(path)
    trainer = twin.trainer
    monkeypatch.setattr(trainer, "train",
                        lambda task: trainer.train_checked(task, trainer.snapshot()))
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


def test_the_m_step_reads_the_device_once(trained):
    """On the GPU code path ten steps and the prediction factors wait for the device once."""
    model = trained[0]
    use_gpu_code_path(model)
    model.config = model.config.replace(train_steps=10)
    x, y = model.trainer.minibatch()
    with DispatchCounter() as counter:
        model._train_hyperparameters(x, y)
    assert counter.syncs == 1, dict(counter.sync_by_op)


def adam_steps(model) -> int:
    """Adam steps taken so far (each parameter's state counts them)."""
    return int(next(iter(model.trainer.optimizer.state.values()))["step"])


@pytest.mark.parametrize("method", ["poam", "dual-gp"])
def test_the_first_update_fits_for_first_train_steps_then_train_steps(stream, method):
    batches = stream(2, 120)
    config = MappingConfig(method=method, kernel="rbf", num_inducing=30, train_steps=3,
                           batch_size=32, device="cpu", dtype="float64")
    fitted = make_model(config.replace(first_train_steps=20))
    fitted.add_data(*batches[0])
    fitted.update()
    assert adam_steps(fitted) == 20
    long = make_model(config.replace(train_steps=20))  # the same M-step under its other name
    long.add_data(*batches[0])
    long.update()
    assert_same_models(fitted, long)
    fitted.add_data(*batches[1])
    fitted.update()
    assert adam_steps(fitted) == 23


def test_refining_continues_the_updates_m_step(stream):
    """Idle training (``refine``) is the update's M-step carried on: an update of 3 steps then
    5 refining steps equals an update of 8 steps, draws and Adam's state included."""
    first = stream(1, 120)[0]
    config = MappingConfig(num_inducing=30, train_steps=3, batch_size=32, device="cpu",
                           dtype="float64")
    refined, long = make_model(config), make_model(config.replace(train_steps=8))
    for model in (refined, long):
        model.add_data(*first)
        model.update()
    report = refined.refine(5)
    assert report.training_failure is None and report.training_time > 0
    assert report.num_new == 0 and refined.num_updates == 1
    assert adam_steps(refined) == 8
    assert_same_models(refined, long)


@pytest.mark.parametrize("method", ["ssgp++", "vips"])
def test_a_method_whose_bound_is_the_last_batchs_does_not_refine(stream, method):
    model = make_model(MappingConfig(method=method, kernel="rbf", num_inducing=30,
                                     train_steps=3, batch_size=32, device="cpu"))
    model.add_data(*stream(1, 120)[0])
    model.update()
    steps, hyper = adam_steps(model), model.trainer.snapshot()
    assert not model.refines and model.refine(5).training_time == 0
    assert adam_steps(model) == steps
    for a, b in zip(hyper["kernel"].values(), model.trainer.snapshot()["kernel"].values()):
        assert torch.equal(a, b)
