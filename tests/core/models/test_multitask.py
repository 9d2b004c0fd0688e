"""The multi-channel methods (cmogp, cmogp-bui, poam-mt) against closed forms: SGPR, POAM,
independent channels, the exact multi-output GP, heterotopic coupling, symmetries, NaN intake,
per-channel scalers and the state file."""

import numpy as np
import pytest
import torch
from gp_reference import fit_stream

from poam_ros.models import MappingConfig, load_model
from poam_ros.models.cmogp import CMOGP, CMOGPBui, ContinualBound
from poam_ros.models.poam import POAM
from poam_ros.models.poam_mt import PoamMT
from poam_ros.models.posterior import VariationalPosterior
from poam_ros.models.samples import InvalidBatchError

pytestmark = pytest.mark.usefixtures("single_thread")

MULTI = (CMOGP, CMOGPBui, PoamMT)
QUERY = np.array([[0.0, 0.0], [12.5, -3.0], [-29.0, 29.0], [20.0, 20.0], [5.0, -17.0]])


def config(**changes):
    settings = dict(kernel="rbf", num_inducing=25, train_steps=0, device="cpu",
                    initial_noise_variance=0.1, dtype="float64", num_latents=1,
                    channel_min_samples=10)
    return MappingConfig.from_dict(settings).replace(**changes)


def fields(xy):
    """Three correlated channels (N × 3)."""
    u1 = np.sin(xy[:, 0] / 8.0) + np.cos(xy[:, 1] / 10.0)
    u2 = np.cos((xy[:, 0] + xy[:, 1]) / 12.0)
    return np.column_stack([2.0 * u1 + 5.0, u1 - 0.8 * u2, 30.0 * u2 - 10.0])


