"""VIPS and POAM-VIPS: the selection's bound against closed forms worked out by dense solves, the
stopping rule's limits, the cap, the state, and the L-BFGS M-step."""

import math

import numpy as np
import pytest
import torch
from gp_reference import fit_stream, posterior_moments, sgpr_posterior
from gp_reference import noisy_batches as batches

from poam_ros.inducing import greedy_pivots
from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.elbo import online_elbo
from poam_ros.models.vips_bound import IncrementalBound, RunningMoments, collapsed_bound

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    """Fixed hyper-parameters, no jitter (the identities are exact for the matrices factorised)
    and no trace tolerance (the bound alone stops the selection)."""
    settings = dict(method="vips", kernel="rbf", num_inducing=200, train_steps=0, device="cpu",
                    initial_noise_variance=0.05, jitter=0.0, pcd_tolerance=0.0,
                    vips={"delta": 0.05})
    return MappingConfig.from_dict(settings).replace(**changes)


def scaled(model, x, y):
    return (torch.as_tensor(model.x_scaler.transform(x)),
            torch.as_tensor(model.y_scaler.transform(y)))


def gaussian_kl(m0, s0, m1, s1):
    """KL[N(m0, S0) ‖ N(m1, S1)], dense."""
    solved = torch.linalg.solve(s1, s0)
    diff = m1 - m0
    return 0.5 * (solved.trace() + diff @ torch.linalg.solve(s1, diff) - len(m0)
                  + torch.logdet(s1) - torch.logdet(s0))


def test_gap_equals_kl_to_the_posterior_at_all_candidates():
    """At fixed hyper-parameters L* − L̂(Z) = KL[q_Z ‖ q*]: q* is the augmented model's exact
    posterior q_old(f_a) p(f_X | f_a) N(y | f_X, σ²) over P = [a; X] (a = Z_o), q_Z the
    collapsed bound's optimum at Z, p(f_P | u_Z) q(u_Z); both over f_P (Z ⊆ P)."""
    model = make_model(config(vips={"delta": 0.1}))
    first, second = batches(2, 25)
    model.add_data(*first)
    model.update()
    a = model.inducing
    prior = model.prior
    model.add_data(*second)
    report = model.update()
    assert 0 < report.extra["inducing_added"] < 25  # q_Z is not q*
    x, y = scaled(model, *second)
    z, noise = model.inducing, model.noise.detach()
    p = torch.cat([a, x])
    with torch.no_grad():
        k_pp, k_pa = model.covariance(p, p), model.covariance(p, a)
        k_aa = model.covariance(a, a)
        # q_old(f_a) p(f_X | f_a): the joint over f_P, then conditioned on y = f_X + ε.
        s_a = prior.cov_chol @ prior.cov_chol.T
        proj = torch.linalg.solve(k_aa, k_pa.T).T  # K_Pa K_aa⁻¹
        joint_mean = proj @ prior.mean
        joint_cov = k_pp - proj @ k_pa.T + proj @ s_a @ proj.T
        num_a = len(a)
        c_x = joint_cov[:, num_a:]
        gain = torch.linalg.solve(joint_cov[num_a:, num_a:] + noise * torch.eye(len(x)), c_x.T).T
        star_mean = joint_mean + gain @ (y - joint_mean[num_a:])
        star_cov = joint_cov - gain @ c_x.T
        # q_Z over f_P.
        k_pz, k_zz = model.covariance(p, z), model.covariance(z, z)
        mean_u, cov_u = posterior_moments(model)
        proj_z = torch.linalg.solve(k_zz, k_pz.T).T
        q_mean = proj_z @ mean_u
        q_cov = k_pp - proj_z @ k_pz.T + proj_z @ cov_u @ proj_z.T
        kl = gaussian_kl(q_mean, q_cov, star_mean, star_cov)
    assert report.extra["bound_gap"] > 0.1
    assert math.isclose(report.extra["bound_gap"], float(kl), rel_tol=1e-6)


