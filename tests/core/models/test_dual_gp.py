"""The memory-based dual GP (Chang et al. 2023): its limits (empty memory: OVC++; every sample
in memory: FULL), its identities (re-conditioning the memory, the projection, the leverage, the
dual objective) against closed forms. The contract every method keeps (save, load, failures,
degenerate inputs) is tests/core/models/test_methods.py's, which lists dual-gp."""

import numpy as np
import pytest
import test_methods as shared
import torch
from gp_reference import posterior_moments, sgpr_posterior

from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.batch_terms import KernelCross
from poam_ros.models.dual_gp import (
    DualGP,
    DualObjective,
    draw_without_replacement,
    dual_negative_elbo,
    marginals,
)
from poam_ros.models.elbo import NegativeElbo
from poam_ros.models.posterior import prediction_cache

pytestmark = pytest.mark.usefixtures("single_thread")

EVERYTHING = 10 ** 6  # memory samples per batch: the whole batch


def config(**changes):
    settings = dict(method="dual-gp", num_inducing=15, train_steps=0, batch_size=32,
                    device="cpu", kernel="rbf", dtype="float64", dual={"memory_per_batch": 5})
    return MappingConfig.from_dict(settings).replace(**changes)


def scaled(model, x, y):
    return (torch.as_tensor(model.x_scaler.transform(x)),
            torch.as_tensor(model.y_scaler.transform(y)))


def run(model, batches, fixed=None, after=None):
    for i, (x, y) in enumerate(batches):
        model.add_data(x, y)
        if i == 0 and fixed is not None:
            model.fix_inducing_inputs(fixed)
        report = model.update()
        if after is not None:
            after(i, report)
    return model


def test_stationary_point_is_the_sgpr_posterior(stream):
    """Fixed Z and hyper-parameters, a memory picked from every batch: q(u) is Titsias' q(u) of
    all data, and in the paper's dual form m = α_u = Σ k_zi α̂_i, α̂_i = (y_i − μ_i)/σ², and
    V = (K⁻¹BK⁻¹ + K⁻¹)⁻¹ with B = K_uf K_fu/σ²."""
    batches = stream(4, 30)
    model = run(make_model(config()), batches,
                fixed=np.random.default_rng(1).uniform(-30, 30, (12, 2)))
    x_all = np.vstack([b[0] for b in batches])
    y_all = np.concatenate([b[1] for b in batches])
    mean, cov = sgpr_posterior(model, x_all, y_all)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-8, atol=1e-9)
    assert torch.allclose(got_cov, cov, rtol=1e-8, atol=1e-10)
    x, y = scaled(model, x_all, y_all)
    z, noise = model.inducing, model.noise.detach()
    with torch.no_grad():
        k = model.covariance(z, z) + model.config.jitter * model.amplitude * torch.eye(len(z))
        k_uf = model.covariance(z, x)
        k_inv = torch.linalg.inv(k)
        alpha_hat = (y - k_uf.T @ k_inv @ got_mean) / noise
        b = k_uf @ k_uf.T / noise
    assert torch.allclose(got_mean, k_uf @ alpha_hat, rtol=1e-7, atol=1e-8)
    assert torch.allclose(got_cov, torch.linalg.inv(k_inv @ b @ k_inv + k_inv), rtol=1e-6,
                          atol=1e-9)
    assert len(model.memory_rows) == 4 * 5


def test_memory_of_every_sample_is_full(stream):
    """Every sample kept: the same pivots, q(u) and hyper-parameters as FULL at every update,
    with the all-data objective (the same mini-batches: memory draws use their own generator)."""
    settings = dict(num_inducing=20, train_steps=3)
    full = make_model(config(method="full", **settings))
    dual = make_model(config(dual={"memory_per_batch": EVERYTHING, "objective": "all-data"},
                             **settings))
    for x, y in stream(4, 40):
        for model in (full, dual):
            model.add_data(x, y)
            model.update()
        assert torch.equal(dual.inducing, full.inducing)
        for a, b in zip(posterior_moments(dual), posterior_moments(full)):
            assert torch.allclose(a, b, rtol=1e-9, atol=1e-10)
        full_kernel = full.kernel.state_dict()
        for name, value in dual.kernel.state_dict().items():
            assert torch.allclose(value, full_kernel[name], rtol=1e-9, atol=1e-12), name
    assert len(dual.memory_rows) == dual.num_samples
    assert dual.data_vector.abs().max() < 1e-9 * dual._site_terms[0].abs().max()


