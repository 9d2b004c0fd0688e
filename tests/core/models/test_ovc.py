"""OVC and OVC++ (Maddox et al. 2021): SGPR on the augmented data set, with each batch kept at the
noise variance of its time; POAM, by contrast, re-weights every sample with the latest noise."""

import numpy as np
import pytest
import torch
from gp_reference import augmented_sgpr, posterior_moments, sgpr_posterior

from poam_ros.models import MappingConfig, make_model

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(num_inducing=15, train_steps=0, device="cpu", kernel="rbf", dtype="float64")
    return MappingConfig(**{**settings, **changes})


@pytest.mark.parametrize("method, per_batch_noise", [
    ("ovc++", True), ("ovc", True), ("ssgp++", True), ("poam-var-ssgp", True), ("poam", False)])
def test_noise_weighting_of_old_batches(stream, method, per_batch_noise):
    """Fixed inducing inputs, the noise variance changed before each update (as an M-step
    would): OVC and the streaming update equal SGPR with heteroscedastic noise (each batch at
    its noise); POAM equals SGPR with the latest noise for all samples."""
    batches, noises = stream(3, 30), (0.5, 0.2, 0.05)
    model = make_model(config(method=method))
    model.add_data(*batches[0])
    model.fix_inducing_inputs(np.random.default_rng(1).uniform(-30, 30, (20, 2)))
    for i, ((x, y), noise) in enumerate(zip(batches, noises)):
        if i:
            model.add_data(x, y)
        model.likelihood.noise = noise
        model.update()
    sample_noise = np.repeat(noises, 30) if per_batch_noise else None
    mean, cov = sgpr_posterior(model, np.vstack([b[0] for b in batches]),
                               np.concatenate([b[1] for b in batches]), sample_noise)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(got_cov, cov, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["ovc++", "ovc"])
def test_conditioning_is_sgpr_on_the_augmented_data(stream, method):
    """New pivots b ≠ a, the noise changed in between; for OVC the first M-step also moved the
    inducing inputs and changed the kernel, and the cache is carried from the pivots a of the
    E-step that stored it, with that E-step's K_aa."""
    model = make_model(config(method=method, num_inducing=12, train_steps=3))
    first, second = stream(2, 40)
    model.add_data(*first)
    model.update()
    moved = not torch.equal(model.inducing, model.data_inducing)
    assert moved == (method == "ovc")
    state = (model.data_inducing, model.data_chol, model.data_vector, model.data_matrix)
    model.config = model.config.replace(train_steps=0)
    model.likelihood.noise = 0.3
    model.add_data(*second)
    model.update()
    assert not torch.equal(state[0], model.inducing)
    mean, cov = augmented_sgpr(model, *state, *second)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(got_cov, cov, rtol=1e-6, atol=1e-8)


def test_ovc_plus_plus_inducing_inputs_are_pivots_and_stay(stream):
    first, _ = stream(2, 40)
    model = make_model(config(method="ovc++", train_steps=3))
    model.add_data(*first)
    model.update()
    assert torch.equal(model.inducing, model.data_inducing)
    scaled = set(map(tuple, model.x_scaler.transform(first[0]).round(9)))
    assert set(map(tuple, model.inducing.numpy().round(9))) <= scaled