def bound_path(model, x_world, y_world):
    """L̂ after each pivot of the unstopped greedy order on [Z_o; X] (Z_o forced first), the
    whitened rows, the pivots, L* and the inputs of the bound."""
    x, y = scaled(model, x_world, y_world)
    old = model.inducing
    candidates = torch.cat([old, x])
    noise, amplitude = model.noise.detach(), model.amplitude.detach()
    with torch.no_grad():
        site = model._bound_site()
        best = model._best_bound(candidates, len(old), y, noise, amplitude, site)
        k = model.covariance(candidates, candidates)
        k.diagonal().copy_(amplitude)
        bound = IncrementalBound(len(old), y, noise, amplitude, site, len(candidates))
        values = []
        pcd = greedy_pivots(k.diagonal(), lambda i: k[:, i], len(candidates), forced=len(old),
                            on_pivot=lambda step: values.append(bound.add(step.column)))
    return dict(values=values, rows=pcd.factor.T, pivots=pcd.pivots, best=best, y=y,
                noise=noise, amplitude=amplitude, site=site, candidates=candidates, old=old)


@pytest.fixture
def streamed_vips():
    model = make_model(config(vips={"delta": 0.2}))
    first, second = batches(2, 30, seed=3)
    model.add_data(*first)
    model.update()
    return model, second


def test_bound_never_decreases_reaches_its_best_and_matches_recomputations(streamed_vips):
    """L̂ grows with every pivot and reaches L* with Z = Z_o ∪ X; each incremental value equals
    the bound recomputed from scratch from the rows and Bui et al.'s online ELBO (elbo.py)."""
    model, second = streamed_vips
    path = bound_path(model, *second)
    values, old = path["values"], path["old"]
    assert len(values) == len(path["candidates"])
    assert all(b >= a - 1e-9 for a, b in zip(values, values[1:]))
    assert values[len(old)] > values[len(old) - 1] + 1e-3  # the batch adds information
    assert math.isclose(values[-1], path["best"], rel_tol=1e-9, abs_tol=1e-8)
    for count in (1, len(old), len(old) + 5, len(values)):
        scratch = collapsed_bound(path["rows"][:count], len(old), path["y"], path["noise"],
                                  path["amplitude"], path["site"])
        assert math.isclose(values[count - 1], float(scratch), rel_tol=1e-10, abs_tol=1e-9)
        b = path["candidates"][path["pivots"][:count]]
        x = path["candidates"][len(old):]
        with torch.no_grad():
            elbo = online_elbo(model.covariance(b, b), model.covariance(b, x), path["amplitude"],
                               path["noise"], path["y"], model.prior, model.covariance(old, b),
                               model.covariance(old, old))
        assert math.isclose(values[count - 1], float(elbo), rel_tol=1e-8, abs_tol=1e-7)


def test_first_batch_bound_is_titsias_and_its_best_the_exact_evidence():
    model = make_model(config(vips={"delta": 0.1}))
    x_world, y_world = batches(1, 30)[0]
    model.add_data(x_world, y_world)
    report = model.update()
    x, y = scaled(model, x_world, y_world)
    z, noise, amplitude = model.inducing, model.noise.detach(), model.amplitude.detach()
    with torch.no_grad():
        k_ff, k_zf = model.covariance(x, x), model.covariance(z, x)
        q_ff = k_zf.T @ torch.linalg.solve(model.covariance(z, z), k_zf)
        eye = noise * torch.eye(len(x))
        exact = torch.distributions.MultivariateNormal(torch.zeros(len(x)), k_ff + eye)
        nystrom = torch.distributions.MultivariateNormal(torch.zeros(len(x)), q_ff + eye)
        titsias = nystrom.log_prob(y) - (len(x) * amplitude - q_ff.trace()) / (2 * noise)
    assert len(z) < len(x)
    assert math.isclose(report.extra["bound_best"], float(exact.log_prob(y)), rel_tol=1e-9)
    assert math.isclose(report.extra["bound_best"] - report.extra["bound_gap"], float(titsias),
                        rel_tol=1e-9)
    assert report.extra["bound_gap"] <= report.extra["bound_threshold"]