@pytest.mark.parametrize("objective, steps", [("all-data", 3), ("dual", 0)])
def test_empty_memory_is_ovc_plus_plus(stream, objective, steps):
    settings = dict(num_inducing=20, train_steps=steps)
    ovc = make_model(config(method="ovc++", **settings))
    dual = make_model(config(dual={"memory_per_batch": 0, "objective": objective}, **settings))
    for x, y in stream(4, 40):
        for model in (ovc, dual):
            model.add_data(x, y)
            model.update()
        assert torch.equal(dual.inducing, ovc.inducing)
        for a, b in zip(posterior_moments(dual), posterior_moments(ovc)):
            assert torch.equal(a, b)
        assert torch.equal(dual.likelihood.noise, ovc.likelihood.noise)
    assert len(dual.memory_rows) == 0


def test_reconditioning_the_memory_and_the_identity_projection_change_nothing(stream):
    """At unchanged Z and hyper-parameters, carrying the stored sites to Z itself returns them,
    and removing the memory's sites and adding them again (an E-step with an empty batch)
    returns the same q(u)."""
    model = run(make_model(config(dual={"memory_per_batch": 8})), stream(3, 30))
    z = model.inducing
    selection = model._inducing_blocks(z, z[:0])
    vector, matrix = model._carried_terms(selection)
    assert torch.allclose(vector, model.data_vector, rtol=1e-9, atol=1e-9)
    assert torch.allclose(matrix, model.data_matrix, rtol=1e-9, atol=1e-8)
    x_mem, y_mem = model._scaled(model.memory_rows)
    done = model._condition(model.data_chol, (vector, matrix), selection.cross, y_mem[:0],
                            KernelCross(model.covariance, z, x_mem), y_mem)
    mean, cov = posterior_moments(model)
    assert torch.allclose(done.posterior.mean, mean, rtol=1e-9, atol=1e-9)
    assert torch.allclose(done.posterior.sqrt @ done.posterior.sqrt.T, cov, rtol=1e-9,
                          atol=1e-11)


def test_leverage_from_the_variance_is_the_ridge_leverage(stream):
    """Eq. 31 (h_i = β̂_i v_i) against Eq. 30's ridge leverage diag(K(K + σ²I)⁻¹), which
    coincide where the data are the inducing inputs; the report gives their mean."""
    x, y = stream(1, 12)[0]
    model = make_model(config(dual={"memory_per_batch": EVERYTHING}, jitter=1e-10))
    model.add_data(x, y)
    model.fix_inducing_inputs(x)
    report = model.update()
    xs, _ = scaled(model, x, y)
    z, noise = model.inducing, model.noise.detach()
    with torch.no_grad():
        cache = prediction_cache(model.k_uu_cholesky(z), model.posterior)
        _, var = marginals(KernelCross(model.covariance, z, xs), cache, model.amplitude)
        k = model.covariance(xs, xs)
        ridge = torch.linalg.solve(k + noise * torch.eye(len(x)), k).diagonal()
    assert torch.allclose(var / noise, ridge, rtol=1e-6)
    assert report.extra["memory_leverage_mean"] == pytest.approx(float(ridge.mean()), rel=1e-6)
    assert report.extra["memory_size"] == report.extra["memory_added"] == 12


def test_memory_draws_are_distinct_and_favour_high_leverage():
    """Eq. 31's sampling without replacement: three samples of leverage 1000 among fifty of
    leverage 1 are almost always the three drawn; never a sample twice."""
    weights = torch.cat([torch.full((3,), 1000.0), torch.ones(50)])
    generator = torch.Generator().manual_seed(0)
    heavy = 0
    for _ in range(100):
        drawn = draw_without_replacement(weights, 3, generator)
        assert len(set(drawn.tolist())) == 3
        heavy += int((drawn < 3).all())
    assert heavy >= 80  # P(all three heavy) = 0.91
    assert sorted(draw_without_replacement(weights, 53, generator).tolist()) == list(range(53))


