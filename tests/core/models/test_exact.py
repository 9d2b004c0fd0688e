"""The exact GP against direct solves, its marginal likelihood, and its size limit."""

import math

import numpy as np
import pytest
import torch
from torch.distributions import MultivariateNormal

from poam_ros.models import ExactGPSizeError, MappingConfig, make_model
from poam_ros.models.exact import ExactMarginalLikelihood

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.mark.parametrize("kernel", ["attentive", "rbf"])
def test_matches_a_direct_solve(stream, kernel):
    model = make_model(MappingConfig(method="exact", kernel=kernel, train_steps=2, device="cpu",
                                     dtype="float64"))
    batches = stream(2, 40)
    for x, y in batches:
        model.add_data(x, y)
        model.update()
    x_world = np.vstack([b[0] for b in batches])
    y_world = np.concatenate([b[1] for b in batches])
    query = np.random.default_rng(5).uniform(-30, 30, (25, 2))
    x, q = (torch.as_tensor(model.x_scaler.transform(p)) for p in (x_world, query))
    y = torch.as_tensor(model.y_scaler.transform(y_world))
    with torch.no_grad():  # under the trained hyper-parameters
        k = model.covariance(x, x) + model.noise * torch.eye(len(x), dtype=torch.float64)
        k_qx = model.covariance(q, x)
        mean = k_qx @ torch.linalg.solve(k, y)
        var = model.amplitude - (k_qx * torch.linalg.solve(k, k_qx.T).T).sum(1)
    got_mean, got_std = model.predict(query)
    assert np.allclose(got_mean, model.y_scaler.inverse_mean(mean.numpy()), rtol=1e-9, atol=1e-9)
    assert np.allclose(got_std, model.y_scaler.inverse_std(var.sqrt().numpy()), rtol=1e-7)


def test_objective_is_the_negative_log_marginal_likelihood_per_sample(stream):
    model = make_model(MappingConfig(method="exact", kernel="rbf", train_steps=0, device="cpu",
                                     dtype="float64"))
    model.add_data(*stream(1, 30)[0])
    model.update()
    objective = ExactMarginalLikelihood(model)
    with torch.no_grad():
        x, y = objective.x, objective.y
        k = model.covariance(x, x) + model.noise * torch.eye(len(x), dtype=torch.float64)
        expected = -MultivariateNormal(torch.zeros_like(y), k).log_prob(y) / len(y)
        assert torch.allclose(objective.loss(), expected, rtol=1e-10)
    assert math.isfinite(float(expected))


def test_refuses_data_beyond_its_limit(stream):
    model = make_model(MappingConfig.from_dict(method="exact", exact={"max_samples": 50},
                                               device="cpu"))
    (x1, y1), (x2, y2) = stream(2, 40)
    model.add_data(x1, y1)
    model.add_data(x1[:30], y1[:30])  # duplicates are not counted
    with pytest.raises(ExactGPSizeError, match="exact.max_samples is 50"):
        model.add_data(x2, y2)
    assert model.num_samples == 40
    model.add_data(x2[:10], y2[:10])
    assert model.update().num_inducing == 50
    with pytest.raises(ValueError, match="no inducing inputs"):
        model.fix_inducing_inputs(x1)