def rows_of(points):
    return [tuple(p) for p in np.round(points, 9)]


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_delta_zero_adds_every_distinct_point_and_no_duplicate(method):
    """Repeated measurements at one input have no conditional variance after the first."""
    model = make_model(config(method=method, vips={"delta": 0.0}))
    (x1, y1), (x2, y2) = batches(2, 12, seed=5)
    x1 = np.vstack([x1, x1[:3]])  # the same inputs measured again
    y1 = np.concatenate([y1, y1[:3] + 0.1])
    model.add_data(x1, y1)
    model.update()
    assert sorted(rows_of(model.inducing_inputs)) == sorted(set(rows_of(x1)))
    x2 = np.vstack([x2, model.inducing_inputs[:2]])  # old inducing inputs measured again
    y2 = np.concatenate([y2, [0.5, -0.5]])
    model.add_data(x2, y2)
    report = model.update()
    z = rows_of(model.inducing_inputs)
    assert len(z) == len(set(z)) == 24 and report.extra["inducing_added"] == 12
    assert set(z) == set(rows_of(x1)) | set(rows_of(x2))


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_a_large_delta_adds_nothing_after_the_first_batch(method):
    model = make_model(config(method=method, vips={"delta": 1e6}, train_steps=2))
    stream = batches(4, 20)
    model.add_data(*stream[0])
    model.update()
    first = model.inducing_inputs
    assert len(first) == 1  # at least one inducing input is kept
    for x, y in stream[1:]:
        model.add_data(x, y)
        assert model.update().extra["inducing_added"] == 0
    assert np.array_equal(model.inducing_inputs, first)


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_old_inducing_inputs_stay_first_in_their_order(method):
    model = make_model(config(method=method, train_steps=3, jitter=1e-6))
    previous = None
    for x, y in batches(4, 40, seed=2):
        model.add_data(x, y)
        report = model.update()
        z = model.inducing_inputs
        if previous is not None:
            assert np.array_equal(z[:len(previous)], previous)
            assert report.extra["inducing_added"] == len(z) - len(previous)
        assert report.extra["bound_gap"] <= report.extra["bound_threshold"] + 1e-9
        previous = z


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_an_old_input_spanned_to_round_off_is_dropped_and_counted(method):
    """A lengthscale grown tenfold leaves some old inducing inputs with no conditional
    variance above round-off: they are skipped, counted, and the others keep their order."""
    model = make_model(config(method=method, jitter=1e-6, vips={"delta": 0.0}))
    first, second = batches(2, 60, seed=1)
    model.add_data(*first)
    model.update()
    old = rows_of(model.inducing_inputs)
    with torch.no_grad():
        model.kernel.base_kernel.lengthscale = torch.tensor(3.0, dtype=torch.float64)
    model.add_data(*second)
    report = model.update()
    z = rows_of(model.inducing_inputs)
    kept = [row for row in z if row in set(old)]
    assert report.extra["inducing_dropped"] == len(old) - len(kept) > 0
    assert kept == [row for row in old if row in set(kept)]  # in their order, first
    assert z[:len(kept)] == kept and len(z) == len(kept) + report.extra["inducing_added"]


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_the_threshold_is_delta_times_the_gain_over_the_noise_model_of_all_targets(method):
    """δ |L* − L_noise|, L_noise the batch under the mean and variance of every target so
    far, this batch's included."""
    delta = 0.05
    model = make_model(config(method=method, vips={"delta": delta}))
    stream = batches(2, 30, seed=6)
    for x, y in stream:
        model.add_data(x, y)
        report = model.update()
    targets = [torch.as_tensor(model.y_scaler.transform(y)) for _, y in stream]
    seen = torch.cat(targets)
    noise_fit = torch.distributions.Normal(seen.mean(), seen.std(unbiased=False)).log_prob(
        targets[-1]).sum()
    expected = delta * abs(report.extra["bound_best"] - float(noise_fit))
    assert math.isclose(report.extra["bound_threshold"], expected, rel_tol=1e-10)


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_a_cap_reached_in_a_later_batch_adds_up_to_it(method):
    """Z_o below the cap, the batch needing more: the batch fills it exactly and the cap is
    reported. A cap met by taking every candidate (δ = 0, a first batch of 30 under a cap of
    30) stopped nothing and is not reported."""
    model = make_model(config(method=method, vips={"delta": 0.0}, num_inducing=40))
    first, second = batches(2, 30)
    model.add_data(*first)
    assert model.update().extra["cap_bound"] == 0
    model.add_data(*second)
    report = model.update()
    assert report.num_inducing == 40 and report.extra["inducing_added"] == 10
    assert report.extra["cap_bound"] == 1 and report.extra["bound_gap"] > 0
    exact = make_model(config(method=method, vips={"delta": 0.0}, num_inducing=30))
    exact.add_data(*first)
    report = exact.update()
    assert report.num_inducing == 30 and report.extra["cap_bound"] == 0


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_the_cap_adds_exactly_up_to_it_and_is_reported(method):
    model = make_model(config(method=method, vips={"delta": 0.0}, num_inducing=12))
    first, second = batches(2, 30)
    model.add_data(*first)
    report = model.update()
    assert report.num_inducing == 12 and report.extra["cap_bound"] == 1
    z = model.inducing_inputs
    model.add_data(*second)
    report = model.update()
    assert report.extra["inducing_added"] == 0 and report.extra["cap_bound"] == 1
    assert np.array_equal(model.inducing_inputs, z)
    loose = make_model(config(method=method, vips={"delta": 0.0}, num_inducing=31))
    loose.add_data(*first)
    assert loose.update().extra["cap_bound"] == 0


