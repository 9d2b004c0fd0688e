"""The std after planned samples: the exact GP's posterior with them added, in closed form."""

import numpy as np
import pytest
import torch

from poam_ros.mapping.loop import MappingLoop
from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.prediction import ConditioningUnsupportedError

pytestmark = pytest.mark.usefixtures("single_thread")


def fitted(method, stream, **options):
    model = make_model(MappingConfig(method=method, kernel="rbf", train_steps=2, device="cpu",
                                     dtype="float64", **options))
    for x, y in stream(2, 40):
        model.add_data(x, y)
        model.update()
    return model


def test_equals_the_exact_posterior_with_the_planned_samples_added(stream):
    model = fitted("exact", stream)
    rng = np.random.default_rng(3)
    query, planned = rng.uniform(-30, 30, (25, 2)), rng.uniform(-30, 30, (12, 2))
    # The exact GP of the fitted samples and the planned ones, under the same
    # hyper-parameters, by a direct solve: a − k_qᵀ (K + σ²I)⁻¹ k_q.
    x_all = np.vstack([model.buffer.x, planned])
    x, q = (torch.as_tensor(model.x_scaler.transform(p)) for p in (x_all, query))
    with torch.no_grad():
        k = model.covariance(x, x) + model.noise * torch.eye(len(x), dtype=torch.float64)
        k_qx = model.covariance(q, x)
        var = model.amplitude - (k_qx * torch.linalg.solve(k, k_qx.T).T).sum(1)
        expected = model.y_scaler.inverse_std((var + model.noise).sqrt().numpy())
    got = MappingLoop(model).uncertainty(query, planned)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    assert (got < MappingLoop(model).uncertainty(query)).all()


def test_a_planned_sample_at_the_point_itself_in_closed_form(stream):
    """One noisy sample at x itself turns the field's variance v into v σ² / (v + σ²)."""
    model = fitted("poam", stream, num_inducing=30)
    points = np.random.default_rng(4).uniform(-30, 30, (5, 2))
    _, std = model.predict(points)
    v = (std / model.y_scaler.std) ** 2  # the field's variance in scaled units
    noise = float(model.noise.detach())
    expected = model.y_scaler.inverse_std(np.sqrt(v * noise / (v + noise)))
    got = [model.prediction.conditioned_std(p[None], p[None])[0] for p in points]
    np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_samples_far_beyond_the_lengthscale_change_nothing(stream):
    model = fitted("poam", stream, num_inducing=30)
    query = np.random.default_rng(5).uniform(-30, 30, (20, 2))
    far = np.array([[5000.0, 5000.0], [-5000.0, 4000.0]])
    loop = MappingLoop(model)
    np.testing.assert_allclose(loop.uncertainty(query, far), loop.uncertainty(query),
                               rtol=1e-9)


def test_a_method_that_cannot_condition_answers_without_the_plans(stream):
    model = make_model(MappingConfig(method="dual-gp-bernoulli", kernel="rbf", train_steps=1,
                                     device="cpu", dtype="float64"))
    x, y = stream(1, 40)[0]
    model.add_data(x, (y > 0).astype(float))
    model.update()
    loop = MappingLoop(model)
    assert not loop.conditions
    query = x[:5]
    np.testing.assert_array_equal(loop.uncertainty(query, x[5:9]), loop.uncertainty(query))
    with pytest.raises(ConditioningUnsupportedError, match="dual-gp-bernoulli"):
        model.prediction.conditioned_std(query, x[5:9])


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA device: torch sees none here")
def test_cpu_and_cuda_condition_alike(stream, tmp_path):
    """A model saved on the CPU and loaded on CUDA: the same conditioned std, to round-off."""
    model = fitted("poam", stream, num_inducing=30)
    model.save(tmp_path / "model.pt")
    on_cuda = load_model(tmp_path / "model.pt", device="cuda")
    rng = np.random.default_rng(6)
    query, planned = rng.uniform(-30, 30, (50, 2)), rng.uniform(-30, 30, (20, 2))
    np.testing.assert_allclose(on_cuda.prediction.conditioned_std(query, planned),
                               model.prediction.conditioned_std(query, planned), rtol=1e-9)
