"""CPU and CUDA compute the same functions at fixed parameters (skipped, and said so, where torch
sees no CUDA device).

Trained maps are compared by accuracy, not bit for bit: Adam normalises tiny gradient
differences, so round-off grows through training. At fixed parameters (a model saved on the
CPU and loaded on either device, the same random draws) the kernel, the ELBO and its gradient,
an E-step and the prediction agree to round-off.
"""

import numpy as np
import pytest
import torch

from poam_ros.benchmark.dispatch import profile_device_update
from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.objectives import FixedPosteriorElbo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA device: torch sees none here")


@pytest.fixture
def saved(tmp_path, small_config, stream):
    model = make_model(small_config.replace(device="cpu"))
    for x, y in stream(3, 150):
        model.add_data(x, y)
        model.update()
    path = tmp_path / "model.pt"
    model.save(path)
    return path, stream(1, 120)[0]


def both(path):
    return load_model(path, device="cpu"), load_model(path, device="cuda")


def close(a, b, rtol=1e-9, atol=1e-10):
    return torch.allclose(a.detach().cpu(), b.detach().cpu(), rtol=rtol, atol=atol)


def test_kernel_values_agree(saved):
    cpu, gpu = both(saved[0])
    x = torch.rand(300, 2, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        assert close(cpu.covariance(x, x), gpu.covariance(x.cuda(), x.cuda()))


def test_elbo_value_and_gradient_agree(saved):
    cpu, gpu = both(saved[0])
    results = []
    for model in (cpu, gpu):
        loss = FixedPosteriorElbo(model).loss()  # the same draw from the same generator state
        loss.backward()
        grads = [p.grad for p in model.kernel.parameters() if p.grad is not None]
        results.append((loss, grads))
    assert close(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        assert close(a, b, rtol=1e-7, atol=1e-9)


def updated_alike(path, x, y):
    """The model saved at ``path`` loaded on both devices and updated once more with (x, y)
    without training: the same inducing inputs and predictions to round-off. Returns both."""
    cpu, gpu = both(path)
    for model in (cpu, gpu):
        model.config = model.config.replace(train_steps=0)
        model.add_data(x, y)
        model.update()
    assert torch.equal(cpu.inducing, gpu.inducing.cpu())
    query = np.random.default_rng(0).uniform(-30, 30, (500, 2))
    for a, b in zip(cpu.predict(query), gpu.predict(query)):
        assert np.abs(a - b).max() < 1e-6
    return cpu, gpu


def test_an_update_without_training_and_its_prediction_agree(saved):
    path, (x, y) = saved
    cpu, gpu = updated_alike(path, x, y)
    assert close(cpu.posterior.mean, gpu.posterior.mean, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("method", ["vips", "poam-vips", "oips", "poam-oips", "cv", "dual-gp",
                                    "poam-mt", "cmogp", "ovc++", "ssgp++"])
def test_each_method_updates_alike_on_both_devices(method, tmp_path, small_config, stream):
    """Every online method, trained on the CPU and saved, then updated once more without
    training on either device: the same inducing inputs and the same map to round-off."""
    model = make_model(small_config.replace(method=method))
    for x, y in stream(3, 150):
        model.add_data(x, y)
        model.update()
    path = tmp_path / "model.pt"
    model.save(path)
    updated_alike(path, *stream(1, 120)[0])


def test_the_device_profile_sees_launches_and_busy_time():
    profile = profile_device_update(MappingConfig(num_inducing=100, train_steps=3, device="cuda"),
                                    num_samples=600, batch=60, updates=1)
    assert profile["launches"] > 100 and profile["waits"] >= 1
    assert 0 < profile["gpu_busy"] < profile["update"]


def test_trained_maps_agree_within_seed_noise(small_config, stream, field):
    """The same stream on both devices, with training: the maps' errors agree to well within
    the error itself (they are not bit-identical)."""
    batches = stream(4, 150)
    query = np.random.default_rng(1).uniform(-30, 30, (1000, 2))
    errors = []
    for device in ("cpu", "cuda"):
        model = make_model(small_config.replace(device=device))
        for x, y in batches:
            model.add_data(x, y)
            model.update()
        errors.append(np.sqrt(np.mean((model.predict(query)[0] - field(query)) ** 2)))
    assert abs(errors[0] - errors[1]) < 0.1 * errors[0]
