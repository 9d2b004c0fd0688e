"""What every mapping method must do: run with both kernels, learn a field, save and load, and
survive numerical failures without changing the model."""

import numpy as np
import pytest
import torch
from gp_reference import noisy_batches as batches
from gp_reference import smooth_field

from poam_ros.models import METHODS, MappingConfig, NumericalError, load_model, make_model
from poam_ros.models.independent import IndependentChannels
from poam_ros.models.objectives import TrainingObjective

pytestmark = pytest.mark.usefixtures("single_thread")

PUBLISHED = tuple(METHODS)  # the registry
#: poam-independent's and dual-gp-independent's channels are single-channel models that fail
#: and train on their own kernels, not the model's: test_independent.py tests the transaction.
OWN_KERNEL = tuple(m for m in PUBLISHED if not issubclass(METHODS[m], IndependentChannels))
QUERY = np.array([[0.0, 0.0], [12.5, -3.0], [-29.0, 29.0], [20.0, 20.0]])


def binary(method):
    """Whether the method maps a binary channel (its targets are then labels)."""
    return METHODS[method].channel_likelihoods[0] == "bernoulli"


def for_method(method, stream):
    """The stream's batches as the method takes them: labels y > 0 for a binary channel."""
    return [(x, (y > 0).astype(float)) if binary(method) else (x, y) for x, y in stream]


def small_model(method, kernel="rbf", **overrides):
    settings = dict(method=method, kernel=kernel, num_inducing=20, train_steps=2, batch_size=32,
                    device="cpu", initial_noise_variance=0.05)
    return make_model(MappingConfig.from_dict(settings).replace(**overrides))


def test_every_method_is_its_own_class():
    assert len({id(cls) for cls in METHODS.values()}) == len(METHODS)
    for name, cls in METHODS.items():
        assert cls.method == name


@pytest.mark.parametrize("kernel", ["attentive", "rbf", "matern52"])
@pytest.mark.parametrize("method", PUBLISHED)
def test_runs_saves_loads_and_continues_exactly(method, kernel, tmp_path):
    model = small_model(method, kernel)
    stream = for_method(method, batches(3, 30))
    for x, y in stream[:2]:
        model.add_data(x, y)
        report = model.update()
        assert report.training_failure is None
    path = tmp_path / "map.pt"
    model.save(path)
    loaded = load_model(path)
    assert type(loaded) is type(model)
    for a, b in zip(model.predict(QUERY), loaded.predict(QUERY)):
        assert np.array_equal(a, b)
    extras = []
    for m in (model, loaded):
        m.add_data(*stream[2])
        extras.append(m.update().extra)  # the method's own figures: its state went along
    assert extras[0].keys() == extras[1].keys()
    np.testing.assert_array_equal(list(extras[0].values()), list(extras[1].values()))
    mean, std = model.predict(QUERY)
    assert np.isfinite(mean).all() and (std > 0).all()
    assert np.array_equal(mean, loaded.predict(QUERY)[0])
    assert np.array_equal(model.inducing_inputs, loaded.inducing_inputs)


#: Methods that learn q(u) by gradients need many more steps (the POAM paper's point).
GRADIENT_Q = dict(train_steps=60, lr_variational=0.1)


@pytest.mark.parametrize("method", PUBLISHED)
def test_learns_a_simple_field(method):
    overrides = dict(num_inducing=30, train_steps=3)
    if method in ("svgp", "poam-var-opt"):
        overrides.update(GRADIENT_Q)
    model = small_model(method, **overrides)
    for x, y in for_method(method, batches(4, 50)):
        model.add_data(x, y)
        assert model.update().training_failure is None
    axis = np.linspace(-28, 28, 15)
    grid = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    mean, std = model.predict(grid)
    truth = smooth_field(grid)
    if binary(method):  # the field's sign, from the labels
        assert np.mean((model.predict_proba(grid) > 0.5) == (truth > 0)) > 0.9
    else:
        assert np.mean((mean - truth) ** 2) / np.var(truth) < 0.1
    assert (std > 0).all()


@pytest.mark.parametrize("method", OWN_KERNEL)
def test_failed_update_keeps_the_model_and_recovers(method, monkeypatch):
    """A kernel that returns NaN makes every method's E-step fail: NumericalError, and the
    model, its method state and the pending samples stay as they were."""
    model = small_model(method)
    first, second = for_method(method, batches(2, 30))
    model.add_data(*first)
    model.update()
    before = model.predict(QUERY)
    inducing, posterior, state = model.inducing, model.posterior, model._method_state()
    base = model.kernel.base_kernel
    healthy = base.forward
    monkeypatch.setattr(base, "forward", lambda x1, x2, **kw: healthy(x1, x2, **kw) * float("nan"))
    model.add_data(*second)
    with pytest.raises(NumericalError):
        model.update()
    assert model.inducing is inducing and model.posterior is posterior
    after = model._method_state()
    assert after.keys() == state.keys()
    assert all(torch.equal(after[key], state[key]) for key in state)
    assert model.num_pending == 30
    monkeypatch.setattr(base, "forward", healthy)
    assert np.array_equal(model.predict(QUERY)[0], before[0])
    model.update()  # the pending batch is used once the model is healthy again
    assert model.num_pending == 0
    assert not np.array_equal(before[0], model.predict(QUERY)[0])


def test_non_finite_hyper_parameters_are_refused_before_the_e_step(stream):
    model = small_model("ssgp")
    model.add_data(*batches(1, 30)[0])
    model.update()
    with torch.no_grad():
        model.kernel.raw_outputscale.fill_(float("nan"))
    model.add_data(*batches(1, 30, seed=1)[0])
    with pytest.raises(NumericalError, match="raw_outputscale is not finite"):
        model.update()


class NonFinite(TrainingObjective):
    def loss(self):
        return torch.tensor(float("nan"), requires_grad=True)


@pytest.mark.parametrize("method", OWN_KERNEL)
def test_failed_training_is_reported_and_undone(method, monkeypatch):
    model = small_model(method)
    first, second = for_method(method, batches(2, 30))
    model.add_data(*first)
    model.update()
    hyper = {k: v.clone() for k, v in model.kernel.state_dict().items()}
    monkeypatch.setattr(model, "_training_objective", lambda x, y: NonFinite())
    model.add_data(*second)
    report = model.update()
    assert "non-finite" in report.training_failure
    for key, value in model.kernel.state_dict().items():
        assert torch.equal(value, hyper[key])
    assert model.num_pending == 0  # the E-step's result stands
    assert np.isfinite(model.predict(QUERY)[0]).all()


@pytest.mark.parametrize("method", PUBLISHED)
def test_degenerate_inputs_never_crash(method):
    """Repeated inputs with jitter off and one retry: either the update succeeds or it reports
    a NumericalError and leaves the model as it was."""
    model = small_model(method, jitter=0.0, max_jitter_tries=1)
    x, y = for_method(method, batches(1, 30))[0]
    model.add_data(x, y)
    model.update()
    before = model.predict(QUERY)
    repeated = np.repeat(x[:3], 15, axis=0)
    model.add_data(*for_method(method, [(repeated, np.linspace(-1.0, 1.0, len(repeated)))])[0])
    try:
        model.update()
    except NumericalError:
        assert np.array_equal(model.predict(QUERY)[0], before[0])
        assert model.num_pending == len(repeated)
    else:
        assert np.isfinite(model.predict(QUERY)[0]).all()

