"""SSGP and SSGP++ (Bui et al. 2017) against SGPR closed forms, and their training rule."""

import numpy as np
import pytest
import torch
from gp_reference import fit_stream, posterior_moments, sgpr_posterior

from poam_ros.models import MappingConfig, NumericalError, make_model
from poam_ros.models.batch_terms import DenseCross
from poam_ros.models.posterior import StreamingPrior, VariationalPosterior, streaming_posterior

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(num_inducing=15, train_steps=0, device="cpu", initial_noise_variance=0.1,
                    dtype="float64")
    return MappingConfig.from_dict(settings).replace(**changes)


@pytest.mark.parametrize("method, kernel", [("ssgp", "attentive"), ("ssgp", "rbf"),
                                            ("ssgp++", "rbf"), ("poam-var-ssgp", "rbf")])
def test_streaming_equals_batch_posterior_with_fixed_inducing_inputs(stream, method, kernel):
    batches = stream(4, 40)
    fixed = np.random.default_rng(1).uniform(-30, 30, (25, 2))
    model = fit_stream(make_model(config(method=method, kernel=kernel)), batches, fixed)
    mean, cov = sgpr_posterior(model, np.vstack([b[0] for b in batches]),
                               np.concatenate([b[1] for b in batches]))
    streamed_mean, streamed_cov = posterior_moments(model)
    assert torch.allclose(streamed_mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(streamed_cov, cov, rtol=1e-7, atol=1e-9)


def test_update_is_sgpr_on_the_augmented_data_set(stream):
    """Bui et al.'s q(b): the batch (noise σ²) plus pseudo-observations of the old inducing
    outputs a with precision S_a⁻¹ − K'_aa⁻¹ and precision-weighted targets S_a⁻¹ m_a, at new
    inducing inputs b ≠ a (pivoted Cholesky moves them). Dense inverses throughout."""
    model = make_model(config(method="ssgp++", num_inducing=12))
    first, second = stream(2, 40)
    model.add_data(*first)
    model.update()
    a, old_mean, old_cov = model.inducing, *posterior_moments(model)
    model.add_data(*second)
    model.update()
    b = model.inducing
    assert not torch.equal(a, b)
    x = torch.as_tensor(model.x_scaler.transform(second[0]))
    y = torch.as_tensor(model.y_scaler.transform(second[1]))
    with torch.no_grad():
        noise = model.noise
        k_bb = model.inducing_cross_covariance(b, b)  # with the jitter, as the model factorises
        k_aa = model.inducing_cross_covariance(a, a)
        k_ab = model.inducing_cross_covariance(a, b)
        k_bf = model.covariance(b, x)
        site_precision = torch.linalg.inv(old_cov) - torch.linalg.inv(k_aa)
        site_shift = torch.linalg.solve(old_cov, old_mean)
        sigma = k_bb + k_bf @ k_bf.T / noise + k_ab.T @ site_precision @ k_ab
        mean = k_bb @ torch.linalg.solve(sigma, k_bf @ y / noise + k_ab.T @ site_shift)
        cov = k_bb @ torch.linalg.solve(sigma, k_bb)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(got_cov, cov, rtol=1e-6, atol=1e-8)


def test_trained_update_ends_at_the_collapsed_optimum(stream):
    """After the Adam steps on the online ELBO, q(b) is re-optimised at the final θ and b, and
    becomes (with K_bb of the final θ) the prior of the next batch."""
    model = make_model(config(method="ssgp", train_steps=3, kernel="rbf"))
    first, second = stream(2, 40)
    model.add_data(*first)
    model.update()
    lengthscale = model.kernel.base_kernel.lengthscale.item()
    model.add_data(*second)
    model.update()
    assert model.kernel.base_kernel.lengthscale.item() != lengthscale
    x = torch.as_tensor(model.x_scaler.transform(second[0]))
    y = torch.as_tensor(model.y_scaler.transform(second[1]))
    with torch.no_grad():
        z, prior = model.inducing, model.streamed_from
        chol = model.k_uu_cholesky(z)
        terms = DenseCross(model.covariance(z, x)).whitened_terms(chol, y)
        expected = streaming_posterior(chol, terms, model.noise, prior,
                                       model.inducing_cross_covariance(prior.inducing, z), 4)
    assert torch.allclose(model.posterior.mean, expected.mean, rtol=1e-9, atol=1e-12)
    assert torch.equal(model.prior.inducing, z) and torch.allclose(model.prior.prior_chol, chol)


def test_ssgp_optimises_its_inducing_inputs_and_ssgp_plus_plus_keeps_pivots(stream):
    first, second = stream(2, 40)
    for method, moved in (("ssgp", True), ("ssgp++", False)):
        model = make_model(config(method=method, train_steps=2, kernel="rbf"))
        model.add_data(*first)
        model.update()
        old = {tuple(p) for p in model.inducing_inputs.round(9)}
        model.add_data(*second)
        model.update()
        candidates = old | {tuple(p) for p in second[0].round(9)}
        inside = {tuple(p) for p in model.inducing_inputs.round(9)} <= candidates
        assert inside != moved, method


def test_ssgp_initialises_from_old_inducing_inputs_and_new_data(stream):
    first, second = stream(2, 40)
    model = make_model(config(method="ssgp", ssgp={"new_inducing_fraction": 0.25}, num_inducing=12))
    model.add_data(*first)
    model.update()
    old = {tuple(p) for p in model.inducing_inputs.round(9)}
    assert len(old) == 12 and old <= {tuple(p) for p in first[0].round(9)}
    model.add_data(*second)
    model.update()
    new = [tuple(p) for p in model.inducing_inputs.round(9)]
    assert sum(p in old for p in new) == 9  # ⌈0.25 · 12⌉ = 3 drawn from the batch
    assert sum(p in {tuple(q) for q in second[0].round(9)} for p in new) == 3


def test_factorising_a_singular_old_posterior_escalates_jitter_or_reports():
    eye = torch.eye(4, dtype=torch.float64)
    sqrt = torch.zeros(4, 4, dtype=torch.float64)
    sqrt[:, 0] = 1.0  # S = 1 1ᵀ, rank one
    posterior = VariationalPosterior(torch.zeros(4, dtype=torch.float64), sqrt, torch.tensor(0.0))
    prior = StreamingPrior.from_posterior(torch.zeros(4, 2), posterior, eye, 1e-6, 4)
    assert torch.isfinite(prior.cov_chol).all()
    with pytest.raises(NumericalError, match="S_a of the old posterior"):
        StreamingPrior.from_posterior(torch.zeros(4, 2), posterior, eye, 0.0, 0)

