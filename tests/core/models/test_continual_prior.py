"""cmogp's continual prior (CMOGP Sec. 2.2-2.3, Eqs. 7 and 10) against closed forms, and
cmogp-bui's streaming factor (Bui et al. 2017) where the two agree and where they do not."""

import numpy as np
import pytest
import torch
from gp_reference import fit_stream
from test_multitask import QUERY, channel_stream, config, scaled_data

from poam_ros.models.cmogp import CMOGP, CMOGPBui, ContinualBound
from poam_ros.models.elbo import online_elbo
from poam_ros.models.lmc import continual_prior, old_site_term, whitened_posterior
from poam_ros.models.posterior import StreamingPrior, VariationalPosterior

pytestmark = pytest.mark.usefixtures("single_thread")


def one_channel(count, size, seed=0):
    return [(x, y[:, 0]) for x, y in channel_stream(count, size, seed=seed)]


def moments(model):
    with torch.no_grad():
        return model.posterior.mean.clone(), model.posterior.sqrt @ model.posterior.sqrt.T


def two_batches(cls, z_old, z_new, batches, **changes):
    """Batch 0 at the fixed inducing inputs z_old, batch 1 at z_new (world units), θ fixed."""
    model = cls(config(channel_min_samples=len(batches[0][0]), **changes))
    fit_stream(model, batches[:1], z_old)
    old = moments(model)
    model.fix_inducing_inputs(z_new)
    fit_stream(model, batches[1:])
    return model, old


def kernel_matrices(model, a, b):
    """K_aa, K_ab, K_bb of latent 0 with the models' jitter on the diagonals."""
    with torch.no_grad():
        return (model.latent_inducing_cross(0, a, a), model.latent_inducing_cross(0, a, b),
                model.latent_inducing_cross(0, b, b))


def test_continual_prior_at_the_same_inducing_inputs_is_the_old_posterior():
    """Z_new = Z_old (with K'_aa's jitter in K_ab): q̃ = q_old."""
    model = fit_stream(CMOGP(config()), one_channel(1, 40))
    with torch.no_grad():
        prior = model._continual_priors(model.inducing)[0]
        mean, cov = moments(model)
        carried = prior.cov_chol @ prior.cov_chol.T
    assert torch.allclose(prior.mean, mean, rtol=1e-9, atol=1e-10)
    assert torch.allclose(carried, cov, rtol=1e-7, atol=1e-10)


def test_continual_prior_is_the_predictive_of_the_old_posterior():
    """Against the dense predictive mean K_ba K_aa⁻¹ m and covariance at other inputs."""
    rng = np.random.default_rng(3)
    a, b = torch.as_tensor(rng.uniform(-1, 1, (6, 2))), torch.as_tensor(rng.uniform(-1, 1, (4, 2)))
    kernel = lambda x1, x2: torch.exp(-0.5 * torch.cdist(x1, x2).square() / 0.3)  # noqa: E731
    k_aa = kernel(a, a) + 1e-6 * torch.eye(6, dtype=a.dtype)
    sqrt = torch.as_tensor(rng.normal(size=(6, 6))) * 0.1
    cov = sqrt @ sqrt.T + 1e-3 * torch.eye(6, dtype=a.dtype)
    m = torch.as_tensor(rng.normal(size=6))
    prior = StreamingPrior(a, m, torch.linalg.cholesky(cov), torch.linalg.cholesky(k_aa))
    mean, correction = continual_prior(prior, kernel(a, b))
    proj = torch.linalg.solve(k_aa, kernel(a, b))
    assert torch.allclose(mean, proj.T @ m)
    assert torch.allclose(correction, proj.T @ (cov - k_aa) @ proj)


