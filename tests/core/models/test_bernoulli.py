"""The Bernoulli (probit) dual GP: the quadrature's derivatives, the Bayesian-learning-rule
iterations against the SVGP optimum found by direct optimisation, and a binary field learned."""

import numpy as np
import pytest
import torch
from scipy.stats import norm

from poam_ros.models import MappingConfig
from poam_ros.models.bernoulli import BernoulliDualGP, probit_expectations
from poam_ros.models.samples import InvalidBatchError

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(num_inducing=12, train_steps=0, batch_size=64, device="cpu", kernel="rbf",
                    dtype="float64", dual={"memory_per_batch": 5}, initial_amplitude=4.0)
    return MappingConfig.from_dict(settings).replace(**changes)


def labelled(count, seed=0):
    """Labels of the field sin(x/8) + cos(y/10) > 0 over [-30, 30]² m, 10 % flipped."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-30, 30, (count, 2))
    label = (np.sin(x[:, 0] / 8) + np.cos(x[:, 1] / 10) > 0).astype(float)
    flip = rng.uniform(size=count) < 0.1
    return x, np.where(flip, 1.0 - label, label)


def test_quadrature_derivatives_are_the_expected_derivatives():
    """α̂ and β̂ are ∂E/∂μ and −2 ∂E/∂v of the quadrature (autograd), and with many nodes they
    are E[∂_f log p] and E[−∂²_f log p] (Bonnet and Price) evaluated directly."""
    y = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    mean = torch.tensor([0.3, 2.0, -4.0, -0.5], dtype=torch.float64, requires_grad=True)
    var = torch.tensor([0.2, 1.5, 0.7, 3.0], dtype=torch.float64, requires_grad=True)
    expected, alpha, beta = probit_expectations(y, mean, var)
    d_mean, d_var = torch.autograd.grad(expected.sum(), (mean, var))
    assert torch.allclose(alpha, d_mean, rtol=1e-10)
    assert torch.allclose(beta, -2.0 * d_var, rtol=1e-10)
    nodes, weights = np.polynomial.hermite.hermgauss(200)
    f = mean.detach()[:, None].numpy() + np.sqrt(2 * var.detach()[:, None].numpy()) * nodes
    z = y[:, None].numpy() * f
    ratio = np.exp(norm.logpdf(z) - norm.logcdf(z))
    second = (weights * ratio * (z + ratio)).sum(1) / np.sqrt(np.pi)
    _, _, beta_many = probit_expectations(y, mean.detach(), var.detach(), points=200)
    assert np.allclose(beta_many.numpy(), second, rtol=1e-9)
    assert (beta > 0).all()


def test_iterations_converge_to_the_svgp_optimum():
    """Fixed Z and hyper-parameters, one batch: the damped site iterations reach the q(u) that
    maximises the ELBO (same quadrature), found by L-BFGS on the whitened q(v) = N(μ, RRᵀ)."""
    x, y = labelled(40)
    model = BernoulliDualGP(config(), blr_steps=80)
    model.add_data(x, y)
    model.fix_inducing_inputs(np.random.default_rng(1).uniform(-30, 30, (10, 2)))
    model.update()
    xs, ys = model._scaled(np.arange(40))
    z = model.inducing
    with torch.no_grad():
        k = model.covariance(z, z) + model.config.jitter * model.amplitude * torch.eye(len(z))
        chol = torch.linalg.cholesky(k)
        v = torch.linalg.solve_triangular(chol, model.covariance(z, xs), upper=False)
    mean_w = torch.zeros(len(z), dtype=torch.float64, requires_grad=True)
    sqrt_w = torch.eye(len(z), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([mean_w, sqrt_w], max_iter=500, tolerance_grad=1e-12,
                                  tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        r = sqrt_w.tril()
        var = model.amplitude.detach() - v.square().sum(0) + (r.T @ v).square().sum(0)
        expected = probit_expectations(ys, v.T @ mean_w, var)[0].sum()
        kl = 0.5 * (r.square().sum() + mean_w.square().sum() - len(z)
                    - 2 * r.diagonal().abs().log().sum())
        loss = kl - expected
        loss.backward()
        return loss
    for _ in range(3):
        optimizer.step(closure)
    r = sqrt_w.detach().tril()
    mean = chol @ mean_w.detach()
    cov = chol @ r @ r.T @ chol.T
    got = model.posterior
    assert torch.allclose(got.mean, mean, rtol=1e-6, atol=1e-6)  # L-BFGS: 1e-8
    assert torch.allclose(got.sqrt @ got.sqrt.T, cov, rtol=1e-6, atol=1e-6)


def test_learns_a_binary_field_with_memory_and_continues_after_loading(tmp_path):
    model = BernoulliDualGP(config(num_inducing=40, train_steps=5, dual={"memory_per_batch": 10}))
    batches = [labelled(80, seed) for seed in range(5)]
    for x, y in batches[:4]:
        model.add_data(x, y)
        report = model.update()
        assert report.training_failure is None
    assert report.extra["memory_size"] == 40 and report.extra["memory_leverage_mean"] > 0
    path = tmp_path / "binary.pt"
    model.save(path)
    loaded = BernoulliDualGP.load(path)
    for m in (model, loaded):
        m.add_data(*batches[4])
        m.update()
    x_test, _ = labelled(400, seed=99)
    truth = np.sin(x_test[:, 0] / 8) + np.cos(x_test[:, 1] / 10) > 0
    probability = model.predict_proba(x_test)
    assert np.array_equal(probability, loaded.predict_proba(x_test))
    assert ((probability > 0.5) == truth).mean() > 0.85
    assert ((probability > 0) & (probability < 1)).all()


def test_labels_other_than_zero_and_one_are_refused():
    model = BernoulliDualGP(config())
    with pytest.raises(InvalidBatchError, match="0 or 1"):
        model.add_data(np.zeros((2, 2)), np.array([0.0, 2.0]))
    assert model.rejections["malformed_batch"] == 1