def test_poam_vips_adding_nothing_equals_full_at_the_same_inducing_inputs():
    model = make_model(config(method="poam-vips", vips={"delta": 0.1}, jitter=1e-6))
    stream = batches(4, 30, seed=4)
    model.add_data(*stream[0])
    model.update()
    model.config = model.config.replace(vips={"delta": 1e6})
    for x, y in stream[1:]:
        model.add_data(x, y)
        assert model.update().extra["inducing_added"] == 0
    full = fit_stream(make_model(config(method="full", jitter=1e-6)), stream,
                      fixed=model.inducing_inputs)
    assert torch.allclose(full.inducing, model.inducing, atol=1e-12) and len(model.inducing) > 3
    for a, b in zip(posterior_moments(model), posterior_moments(full)):
        assert torch.allclose(a, b, rtol=1e-7, atol=1e-9)


def test_poam_vips_bound_from_stored_terms_equals_the_online_bound_at_fixed_hypers():
    """Old data projected on Z_o (POAM's stored terms) or summarised by q_old on Z_o (Bui et
    al.): at fixed hyper-parameters both make L* and L̂ the new batch's evidence given the old
    data under the same model, so the two methods select the same inputs by the same numbers."""
    reports = {}
    for method in ("vips", "poam-vips"):
        model = make_model(config(method=method, vips={"delta": 0.1}))
        reports[method] = []
        for x, y in batches(3, 25, seed=7):
            model.add_data(x, y)
            reports[method].append(model.update().extra)
        reports[method].append(model.inducing)
    *vips, z_vips = reports["vips"]
    *poam, z_poam = reports["poam-vips"]
    assert torch.equal(z_vips, z_poam)
    for a, b in zip(vips, poam):
        assert a["inducing_added"] == b["inducing_added"] > 0
        for key in ("bound_best", "bound_gap", "bound_threshold"):
            assert math.isclose(a[key], b[key], rel_tol=1e-7, abs_tol=1e-7), key


def test_a_batch_beyond_the_subset_selects_from_a_subset_and_fits_all_of_it():
    model = make_model(config(vips={"bound_subset": 20, "delta": 0.0}, jitter=1e-6))
    x, y = batches(1, 50)[0]
    model.add_data(x, y)
    report = model.update()
    assert report.num_inducing == 20 and set(rows_of(model.inducing_inputs)) <= set(rows_of(x))
    mean, cov = sgpr_posterior(model, x, y)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(got_cov, cov, rtol=1e-7, atol=1e-9)