def channel_stream(count, size, channels=2, seed=0, missing=0.0):
    """Batches (x, y) of ``channels`` noisy channels, each entry missing with probability
    ``missing`` (NaN)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.uniform(-30, 30, (size, 2))
        y = fields(x)[:, :channels] + rng.normal(0, 0.1, (size, channels))
        y[rng.uniform(size=y.shape) < missing] = np.nan
        out.append((x, y))
    return out


def set_hyper(model, mixing=None, noise=None, lengthscales=None):
    """``mixing``: the LMC's weights a (Q × D) with the latents' amplitudes s_q as they are, set
    as the same model with unit rows (each s_q times its row's squared length)."""
    with torch.no_grad():
        if mixing is not None:
            mixing = torch.as_tensor(mixing, dtype=model.dtype)
            model.kernel.raw_mixing.copy_(mixing)
            for latent, length in zip(model.kernel.latents, mixing.norm(dim=1)):
                latent.outputscale = latent.outputscale * length.square()
        if noise is not None:
            model.likelihood.noise = torch.as_tensor(noise, dtype=model.dtype).reshape(-1, 1)
        for latent, value in zip(model.kernel.latents, lengthscales or ()):
            latent.base_kernel.lengthscale = value


def scaled_data(model, batches):
    x = np.vstack([b[0] for b in batches])
    y = np.vstack([np.reshape(b[1], (len(b[0]), -1)) for b in batches])
    return (torch.as_tensor(model.x_scaler.transform(x)),
            torch.as_tensor(model.y_scaler.transform(y)))


# ---------------------------------------------------------------- one channel, one latent
@pytest.mark.parametrize("cls", MULTI)
def test_one_channel_streams_to_the_batch_sgpr_posterior(cls):
    """D = Q = 1, a = 1, Z and θ fixed: the streamed q(u) is Titsias' optimum of all data."""
    batches = [(x, y[:, 0]) for x, y in channel_stream(4, 40)]
    fixed = np.random.default_rng(1).uniform(-30, 30, (20, 2))
    model = fit_stream(cls(config(channel_min_samples=40)), batches, fixed)
    x, y = scaled_data(model, batches)
    y = y[:, 0]
    z, noise = model.inducing, model.noise[0]
    with torch.no_grad():
        k_uu = model.covariance(z, z)
        k_uu = k_uu + model.config.jitter * k_uu.diagonal().mean() * torch.eye(len(z),
                                                                                dtype=z.dtype)
        k_uf = model.covariance(z, x)
        sigma = k_uu + k_uf @ k_uf.T / noise
        mean = k_uu @ torch.linalg.solve(sigma, k_uf @ y) / noise
        cov = k_uu @ torch.linalg.solve(sigma, k_uu)
        streamed = model.posterior.sqrt @ model.posterior.sqrt.T
    assert torch.allclose(model.posterior.mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(streamed, cov, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "attentive"])
@pytest.mark.parametrize("train_steps", [0, 5])
def test_poam_mt_with_one_channel_is_poam(kernel, train_steps):
    """POAM's selection, carried terms and q(u), and with training steps POAM's M-step (a = 1
    stays 1: the amplitude is s alone): the same map."""
    batches = [(x, y[:, 0]) for x, y in channel_stream(3, 40)]
    settings = dict(kernel=kernel, num_inducing=30, train_steps=train_steps, batch_size=32)
    poam = fit_stream(POAM(config(**settings)), batches)
    ours = fit_stream(PoamMT(config(channel_min_samples=40, **settings)), batches)
    assert torch.equal(poam.inducing, ours.inducing)
    for theirs, mine in zip(poam.predict(QUERY), ours.predict(QUERY)):
        assert mine.shape == (len(QUERY),)
        np.testing.assert_allclose(mine, theirs, rtol=1e-8, atol=1e-9)


def test_poam_mt_training_objective_with_one_channel_is_poams():
    """D = Q = 1, a = 1: the M-step's ELBO on a mini-batch, and its gradients, are POAM's."""
    batches = [(x, y[:, 0]) for x, y in channel_stream(2, 40)]
    poam = fit_stream(POAM(config(num_inducing=30)), batches)
    ours = fit_stream(PoamMT(config(num_inducing=30, channel_min_samples=40)), batches)
    losses, grads = [], []
    for model in (poam, ours):
        model.trainer.minibatches = [model._scaled(np.arange(0, 80, 3))]
        loss = model._training_objective(None, None).loss()
        losses.append(loss)
        latent = model.kernel if model is poam else model.kernel.latents[0]
        grads.append(torch.autograd.grad(loss, [latent.raw_outputscale,
                                                latent.base_kernel.raw_lengthscale,
                                                model.likelihood.raw_noise]))
    assert torch.allclose(losses[1], losses[0], rtol=1e-10)
    for mine, theirs in zip(grads[1], grads[0]):
        assert torch.allclose(mine.reshape(-1), theirs.reshape(-1), rtol=1e-7, atol=1e-10)


# ---------------------------------------------------------------- several channels
@pytest.mark.parametrize("cls", MULTI)
def test_identity_mixing_is_independent_single_channel_models(cls):
    """Q = D = 2 and a = I: each channel's map is that channel's POAM map (Z, θ fixed)."""
    batches = channel_stream(3, 40, missing=0.3)
    fixed = np.random.default_rng(1).uniform(-30, 30, (20, 2))
    ours = cls(config(num_latents=2), output_dim=2)
    set_hyper(ours, mixing=np.eye(2), noise=[0.1, 0.1])
    fit_stream(ours, batches, fixed)
    mean, std, cov = ours.predict(QUERY, covariance=True)
    assert mean.shape == std.shape == (len(QUERY), 2) and cov.shape == (len(QUERY), 2, 2)
    np.testing.assert_allclose(cov[:, 0, 1], 0.0, atol=1e-12)
    np.testing.assert_array_equal(ours.channel_correlation(), np.eye(2))
    for d in range(2):
        single = POAM(config())
        single.add_data(*[(x, y[:, d]) for x, y in batches][0])
        single.intake.y_scaler = ours.y_scaler.scalers[d]  # the same units: the first 10 samples'
        single.intake.x_scaler = ours.x_scaler
        single.fix_inducing_inputs(fixed)
        single.update()
        for x, y in batches[1:]:
            single.add_data(x, y[:, d])
            single.update()
        theirs = single.predict(QUERY)
        np.testing.assert_allclose(mean[:, d], theirs[0], rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(std[:, d], theirs[1], rtol=1e-8, atol=1e-9)


def test_inducing_inputs_at_the_data_give_the_exact_multi_output_gp():
    """Z = every input and a joint q(u): f's predictive is the exact GP with covariance
    Σ_q a_q a_qᵀ ⊗ s_q k_q (heterotopic: each channel's likelihood only where measured)."""
    x, y = channel_stream(1, 14, missing=0.3, seed=2)[0]
    y[0] = [0.5, 1.0]  # both channels in the first rows: their scalers fit on them
    model = PoamMT(config(num_latents=2, jitter=0.0, channel_min_samples=3), output_dim=2)
    noise = np.array([0.05, 0.1])
    set_hyper(model, mixing=[[1.0, 0.5], [-0.3, 0.8]], noise=noise, lengthscales=[0.3, 0.7])
    mixing = model.mixing.detach().numpy()  # unit rows, the amplitudes scaled to match
    model.add_data(x, y)
    model.fix_inducing_inputs(x)
    model.update()
    xs, ys = scaled_data(model, [(x, y)])
    q_points = torch.as_tensor(model.x_scaler.transform(QUERY))
    with torch.no_grad():
        def joint(x1, x2):  # (N1·D) × (N2·D), channel-major
            return sum(torch.kron(torch.as_tensor(np.outer(mixing[q], mixing[q])),
                                  model.kernel.latent_covariance(q, x1, x2)) for q in range(2))
        observed = torch.isfinite(ys.T.reshape(-1))
        k_ff = joint(xs, xs)[observed][:, observed]
        k_ff += torch.diag(torch.as_tensor(np.repeat(noise, len(x))))[observed][:, observed]
        k_sf = joint(q_points, xs)[:, observed]
        mean = k_sf @ torch.linalg.solve(k_ff, ys.T.reshape(-1)[observed])
        cov = joint(q_points, q_points) - k_sf @ torch.linalg.solve(k_ff, k_sf.T)
    n = len(QUERY)
    mean = mean.reshape(2, n).T.numpy()
    cov = cov.reshape(2, n, 2, n).diagonal(dim1=1, dim2=3).permute(2, 0, 1).numpy()
    stds = model.y_scaler.stds
    got_mean, got_std, got_cov = model.predict(QUERY, covariance=True)
    np.testing.assert_allclose(got_mean, model.y_scaler.inverse_mean(mean), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_cov, cov * np.outer(stds, stds), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_std ** 2, np.diagonal(got_cov, axis1=1, axis2=2), rtol=1e-12)


@pytest.mark.parametrize("cls", MULTI)
@pytest.mark.parametrize("shared", [False, True])
def test_a_channel_informs_another_only_through_a_shared_latent(cls, shared):
    """Heterotopic, Z and θ fixed: a batch of channel 0 alone moves channel 1's prediction iff
    some latent has non-zero weight on both."""
    first, second = channel_stream(2, 40)
    second[1][:, 1] = np.nan
    model = cls(config(num_latents=2), output_dim=2)
    set_hyper(model, mixing=[[1.0, 0.7 if shared else 0.0], [0.0, 1.0]])
    fit_stream(model, [first], np.random.default_rng(1).uniform(-30, 30, (20, 2)))
    before = model.predict(QUERY)
    model.add_data(*second)
    model.update()
    after = model.predict(QUERY)
    moved = np.abs(after[0][:, 1] - before[0][:, 1]).max()
    assert np.abs(after[0][:, 0] - before[0][:, 0]).max() > 1e-3
    if shared:
        assert moved > 1e-3
    else:
        assert moved < 1e-10
        np.testing.assert_allclose(after[1][:, 1], before[1][:, 1], rtol=1e-10)


def test_stored_terms_serve_learned_mixing_weights_and_noises():
    """poam-mt keeps b_d and C_d per channel: with Z and the kernels fixed while a and σ_d² are
    trained, each E-step's q(u) is the joint optimum from all data under the a and σ_d² of
    that moment (dense solve: Σ = K + Σ_d σ_d⁻² Φ_dᵀΦ_d, Φ_d = [a_{1,d} K_1(X_d, Z) …])."""
    batches = channel_stream(3, 40, missing=0.3)
    model = PoamMT(config(num_latents=2, train_steps=5, lr_hyper=0.05), output_dim=2)
    for latent in model.kernel.latents:
        latent.requires_grad_(False)
    initial = model.mixing.detach().clone()
    fit_stream(model, batches[:2], np.random.default_rng(1).uniform(-30, 30, (20, 2)))
    mixing, noise = model.mixing.detach().clone(), model.noise.detach().clone()
    assert not torch.allclose(mixing, initial)
    model.add_data(*batches[2])
    model.update()
    x, y = scaled_data(model, batches)
    z = model.inducing
    with torch.no_grad():
        k_uu = torch.block_diag(*[model.latent_inducing_cross(q, z, z) for q in range(2)])
        k_fu = torch.cat([model.kernel.latent_covariance(q, x, z) for q in range(2)], 1)
        sigma, vector = k_uu.clone(), torch.zeros(len(k_uu), dtype=k_uu.dtype)
        for d in range(2):
            seen = torch.isfinite(y[:, d])
            phi = k_fu[seen] * mixing[:, d].repeat_interleave(len(z))
            sigma += phi.T @ phi / noise[d]
            vector += phi.T @ y[seen, d] / noise[d]
        mean = k_uu @ torch.linalg.solve(sigma, vector)
        cov = k_uu @ torch.linalg.solve(sigma, k_uu)
        ours = model.posterior.sqrt @ model.posterior.sqrt.T
    assert torch.allclose(model.posterior.mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(ours, cov, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("cls", MULTI)
def test_permuting_channels_permutes_the_outputs(cls):
    batches = channel_stream(3, 40, channels=3, missing=0.2)
    order = [2, 0, 1]
    mixing = np.array([[1.0, 0.4, -0.6], [0.2, 1.0, 0.5]])
    noise = np.array([0.05, 0.1, 0.2])
    fixed = np.random.default_rng(1).uniform(-30, 30, (20, 2))
    models = []
    for perm in (list(range(3)), order):
        model = cls(config(num_latents=2), output_dim=3)
        set_hyper(model, mixing=mixing[:, perm], noise=noise[perm])
        models.append(fit_stream(model, [(x, y[:, perm]) for x, y in batches], fixed))
    plain, permuted = (m.predict(QUERY, covariance=True) for m in models)
    np.testing.assert_allclose(permuted[0], plain[0][:, order], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(permuted[1], plain[1][:, order], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(permuted[2], plain[2][:, order][:, :, order], rtol=1e-8,
                               atol=1e-9)


@pytest.mark.parametrize("cls", MULTI)
def test_flipping_a_latent_and_its_weights_changes_nothing(cls):
    """u_q → −u_q with a_q → −a_q is the same model, through training steps too."""
    batches = channel_stream(3, 40, missing=0.2)
    mixing = np.array([[1.0, 0.4], [0.3, -0.8]])
    results = []
    for sign in (1.0, -1.0):
        model = cls(config(num_latents=2, train_steps=3, batch_size=32), output_dim=2)
        set_hyper(model, mixing=mixing * np.array([[1.0], [sign]]))
        results.append(fit_stream(model, batches).predict(QUERY, covariance=True))
    for plain, flipped in zip(*results):
        np.testing.assert_allclose(flipped, plain, rtol=1e-7, atol=1e-9)


def test_cmogp_e_step_is_the_optimum_of_its_bound_over_factorised_q():
    """Coupled latents, heterotopic, with a continual prior: the coordinate-ascent q(u) is a
    stationary point of the continual bound in the factors' means and covariances."""
    first, second = channel_stream(2, 40, missing=0.3)
    model = CMOGP(config(num_latents=2, num_inducing=15, cmogp={"sweeps": 400}), output_dim=2)
    set_hyper(model, mixing=[[1.0, 0.4], [0.3, -0.8]], noise=[0.05, 0.2])
    fit_stream(model, [first, second])
    x, y = scaled_data(model, [second])
    posterior = model.posterior
    size = len(model.inducing)
    mean = posterior.mean.clone().requires_grad_(True)
    blocks = [posterior.sqrt[q * size:(q + 1) * size, q * size:(q + 1) * size].clone()
              .requires_grad_(True) for q in range(2)]
    sqrt = torch.block_diag(*blocks)
    logdet = sum(2.0 * torch.linalg.slogdet(b)[1] for b in blocks)
    model.posterior = VariationalPosterior(mean, sqrt, logdet)
    bound = ContinualBound(model, model.streamed_from, x, y).bound()
    grads = torch.autograd.grad(bound, [mean, *blocks])
    for grad in grads:  # an optimal S = F Fᵀ makes the gradient in F vanish too
        assert grad.abs().max() < 1e-6 * abs(bound.item())


# ---------------------------------------------------------------- intake, scalers, state
def test_rows_without_any_channel_are_rejected_and_missing_entries_kept():
    model = PoamMT(config(num_latents=2), output_dim=2)
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([[1.0, np.nan], [np.nan, np.nan], [np.inf, 2.0], [1.0, 3.0]])
    report = model.add_data(x, y)
    assert report.accepted == 3 and dict(report.rejected) == {"nonfinite_target": 1}
    assert model.rejections["nonfinite_target"] == 1
    np.testing.assert_array_equal(np.isnan(model.buffer.channels), [[0, 1], [1, 0], [0, 0]])
    assert dict(model.add_data(x[3:], y[3:]).rejected) == {"duplicate": 1}
    for bad in (y[:, 0], np.ones((4, 3)), np.ones((3, 2))):
        with pytest.raises(InvalidBatchError):
            model.add_data(x, bad)
    assert model.rejections["malformed_batch"] == 3
    single = PoamMT(config())
    assert single.add_data(x, y[:, 0]).accepted == 2  # D = 1: y of shape (N,)
    assert single.buffer.y.shape == (2,)  # as the single-channel models' buffer


@pytest.mark.parametrize("cls", MULTI)
def test_a_sparse_channel_enters_once_it_has_k_samples(cls):
    """Channel 1 is predicted NaN until it has K samples; its scaler is then fitted on its
    samples up to that update (channel 0's on the first batch), and its earlier samples are in
    the model: the map equals one whose channel-1 samples all arrive in that update."""
    batches = channel_stream(3, 40, missing=0.0)
    rng = np.random.default_rng(4)
    for _, y in batches:
        y[rng.uniform(size=40) < 0.85, 1] = np.nan
    counts = np.cumsum([np.isfinite(y[:, 1]).sum() for _, y in batches])
    k = int(counts[0]) + 1  # not enough in the first batch
    fixed = np.random.default_rng(1).uniform(-30, 30, (20, 2))
    model = cls(config(num_latents=2, channel_min_samples=k), output_dim=2)
    set_hyper(model, mixing=[[1.0, 0.5], [0.2, 1.0]])
    fit_stream(model, batches[:1], fixed)
    mean, std = model.predict(QUERY)
    assert np.isfinite(mean[:, 0]).all()
    assert np.isnan(mean[:, 1]).all() and np.isnan(std[:, 1]).all()
    fit_stream(model, batches[1:2])
    # The same samples with batch 0's channel-1 values moved into batch 1 (Z, θ fixed).
    x0, y0 = batches[0]
    late = np.isfinite(y0[:, 1])
    moved = np.column_stack([np.full(late.sum(), np.nan), y0[late, 1]])
    early = y0.copy()
    early[:, 1] = np.nan
    reference = cls(config(num_latents=2, channel_min_samples=k), output_dim=2)
    set_hyper(reference, mixing=[[1.0, 0.5], [0.2, 1.0]])
    fit_stream(reference, [(x0, early), (np.vstack([x0[late], batches[1][0]]),
                                  np.vstack([moved, batches[1][1]]))], fixed)
    for ours, theirs in zip(model.predict(QUERY), reference.predict(QUERY)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-9)
    fit_stream(model, batches[2:])
    entered = np.concatenate([y[:, 1] for _, y in batches[:2]])
    entered = entered[np.isfinite(entered)]
    assert len(entered) >= k
    scaler = model.y_scaler.scalers[1]
    assert scaler.mean == pytest.approx(entered.mean())
    assert scaler.std == pytest.approx(entered.std())
    assert model.y_scaler.scalers[0].mean == pytest.approx(batches[0][1][:, 0].mean())
    mean, std = model.predict(QUERY)
    assert np.isfinite(mean).all() and (std > 0).all()


@pytest.mark.parametrize("cls", MULTI)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_state_round_trip_continues_exactly(cls, dtype, tmp_path):
    batches = channel_stream(3, 40, channels=3, missing=0.3)
    model = cls(config(num_latents=2, train_steps=2, batch_size=32, dtype=dtype), output_dim=3)
    fit_stream(model, batches[:2])
    path = tmp_path / "map.pt"
    model.save(path)
    loaded = load_model(path)
    assert type(loaded) is cls and loaded.output_dim == 3
    for a, b in zip(model.predict(QUERY, covariance=True), loaded.predict(QUERY, covariance=True)):
        assert np.array_equal(a, b)
    for m in (model, loaded):
        m.add_data(*batches[2])
        assert m.update().training_failure is None
        diagnostics = m.diagnostics()
        assert diagnostics["active_channels"] == 3
        assert set(diagnostics) >= {"noise_2", "correlation_0_2", "correlation_1_2"}
    for a, b in zip(model.predict(QUERY, covariance=True), loaded.predict(QUERY, covariance=True)):
        assert np.array_equal(a, b)
    mean, std = model.predict(QUERY)
    assert np.isfinite(mean).all() and (std > 0).all()
