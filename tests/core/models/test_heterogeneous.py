"""Heterogeneous channels (CMOGP Sec. 3.4): the likelihoods' quadrature against closed forms and
Monte Carlo, the non-Gaussian E-step at the bound's optimum, shared latents helping a binary
channel, label checks and the state file."""

import numpy as np
import pytest
import torch
from gp_reference import fit_stream
from scipy.special import ndtr

from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.cmogp import CMOGP, CMOGPBui, ContinualBound
from poam_ros.models.likelihoods import LIKELIHOODS, Gaussian
from poam_ros.models.lmc import expected_log_likelihood, kl_to_prior, whitened_posterior
from poam_ros.models.poam_mt import PoamMT
from poam_ros.models.posterior import VariationalPosterior
from poam_ros.models.samples import InvalidBatchError
from poam_ros.params import ConfigError

pytestmark = pytest.mark.usefixtures("single_thread")

MULTI = (CMOGP, CMOGPBui, PoamMT)
QUERY = np.array([[0.0, 0.0], [12.5, -3.0], [-29.0, 29.0], [20.0, 20.0], [5.0, -17.0]])


def config(likelihoods, **changes):
    settings = dict(kernel="rbf", num_inducing=20, train_steps=0, device="cpu",
                    initial_noise_variance=0.1, dtype="float64", num_latents=1,
                    channel_min_samples=10, channel_likelihoods=list(likelihoods))
    return MappingConfig.from_dict(settings).replace(**changes)


def latent(xy):
    return np.sin(xy[:, 0] / 9.0) + np.cos(xy[:, 1] / 11.0)


def mixed_stream(kind, count, size, seed=0, every=1):
    """Batches (x, y): a Gaussian channel of the latent (noise sd 0.1) and a ``kind`` channel
    of 1.5 × the latent (labels by the probit, or Poisson counts of e^f), on every
    ``every``-th sample."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.uniform(-30, 30, (size, 2))
        f = latent(x)
        other = (rng.uniform(size=size) < ndtr(1.5 * f)).astype(float) if kind == "bernoulli" \
            else rng.poisson(np.exp(1.5 * f)).astype(float)
        other[np.arange(size) % every != 0] = np.nan
        out.append((x, np.column_stack([2.0 * f + rng.normal(0, 0.1, size), other])))
    return out


# ---------------------------------------------------------------- the likelihoods
def test_quadrature_of_a_gaussian_channel_is_its_closed_form():
    rng = np.random.default_rng(0)
    y, mean = (torch.as_tensor(rng.normal(size=50)) for _ in range(2))
    var, noise = torch.as_tensor(rng.uniform(0.01, 3.0, 50)), torch.tensor(0.3, dtype=y.dtype)
    expected, alpha, beta = LIKELIHOODS["gaussian"].expectations(y, mean, var, noise)
    assert torch.allclose(expected, Gaussian.closed_form(y, mean, var, noise), rtol=1e-12)
    assert torch.allclose(alpha, (y - mean) / noise, rtol=1e-10, atol=1e-12)
    assert torch.allclose(beta, torch.full_like(beta, 1.0 / 0.3), rtol=1e-10)


@pytest.mark.parametrize("kind", ["bernoulli", "poisson"])
def test_expected_log_likelihood_against_monte_carlo(kind):
    """E_q[log p(y | f)] and its derivatives α̂ = E[g], β̂ = −E[∂g/∂f] (Bonnet, Price) against
    10⁶ draws of f, within five standard errors."""
    likelihood = LIKELIHOODS[kind]
    y = torch.tensor([0.0, 1.0, 1.0, 0.0] if kind == "bernoulli" else [0.0, 2.0, 5.0, 1.0],
                     dtype=torch.float64)
    mean = torch.tensor([0.3, -1.2, 0.8, 2.0], dtype=torch.float64)
    var = torch.tensor([0.5, 2.0, 0.1, 1.0], dtype=torch.float64)
    one = torch.ones((), dtype=torch.float64)
    expected, alpha, beta = likelihood.expectations(y, mean, var, one)
    generator = torch.Generator().manual_seed(0)
    f = (mean + var.sqrt() * torch.randn(1_000_000, 4, generator=generator,
                                         dtype=torch.float64)).requires_grad_(True)
    logp = likelihood.log_density(y, f, one)
    slope = torch.autograd.grad(logp.sum(), f, create_graph=True)[0]
    curvature = torch.autograd.grad(slope.sum(), f)[0]
    for ours, draws in ((expected, logp), (alpha, slope), (beta, -curvature)):
        draws = draws.detach()
        error = draws.std(0) / 1000.0
        assert ((ours - draws.mean(0)).abs() <= 5 * error + 1e-12).all()


def test_poisson_quadrature_is_its_closed_form():
    """With the log link E_q[y f − e^f] = y μ − e^{μ + v/2}: the quadrature's error is small."""
    y = torch.tensor([0.0, 3.0, 7.0], dtype=torch.float64)
    mean, var = torch.tensor([0.1, 1.0, 2.0], dtype=torch.float64), torch.tensor(
        [0.2, 0.5, 0.05], dtype=torch.float64)
    expected, alpha, beta = LIKELIHOODS["poisson"].expectations(y, mean, var, torch.ones(()))
    rate = (mean + 0.5 * var).exp()
    assert torch.allclose(expected, y * mean - rate - torch.lgamma(y + 1), rtol=1e-9)
    assert torch.allclose(alpha, y - rate, rtol=1e-9)
    assert torch.allclose(beta, rate, rtol=1e-9)