def test_running_moments_and_the_noise_model_likelihood():
    rng = np.random.default_rng(0)
    parts = [rng.normal(3.0, 2.0, size) for size in (1, 7, 30)]
    moments = RunningMoments.empty("cpu")
    for part in parts:
        moments = moments.merged(torch.as_tensor(part))
    y = np.concatenate(parts)
    assert math.isclose(float(moments.mean), y.mean(), rel_tol=1e-12)
    assert math.isclose(float(moments.m2 / moments.count), y.var(), rel_tol=1e-12)
    query = torch.as_tensor(parts[1])
    expected = torch.distributions.Normal(torch.tensor(y.mean()),
                                          torch.tensor(y.std())).log_prob(query).sum()
    assert math.isclose(float(moments.log_likelihood(query, 1e-9)), float(expected),
                        rel_tol=1e-12)


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_save_and_load_mid_mission_continue_exactly(method, tmp_path):
    """Running target statistics and the subset draws included (batches beyond the subset)."""
    model = make_model(config(method=method, train_steps=2, jitter=1e-6, vips={"bound_subset": 25}))
    stream = batches(4, 30, seed=6)
    for x, y in stream[:2]:
        model.add_data(x, y)
        model.update()
    model.save(tmp_path / "map.pt")
    loaded = load_model(tmp_path / "map.pt")
    assert torch.equal(loaded.target_moments.m2, model.target_moments.m2)
    for x, y in stream[2:]:
        reports = []
        for m in (model, loaded):
            m.add_data(x, y)
            reports.append(m.update())
        assert reports[0].extra == reports[1].extra
    assert np.array_equal(model.inducing_inputs, loaded.inducing_inputs)
    query = np.array([[0.0, 0.0], [10.0, -20.0]])
    for a, b in zip(model.predict(query), loaded.predict(query)):
        assert np.array_equal(a, b)


def hyper_values(model):
    group = model.trainer.optimizer.param_groups[0]
    return torch.cat([p.detach().reshape(-1) for p in group["params"]])


@pytest.mark.parametrize("method", ["vips", "poam"])
def test_lbfgs_m_step_converges_on_the_training_objective(method):
    """From the same E-step, L-BFGS ends lower than Adam's steps, at a stationary point (no
    jitter: its share of K_uu's gradient is not differentiated, which is felt at 1e-3 here)."""
    models = {}
    for m_step in ("adam", "lbfgs"):
        model = make_model(config(method=method, m_step=m_step, train_steps=10,
                                  num_inducing=30))
        model.add_data(*batches(1, 60)[0])
        models[m_step] = model
    untrained = make_model(models["adam"].config.replace(train_steps=0))
    untrained.add_data(*batches(1, 60)[0])
    untrained.update()
    losses = {}
    for m_step, model in models.items():
        model.update()
        assert torch.equal(model.inducing, untrained.inducing)  # the same E-step
        x, y = model._scaled(np.arange(60))
        model.trainer.minibatches = [(x, y)] * 2  # the whole batch for a mini-batch objective
        objective = model._training_objective(x, y)
        loss = objective.loss()
        loss.backward()
        losses[m_step] = float(loss.detach())
    untrained.trainer.minibatches = [(x, y)]
    before = float(untrained._training_objective(x, y).loss().detach())
    assert losses["lbfgs"] < losses["adam"] < before
    group = models["lbfgs"].trainer.optimizer.param_groups[0]
    gradient = torch.cat([p.grad.reshape(-1) for p in group["params"] if p.grad is not None])
    assert gradient.abs().max() < 1e-6


def test_lbfgs_failure_restores_the_hyper_parameters(monkeypatch):
    model = make_model(config(m_step="lbfgs", jitter=1e-6))
    first, second = batches(2, 30)
    model.add_data(*first)
    model.update()
    before = hyper_values(model).clone()
    mean_before = model.predict(np.zeros((1, 2)))[0]
    calls = []
    objective = type(model._training_objective(*model._scaled(np.arange(30))))
    healthy = objective.loss

    def failing(self):
        calls.append(1)  # fail after the line search has moved the parameters
        return healthy(self) * (float("nan") if len(calls) > 3 else 1.0)

    monkeypatch.setattr(objective, "loss", failing)
    model.add_data(*second)
    report = model.update()
    assert "non-finite" in report.training_failure and len(calls) > 3
    assert torch.equal(hyper_values(model), before)
    assert np.isfinite(model.predict(np.zeros((1, 2)))[0]).all()
    assert model.num_pending == 0 and not np.array_equal(mean_before,
                                                          model.predict(np.zeros((1, 2)))[0])