def test_dual_objective_is_the_fixed_q_elbo_at_the_site_hyper_parameters(stream):
    """Memory = all old data (weight 1): at the hyper-parameters that formed the sites, the dual
    objective's value is the fixed-q ELBO of all data, and so is its gradient (q(u) is optimal
    there: the envelope theorem), the latter's by the hand-derived backward pass."""
    batches = stream(3, 20)
    model = run(make_model(config(dual={"memory_per_batch": EVERYTHING}, batch_size=1000)), batches)
    x_new, y_new = scaled(model, *batches[-1])
    x_mem, y_mem = model._scaled(model.memory_rows[model.memory_rows < 40])
    objective = DualObjective(model, x_new, y_new, x_mem, y_mem, 40)
    params = [*model.kernel.parameters(), *model.likelihood.parameters()]
    dual = objective.loss()
    dual_grad = torch.autograd.grad(dual, params)
    x_all, y_all = model._scaled(np.arange(60))
    z, post = model.inducing, model.posterior
    fixed = NegativeElbo.apply(model.covariance(z, z), model.covariance(z, x_all), model.amplitude,
                               model.noise, y_all, post.mean, post.sqrt @ post.sqrt.T, post.logdet,
                               60, model.config.jitter, 0)
    fixed_grad = torch.autograd.grad(fixed, params)
    assert float(dual.detach()) == pytest.approx(float(fixed.detach()), rel=1e-9)
    for a, b in zip(dual_grad, fixed_grad):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-9)


def test_dual_objective_gradient_matches_finite_differences(stream):
    """Away from the site hyper-parameters (moved amplitude and noise), a memory weighted by
    n_old/|𝓜| = 4: autograd through the whitened forms against central differences."""
    model = run(make_model(config()), stream(2, 20))
    z = model.inducing.detach()
    x, y = model._scaled(np.arange(40))
    weights = torch.linspace(0.5, 4.0, 40, dtype=torch.float64)
    vector, matrix = model._site_terms

    def loss(log_amplitude, log_noise):
        amplitude, noise = log_amplitude.exp(), log_noise.exp()
        base = model.kernel.base_kernel

        def expected(mean, var, y):
            return -0.5 * (np.log(2 * np.pi) + log_noise + ((y - mean).square() + var) / noise)
        return dual_negative_elbo(amplitude * base(z, z).to_dense(),
                                  amplitude * base(z, x).to_dense(), amplitude, vector, matrix,
                                  expected, y, weights, 100.0, 1e-6, 0)
    point = (torch.tensor(0.3, dtype=torch.float64, requires_grad=True),
             torch.tensor(-1.0, dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(loss, point)


def test_state_round_trip_continues_exactly_mid_mission(stream, tmp_path):
    """Saved after two updates (memory drawn by leverage, bounded, dual objective), loaded, and
    both continued: the same memory, q(u) and predictions to the last bit."""
    cfg = config(train_steps=3, dual={"memory_per_batch": 6, "memory_max": 10})
    batches = stream(4, 30)
    model = run(make_model(cfg), batches[:2])
    path = tmp_path / "dual.pt"
    model.save(path)
    loaded = load_model(path)
    assert type(loaded) is DualGP
    assert np.array_equal(loaded.memory_samples()[0], model.memory_samples()[0])
    for m in (model, loaded):
        run(m, batches[2:])
    assert np.array_equal(model.memory_rows, loaded.memory_rows)
    assert len(model.memory_rows) == 10
    query = np.array([[0.0, 0.0], [12.5, -3.0], [-29.0, 29.0]])
    for a, b in zip(model.predict(query), loaded.predict(query)):
        assert np.array_equal(a, b)


def test_bounded_memory_evicts_the_lowest_leverage_into_the_carried_sites(stream):
    """With fixed Z and hyper-parameters the carry is exact, so q(u) stays SGPR's of all data
    whichever samples move between memory and carried sites."""
    batches = stream(4, 25)
    reports = []
    model = run(make_model(config(dual={"memory_per_batch": 6, "memory_max": 9})), batches,
                fixed=np.random.default_rng(2).uniform(-30, 30, (12, 2)),
                after=lambda i, report: reports.append(report.extra))
    assert [r["memory_size"] for r in reports] == [6, 9, 9, 9]
    assert all(r["memory_added"] <= 6 for r in reports)
    mean, cov = sgpr_posterior(model, np.vstack([b[0] for b in batches]),
                               np.concatenate([b[1] for b in batches]))
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-8, atol=1e-9)
    assert torch.allclose(got_cov, cov, rtol=1e-8, atol=1e-10)


def test_random_pick_and_float32_learn_the_field():
    model = shared.small_model("dual-gp", dual={"memory_pick": "random"}, dtype="float32",
                               num_inducing=30, train_steps=3)
    for x, y in shared.batches(4, 50):
        model.add_data(x, y)
        assert model.update().training_failure is None
    mean, _ = model.predict(shared.QUERY)
    assert np.abs(mean - shared.smooth_field(shared.QUERY)).max() < 1.0
    assert model.memory_samples()[0].shape == (40, 2)