# ---------------------------------------------------------------- the E-step
@pytest.mark.parametrize("kind", ["bernoulli", "poisson"])
@pytest.mark.parametrize("cls", [CMOGP, CMOGPBui])
def test_cmogp_e_step_is_a_stationary_point_of_the_bound(cls, kind):
    """Q = 2, a Gaussian and a ``kind`` channel, a continual prior, θ trained between: the site
    iterations end where the continual bound (Eq. 24, quadrature for the non-Gaussian channel)
    has no gradient in the factors' means and square roots."""
    batches = mixed_stream(kind, 2, 60, every=2)
    model = fit_stream(cls(config(["gaussian", kind], num_latents=2, train_steps=3,
                                  cmogp={"sweeps": 300}), output_dim=2), batches)
    x, y = (torch.as_tensor(a) for a in (model.x_scaler.transform(batches[1][0]),
                                         model.y_scaler.transform(batches[1][1])))
    size, posterior = len(model.inducing), model.posterior
    mean = posterior.mean.clone().requires_grad_(True)
    blocks = [posterior.sqrt[q * size:(q + 1) * size, q * size:(q + 1) * size].clone()
              .requires_grad_(True) for q in range(2)]
    model.posterior = VariationalPosterior(mean, torch.block_diag(*blocks), sum(
        2.0 * torch.linalg.slogdet(b)[1] for b in blocks))
    bound = ContinualBound(model, model.streamed_from, x, y).bound()
    for grad in torch.autograd.grad(bound, [mean, *blocks]):
        assert grad.abs().max() < 1e-5 * abs(bound.item())


@pytest.mark.parametrize("kind", ["bernoulli", "poisson"])
def test_poam_mt_e_step_is_the_optimum_of_the_batch_elbo(kind):
    """The first batch: the joint q(u) from the iterated sites maximises the ELBO
    Σ E_q[log p_d(y | f_d)] − KL(q(u) ‖ p(u)) with the quadrature."""
    batches = mixed_stream(kind, 1, 60, every=2)
    model = fit_stream(PoamMT(config(["gaussian", kind], num_latents=2), output_dim=2), batches)
    x, y = (torch.as_tensor(a) for a in (model.x_scaler.transform(batches[0][0]),
                                         model.y_scaler.transform(batches[0][1])))
    z, kernel = model.inducing, model.kernel
    mean = model.posterior.mean.clone().requires_grad_(True)
    sqrt = torch.linalg.cholesky(model.posterior.sqrt @ model.posterior.sqrt.T
                                 ).requires_grad_(True)
    chols = model.latent_choleskys(z)
    mean_w, sqrt_w = whitened_posterior(chols, mean, sqrt)
    k_uf = [kernel.latent_covariance(q, z, x) for q in range(2)]
    elbo = (expected_log_likelihood(chols, k_uf, kernel.scales, kernel.mixing, model.noise, y,
                                    mean_w, sqrt_w, model.likelihoods)
            - kl_to_prior(chols, mean_w, sqrt_w, torch.linalg.slogdet(sqrt @ sqrt.T)[1]))
    for grad in torch.autograd.grad(elbo, [mean, sqrt]):
        assert grad.abs().max() < 1e-5 * abs(elbo.item())


