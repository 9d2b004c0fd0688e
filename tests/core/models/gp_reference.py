"""Reference computations for the model tests: closed forms by dense solves, stream helpers."""

import numpy as np
import torch


def smooth_field(xy):
    """A smooth test field over [-30, 30]² m (target units)."""
    return 3.0 * np.sin(xy[:, 0] / 8.0) + 2.0 * np.cos(xy[:, 1] / 10.0)


def noisy_batches(count, size, seed=0):
    """``count`` batches of ``size`` uniform samples of :func:`smooth_field`, noise sd 0.2."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.uniform(-30, 30, (size, 2))
        out.append((x, smooth_field(x) + rng.normal(0, 0.2, size)))
    return out


def fit_stream(model, batches, fixed=None):
    """Add the batches one by one with an update after each; ``fixed`` inducing inputs (world
    units) are fixed after the first batch is buffered, before the first update."""
    for i, (x, y) in enumerate(batches):
        model.add_data(x, y)
        if i == 0 and fixed is not None:
            model.fix_inducing_inputs(fixed)
        model.update()
    return model


def sgpr_posterior(model, x_world, y_world, noise=None):
    """Titsias' optimal q(u) at the model's inducing inputs from the given data, by dense solves:
    S = K Σ⁻¹ K, m = K Σ⁻¹ K_uf N⁻¹ y with Σ = K + K_uf N⁻¹ K_fu, N = diag(noise) (the model's
    noise variance for every sample unless ``noise`` gives one per sample, scaled units)."""
    x = torch.as_tensor(model.x_scaler.transform(x_world))
    y = torch.as_tensor(model.y_scaler.transform(y_world))
    z = model.inducing
    noise = model.noise.expand(len(y)) if noise is None else torch.as_tensor(noise)
    with torch.no_grad():
        k_uu = model.covariance(z, z)
        eye = torch.eye(len(z), dtype=z.dtype)
        k_uu = k_uu + model.config.jitter * k_uu.diagonal().mean() * eye
        k_uf = model.covariance(z, x)
        sigma = k_uu + (k_uf / noise) @ k_uf.T
        mean = k_uu @ torch.linalg.solve(sigma, (k_uf / noise) @ y)
        cov = k_uu @ torch.linalg.solve(sigma, k_uu)
    return mean, cov


def posterior_moments(model):
    with torch.no_grad():
        return model.posterior.mean, model.posterior.sqrt @ model.posterior.sqrt.T


def augmented_sgpr(model, anchor, anchor_chol, vector, matrix, x_world, y_world):
    """SGPR at the model's inducing inputs b on the batch plus the cached terms a = K_af Σ⁻¹ y,
    B = K_af Σ⁻¹ K_fa at the anchor inputs a (as pseudo-data with precision K_aa⁻¹ B K_aa⁻¹ and
    precision-weighted targets K_aa⁻¹ a; K_aa that of the kernel that made the cache). Dense."""
    b = model.inducing
    x = torch.as_tensor(model.x_scaler.transform(x_world))
    y = torch.as_tensor(model.y_scaler.transform(y_world))
    with torch.no_grad():
        k_aa_inv = torch.linalg.inv(anchor_chol @ anchor_chol.T)
        k_ab = model.inducing_cross_covariance(anchor, b)
        k_bb = model.inducing_cross_covariance(b, b)
        k_bf, noise = model.covariance(b, x), model.noise
        sigma = k_bb + k_ab.T @ k_aa_inv @ matrix @ k_aa_inv @ k_ab + k_bf @ k_bf.T / noise
        mean = k_bb @ torch.linalg.solve(sigma, k_ab.T @ k_aa_inv @ vector + k_bf @ y / noise)
        return mean, k_bb @ torch.linalg.solve(sigma, k_bb)
