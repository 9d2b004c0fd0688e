"""POAM's online update against the closed-form sparse-GP posterior, and learning a field."""


import numpy as np
import pytest
import torch

from poam_ros.models import MappingConfig, make_model
from poam_ros.models.poam import POAM


def batch_posterior(model, x_world, y_world):
    """Titsias' optimal q(u) from all data at once: S = K Σ⁻¹ K, m = σ⁻² K Σ⁻¹ K_uf y."""
    x = torch.as_tensor(model.x_scaler.transform(x_world))
    y = torch.as_tensor(model.y_scaler.transform(y_world))
    z, noise = model.inducing, model.noise
    k_uu = model.covariance(z, z)
    k_uu = k_uu + model.config.jitter * k_uu.diagonal().mean() * torch.eye(len(z), dtype=z.dtype)
    k_uf = model.covariance(z, x)
    sigma = k_uu + k_uf @ k_uf.T / noise
    mean = k_uu @ torch.linalg.solve(sigma, k_uf @ y) / noise
    cov = k_uu @ torch.linalg.solve(sigma, k_uu)
    return mean, cov


def _grid() -> np.ndarray:
    """A 30 x 30 grid over [-28, 28]² m, (900, 2)."""
    axis = np.linspace(-28, 28, 30)
    return np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)


@pytest.mark.parametrize("kernel", ["attentive", "rbf"])
def test_streaming_equals_batch_posterior_with_fixed_inducing_inputs(stream, kernel):
    config = MappingConfig(kernel=kernel, train_steps=0, device="cpu", dtype="float64")
    model = POAM(config)
    batches = stream(5, 60)
    model.add_data(*batches[0])
    model.fix_inducing_inputs(np.random.default_rng(1).uniform(-30, 30, (40, 2)))
    for x, y in batches:
        if x is not batches[0][0]:
            model.add_data(x, y)
        model.update()
    x_all = np.vstack([b[0] for b in batches])
    y_all = np.concatenate([b[1] for b in batches])
    with torch.no_grad():
        mean, cov = batch_posterior(model, x_all, y_all)
        streamed_cov = model.posterior.sqrt @ model.posterior.sqrt.T
    assert torch.allclose(model.posterior.mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(streamed_cov, cov, rtol=1e-7, atol=1e-9)


def test_inducing_inputs_stay_bounded_and_come_from_candidates(stream, small_config):
    model = POAM(small_config)
    for x, y in stream(6, 50):
        previous = set() if not model.ready else {tuple(z) for z in model.inducing_inputs.round(9)}
        model.add_data(x, y)
        report = model.update()
        assert report.num_inducing <= small_config.num_inducing
        candidates = previous | {tuple(p) for p in x.round(9)}
        assert {tuple(z) for z in model.inducing_inputs.round(9)} <= candidates


def test_learns_the_field_with_honest_uncertainty(stream, field):
    # A short stream: start near the true noise level, as 120 Adam steps cannot come down
    # from the default initial noise variance of 1.0 (standardised units).
    model = make_model(MappingConfig(num_inducing=150, train_steps=10, device="cpu",
                                     initial_noise_variance=0.01))
    for x, y in stream(12, 100):
        model.add_data(x, y)
        model.update()
    grid = _grid()
    mean, std = model.predict(grid)
    truth = field(grid)
    smse = np.mean((mean - truth) ** 2) / np.var(truth)
    assert smse < 0.05
    # Most errors lie within the predictive uncertainty (plus the sampling noise).
    _, noisy_std = model.predict(grid, include_noise=True)
    assert np.mean(np.abs(mean - truth) < 2 * noisy_std) > 0.85
    assert (std > 0).all() and (noisy_std > std).all()


def test_uncertainty_is_lower_where_data_are(small_config, field):
    model = POAM(small_config.replace(initial_noise_variance=0.01))  # noise-free samples
    rng = np.random.default_rng(4)
    x = rng.uniform(-30, 0, (300, 2))
    model.add_data(x, field(x))
    model.update()
    _, std_seen = model.predict(np.array([[-15.0, -15.0]]))
    _, std_unseen = model.predict(np.array([[25.0, 25.0]]))
    assert std_seen[0] < 0.5 * std_unseen[0]


def test_float32_agrees_with_float64(stream):
    """Same inducing inputs (greedy PCD breaks near-ties by round-off, so it may pick others)."""
    batches, predictions = stream(3, 80), []
    inducing = np.random.default_rng(2).uniform(-30, 30, (60, 2))
    for dtype in ("float64", "float32"):
        model = POAM(MappingConfig(train_steps=2, dtype=dtype, device="cpu", jitter=1e-4))
        model.add_data(*batches[0])
        model.fix_inducing_inputs(inducing)
        for i, (x, y) in enumerate(batches):
            if i:
                model.add_data(x, y)
            model.update()
        # Away from the field's step at x = 10 m, where pivot order could matter.
        predictions.append(model.predict(np.array([[0.0, 0.0], [-15.0, 12.0], [20.0, 5.0]]))[0])
    assert np.allclose(predictions[0], predictions[1], atol=0.05)


def test_float32_streams_thousands_of_samples_without_numerical_failure(stream, field):
    """The data terms are summed and carried in float64: summed in float32, C = K_uf K_fu
    turned indefinite after a couple of thousand samples and I + σ⁻²L⁻¹CL⁻ᵀ failed to
    factorise (5 of these 30 updates, with every jitter the guard tries)."""
    model = POAM(MappingConfig(num_inducing=200, dtype="float32", device="cpu"))
    assert model.data_vector is None
    for x, y in stream(30, 100):
        model.add_data(x, y)
        model.update()  # raises NumericalError if the E-step fails
    assert model.data_matrix.dtype == torch.float64 and model.posterior.mean.dtype == torch.float32
    query = np.random.default_rng(3).uniform(-30, 30, (500, 2))
    query = query[np.abs(query[:, 0] - 10) > 3]  # away from the field's step
    mean, std = model.predict(query)
    # float64 reaches 0.153 here (noise 0.2); float32 0.160
    assert np.sqrt(np.mean((mean - field(query)) ** 2)) < 0.2 and (std > 0).all()


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method must be one of .*, got 'poam-typo'"):
        make_model(MappingConfig(method="poam-typo"))


def test_carried_terms_stay_close_to_a_recomputation_from_all_data(stream, field):
    """With hyper-parameters moving between updates, the projected data terms must not drift
    far from the optimal q(u) recomputed from every sample for the same Z and kernel."""
    from poam_ros.models.posterior import optimal_posterior

    model = make_model(MappingConfig(num_inducing=150, device="cpu",
                                     initial_noise_variance=0.01))
    for x, y in stream(12, 100):
        model.add_data(x, y)
        model.update()
    grid = _grid()
    truth = field(grid)
    streamed = np.mean((model.predict(grid)[0] - truth) ** 2) / np.var(truth)
    with torch.no_grad():
        x, y = model._scaled(np.arange(model.num_samples))
        k_uf = model.covariance(model.inducing, x)
        model.posterior = optimal_posterior(model.k_uu_cholesky(model.inducing), k_uf @ y,
                                            k_uf @ k_uf.T, model.noise, 4)
        model.prediction.refresh()
    recomputed = np.mean((model.predict(grid)[0] - truth) ** 2) / np.var(truth)
    assert streamed < 1.25 * recomputed