@pytest.mark.parametrize("cls", MULTI)
def test_shared_latents_improve_the_binary_channel(cls):
    """A dense Gaussian channel and sparse labels of the same latent: the two-channel model
    predicts the labels' probability better (expected NLPD against the true P(y = 1) on a grid)
    than the labels' own one-channel model."""
    batches = mixed_stream("bernoulli", 4, 60, seed=1, every=4)
    axis = np.linspace(-28, 28, 20)
    grid = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    truth = ndtr(1.5 * latent(grid))

    def nlpd(prob):
        prob = np.clip(prob, 1e-12, 1 - 1e-12)
        return -np.mean(truth * np.log(prob) + (1 - truth) * np.log(1 - prob))

    settings = dict(train_steps=20, lr_hyper=0.05, channel_min_samples=10)
    joint = fit_stream(cls(config(["gaussian", "bernoulli"], **settings), output_dim=2),
                       batches)
    alone = cls(config(["bernoulli"], **settings))
    for x, y in batches:
        seen = np.isfinite(y[:, 1])
        alone.add_data(x[seen], y[seen, 1])
        alone.update()
    shared, single = nlpd(joint.predict_response(grid)[:, 1]), nlpd(alone.predict_response(grid))
    assert shared < 0.9 * single


# ---------------------------------------------------------------- intake and state
def test_labels_and_counts_are_checked_and_not_scaled():
    model = CMOGP(config(["gaussian", "bernoulli", "poisson"], channel_min_samples=2),
                  output_dim=3)
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    for bad in ([[1.0, 0.5, 1.0]] * 3, [[1.0, 1.0, -1.0]] * 3, [[1.0, 1.0, 1.5]] * 3):
        with pytest.raises(InvalidBatchError):
            model.add_data(x, np.array(bad))
    assert model.rejections["malformed_batch"] == 3
    model.add_data(x, np.array([[3.0, 1.0, 4.0], [5.0, 0.0, 0.0], [4.0, np.nan, 2.0]]))
    model.update()
    scalers = model.y_scaler.scalers
    assert (scalers[1].mean, scalers[1].std, scalers[2].mean, scalers[2].std) == (0, 1, 0, 1)
    assert scalers[0].mean == pytest.approx(4.0)
    diagnostics = model.diagnostics()
    assert np.isfinite(diagnostics["noise_0"]) and np.isnan(diagnostics["noise_1"])


def test_declared_likelihoods_must_match_the_channels():
    with pytest.raises(ConfigError, match="channel_likelihoods"):
        CMOGP(config(["gaussian", "bernoulli"]), output_dim=3)
    with pytest.raises(ConfigError, match="channel_likelihoods"):
        config(["gaussian", "binary"])
    with pytest.raises(ConfigError, match="dual-gp maps 1 channel"):
        make_model(config(["bernoulli"], method="dual-gp"))
    assert make_model(config([], method="dual-gp-bernoulli")).likelihoods == [
        LIKELIHOODS["bernoulli"]]


@pytest.mark.parametrize("cls", MULTI)
def test_state_round_trip_with_a_binary_channel_continues_exactly(cls, tmp_path):
    batches = mixed_stream("bernoulli", 3, 50, every=2)
    model = cls(config(["gaussian", "bernoulli"], num_latents=2, train_steps=2,
                       batch_size=32), output_dim=2)
    fit_stream(model, batches[:2])
    path = tmp_path / "map.pt"
    model.save(path)
    loaded = load_model(path)
    assert loaded.likelihoods == model.likelihoods
    for m in (model, loaded):
        m.add_data(*batches[2])
        assert m.update().training_failure is None
    for a, b in zip(model.predict(QUERY, covariance=True), loaded.predict(QUERY, covariance=True)):
        assert np.array_equal(a, b)
    prob = model.predict_response(QUERY)[:, 1]
    assert ((prob > 0) & (prob < 1)).all()