def test_one_batch_is_sgpr():
    """One channel, all data in one batch, the selected Z: Titsias' optimal q(u)."""
    (x, y), = one_channel(1, 120)
    model = fit_stream(CMOGP(config(num_inducing=30, channel_min_samples=120)), [(x, y)])
    xs, ys = scaled_data(model, [(x, y)])
    z, noise = model.inducing, model.noise[0]
    with torch.no_grad():
        k_uu = model.latent_inducing_cross(0, z, z)
        k_uf = model.kernel.latent_covariance(0, z, xs)
        sigma = k_uu + k_uf @ k_uf.T / noise
        mean = k_uu @ torch.linalg.solve(sigma, k_uf @ ys[:, 0]) / noise
        cov = k_uu @ torch.linalg.solve(sigma, k_uu)
    ours = moments(model)
    assert torch.allclose(ours[0], mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(ours[1], cov, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("train_steps", [0, 5])
def test_new_inducing_inputs_containing_the_old_give_buis_posterior(train_steps):
    """Z_new ⊇ Z_old: q̃(u_new)/p(u_new | ψ_old) = p(u_new∖old | u_old, ψ_old) q(u_old) /
    [p(u_new∖old | u_old, ψ_old) p(u_old | ψ_old)] is Bui et al.'s factor q(u_old)/p(u_old | ψ_old),
    so cmogp and cmogp-bui make the same q(u_new), and with training steps (ψ_new ≠ ψ_old) the
    same bound and hyper-parameters too."""
    rng = np.random.default_rng(5)
    z_old = rng.uniform(-30, 30, (8, 2))
    z_new = np.vstack([z_old, rng.uniform(-30, 30, (7, 2))])
    batches = one_channel(2, 40, seed=1)
    settings = dict(train_steps=train_steps, lr_hyper=0.05)
    paper, _ = two_batches(CMOGP, z_old, z_new, batches, **settings)
    bui, _ = two_batches(CMOGPBui, z_old, z_new, batches, **settings)
    for ours, theirs in zip(moments(paper), moments(bui)):
        assert torch.allclose(ours, theirs, rtol=1e-6, atol=1e-8)


def test_disjoint_inducing_inputs_carry_then_condition():
    """Z_new ∩ Z_old = ∅, θ fixed: q(u_new) is q(u_old) carried through the old prior to Z_new
    (Eq. 7), then conditioned on the batch through p(f | u_new) (Eq. 10 with p_new = p_old).
    Bui et al.'s factor over u_old gives another posterior here."""
    rng = np.random.default_rng(6)
    z_old, z_new = rng.uniform(-30, 30, (5, 2)), rng.uniform(-30, 30, (6, 2))
    batches = one_channel(2, 40, seed=2)
    model, (m_old, s_old) = two_batches(CMOGP, z_old, z_new, batches)
    a = torch.as_tensor(model.x_scaler.transform(z_old))
    b = model.inducing
    x, y = scaled_data(model, batches[1:])
    k_aa, k_ab, k_bb = kernel_matrices(model, a, b)
    with torch.no_grad():
        project = torch.linalg.solve(k_aa, k_ab).T  # K_ba K_aa⁻¹
        mean_c = project @ m_old
        cov_c = k_bb - project @ k_ab + project @ s_old @ project.T
        phi = torch.linalg.solve(k_bb, model.kernel.latent_covariance(0, b, x)).T  # K_fb K_bb⁻¹
        noise = model.noise[0]
        precision = torch.linalg.inv(cov_c) + phi.T @ phi / noise
        cov = torch.linalg.inv(precision)
        mean = cov @ (torch.linalg.solve(cov_c, mean_c) + phi.T @ y[:, 0] / noise)
    ours = moments(model)
    assert torch.allclose(ours[0], mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(ours[1], cov, rtol=1e-5, atol=1e-7)
    bui, _ = two_batches(CMOGPBui, z_old, z_new, batches)
    gap = np.abs(model.predict(QUERY)[0] - bui.predict(QUERY)[0]).max()
    assert gap > 0.05 * np.ptp(model.predict(QUERY)[0])


def test_bui_bound_is_the_single_output_streaming_bound():
    """cmogp-bui's bound at its E-step's q(b) equals Bui et al.'s collapsed bound of the batch
    with the old posterior as prior, new inducing inputs b ≠ a."""
    first, second = one_channel(2, 40)
    model = fit_stream(CMOGPBui(config(num_inducing=15, channel_min_samples=40)),
                       [first, second])
    prior = model.streamed_from[0]
    x, y = scaled_data(model, [second])
    z = model.inducing
    with torch.no_grad():
        ours = ContinualBound(model, model.streamed_from, x, y).bound()
        k_ab = model.latent_inducing_cross(0, prior.inducing, z)
        k_aa = model.latent_inducing_cross(0, prior.inducing, prior.inducing)
        theirs = online_elbo(model.covariance(z, z), model.covariance(z, x), model.amplitude,
                             model.noise[0], y[:, 0], prior, k_ab, k_aa, model.config.jitter,
                             model.config.max_jitter_tries)
    assert torch.allclose(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize("cls", [CMOGP, CMOGPBui])
def test_e_step_after_training_is_the_optimum_of_the_bound(cls):
    """θ trained away from θ_old (p_new ≠ p_old): the E-step's q(u) is a stationary point of the
    whole bound (Eq. 10), its continual terms included."""
    batches = one_channel(3, 40)
    model = fit_stream(cls(config(num_inducing=15, train_steps=5, lr_hyper=0.05,
                                  channel_min_samples=40)), batches)
    x, y = scaled_data(model, batches[2:])
    posterior = model.posterior
    mean = posterior.mean.clone().requires_grad_(True)
    sqrt = posterior.sqrt.clone().requires_grad_(True)
    model.posterior = VariationalPosterior(mean, sqrt, 2.0 * torch.linalg.slogdet(sqrt)[1])
    bound = ContinualBound(model, model.streamed_from, x, y).bound()
    for grad in torch.autograd.grad(bound, [mean, sqrt]):
        assert grad.abs().max() < 1e-6 * abs(bound.item())


def test_paper_continual_terms_do_not_reach_the_new_hyperparameters():
    """The continual terms of Eq. 10 live on u_new under ψ_old: with q(u) fixed their gradient
    in ψ_new vanishes; Bui et al.'s, over u_old projected by ψ_new, does not."""
    sizes = []
    for cls in (CMOGP, CMOGPBui):
        model = fit_stream(cls(config(num_inducing=15, channel_min_samples=40)),
                           one_channel(2, 40))
        z, prior = model.inducing, model.streamed_from[0]
        chol = model.latent_choleskys(z)[0]
        mean_w, sqrt_w = whitened_posterior([chol], model.posterior.mean, model.posterior.sqrt)
        terms = old_site_term(prior, model.latent_inducing_cross(0, prior.inducing,
                                                                 prior.inducing),
                              model.latent_inducing_cross(0, prior.inducing, z), chol,
                              mean_w[0], sqrt_w[0])
        latent = model.kernel.latents[0]
        grads = torch.autograd.grad(terms, [latent.raw_outputscale,
                                            latent.base_kernel.raw_lengthscale])
        sizes.append(max(float(g.abs().max()) for g in grads))
    assert sizes[0] < 1e-6 * sizes[1]
