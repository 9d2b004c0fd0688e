"""FULL, PAM and SVGP: the batch references read all data at every update."""

import numpy as np
import pytest
import torch
from gp_reference import fit_stream, posterior_moments, sgpr_posterior

from poam_ros.inducing import pivoted_cholesky
from poam_ros.models import MappingConfig, make_model

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(num_inducing=15, train_steps=0, device="cpu", kernel="rbf", dtype="float64")
    return MappingConfig(**{**settings, **changes})


def all_data(batches):
    return np.vstack([b[0] for b in batches]), np.concatenate([b[1] for b in batches])


def test_full_is_the_sgpr_posterior_of_all_data_at_its_inducing_inputs(stream):
    batches = stream(3, 30)
    model = fit_stream(make_model(config(method="full")), batches)
    mean, cov = sgpr_posterior(model, *all_data(batches))
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(got_cov, cov, rtol=1e-7, atol=1e-9)


def test_full_equals_pam_e_step_on_the_same_inducing_inputs(stream):
    batches = stream(3, 30)
    full = fit_stream(make_model(config(method="full")), batches)
    pam = make_model(config(method="pam"))
    pam.add_data(*batches[0])
    pam.fix_inducing_inputs(full.inducing_inputs)
    for x, y in batches[1:]:
        pam.add_data(x, y)
    pam.update()  # one E-step on all data
    for got, want in zip(posterior_moments(pam), posterior_moments(full)):
        assert torch.allclose(got, want, rtol=1e-9, atol=1e-11)
    query = np.array([[0.0, 0.0], [10.0, -20.0]])
    assert np.allclose(pam.predict(query)[0], full.predict(query)[0], rtol=1e-9)


def test_pam_pivots_all_data(stream):
    batches = stream(3, 30)
    model = fit_stream(make_model(config(method="pam")), batches)
    x = torch.as_tensor(model.x_scaler.transform(all_data(batches)[0]))
    with torch.no_grad():
        pcd = pivoted_cholesky(model.covariance(x, x).numpy(), 15, model.config.pcd_tolerance)
    assert torch.equal(model.inducing, x[pcd.pivots])


def test_svgp_starts_from_the_prior_and_trains_everything(stream):
    first, second = stream(2, 30)
    model = make_model(config(method="svgp"))
    model.add_data(*first)
    model.update()  # train_steps = 0: the initial state
    scaled = set(map(tuple, model.x_scaler.transform(first[0]).round(9)))
    assert set(map(tuple, model.inducing.numpy().round(9))) <= scaled
    assert torch.equal(model.mean_w, torch.zeros(15, dtype=torch.float64))
    assert torch.equal(model.sqrt_w, torch.eye(15, dtype=torch.float64))
    z, lengthscale = model.inducing.clone(), model.kernel.base_kernel.lengthscale.item()
    model.config = model.config.replace(train_steps=3)
    model.add_data(*second)
    model.update()
    assert not torch.equal(model.inducing, z)
    assert model.mean_w.abs().min() > 0
    assert model.kernel.base_kernel.lengthscale.item() != lengthscale
    with torch.no_grad():  # the predictive q(u) is the whitened one under the final kernel
        chol = model.k_uu_cholesky(model.inducing)
        assert torch.allclose(model.posterior.mean, chol @ model.mean_w, rtol=1e-12)
