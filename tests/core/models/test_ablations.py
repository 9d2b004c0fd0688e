"""The ablations of POAM's Fig. 8, each pinned to the component it replaces."""

import numpy as np
import pytest
import torch
from gp_reference import augmented_sgpr, fit_stream, posterior_moments

from poam_ros.models import MappingConfig, make_model
from poam_ros.models.elbo import online_elbo
from poam_ros.models.objectives import FixedPosteriorElbo
from poam_ros.models.posterior import StreamingPrior

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(num_inducing=12, train_steps=0, device="cpu", kernel="rbf", dtype="float64")
    return MappingConfig(**{**settings, **changes})


def rows(tensor):
    return {tuple(r) for r in np.asarray(tensor).round(9)}


def test_z_opt_moves_its_inputs_and_carries_the_terms_from_the_e_step_inputs(stream):
    first, second = stream(2, 40)
    model = make_model(config(method="poam-z-opt", train_steps=3))
    model.add_data(*first)
    model.update()
    anchor = model.data_inducing
    assert rows(anchor) <= rows(model.x_scaler.transform(first[0]))
    assert not torch.equal(model.inducing, anchor)  # moved by the M-step
    state = (anchor, model.data_chol, model.data_vector, model.data_matrix)
    moved = model.inducing
    model.config = model.config.replace(train_steps=0)
    model.add_data(*second)
    model.update()
    assert torch.equal(model.inducing, moved)  # no selection: Z stays where gradients put it
    noise = model.noise
    mean, cov = augmented_sgpr(model, state[0], state[1], state[2] / noise, state[3] / noise,
                               *second)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(got_cov, cov, rtol=1e-6, atol=1e-8)


def test_z_rand_draws_distinct_candidates(stream):
    first, second = stream(2, 40)
    model = make_model(config(method="poam-z-rand"))
    model.add_data(*first)
    model.update()
    old = rows(model.inducing)
    model.add_data(*second)
    model.update()
    new = rows(model.inducing)
    assert len(new) == 12 and new <= old | rows(model.x_scaler.transform(second[0]))
    assert new != old


def test_z_kmeans_places_inputs_at_a_lloyd_fixed_point_of_the_candidates(stream):
    first, second = stream(2, 40)
    model = make_model(config(method="poam-z-kmeans"))
    model.add_data(*first)
    model.update()
    candidates = torch.cat([model.inducing, torch.as_tensor(model.x_scaler.transform(second[0]))])
    model.add_data(*second)
    model.update()
    z = model.inducing
    nearest = torch.cdist(candidates, z).argmin(1)
    for j in range(len(z)):
        assert torch.allclose(z[j], candidates[nearest == j].mean(0), atol=1e-12)


def test_var_opt_carries_q_by_the_predictive_then_trains_it(stream):
    first, second = stream(2, 40)
    model = make_model(config(method="poam-var-opt", train_steps=3))
    model.add_data(*first)
    model.update()
    old_z, (old_mean, old_cov) = model.inducing, posterior_moments(model)
    model.config = model.config.replace(train_steps=0)
    model.add_data(*second)
    model.update()
    new_z = model.inducing
    assert not torch.equal(new_z, old_z)
    with torch.no_grad():  # q(u') = ∫ p(u' | u) q(u) du, dense
        k_oo = model.inducing_cross_covariance(old_z, old_z)
        k_on = model.inducing_cross_covariance(old_z, new_z)
        proj = torch.linalg.solve(k_oo, k_on).T
        mean = proj @ old_mean
        cov = (model.inducing_cross_covariance(new_z, new_z) - proj @ k_on
               + proj @ old_cov @ proj.T)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-6, atol=1e-8)
    assert torch.allclose(got_cov, cov, rtol=1e-5, atol=1e-8)


def test_var_opt_learns_q_by_gradients(stream):
    first, second = stream(2, 40)
    models = [make_model(config(method="poam-var-opt")) for _ in range(2)]
    for model in models:
        model.add_data(*first)
        model.update()
    models[1].config = models[1].config.replace(train_steps=2)
    for model in models:
        model.add_data(*second)
        model.update()
    assert torch.equal(models[0].inducing, models[1].inducing)  # the same E-step
    assert not torch.allclose(models[0].posterior.mean, models[1].posterior.mean)


def test_var_ssgp_has_the_streaming_e_step_and_poam_m_step(stream):
    batches = stream(3, 30)
    var_ssgp = fit_stream(make_model(config(method="poam-var-ssgp")), batches)
    ssgp = fit_stream(make_model(config(method="ssgp++")), batches)
    assert torch.equal(var_ssgp.inducing, ssgp.inducing)
    for got, want in zip(posterior_moments(var_ssgp), posterior_moments(ssgp)):
        assert torch.allclose(got, want, rtol=1e-10, atol=1e-12)
    x, y = var_ssgp._scaled(np.arange(60, 90))
    assert type(var_ssgp._training_objective(x, y)) is FixedPosteriorElbo


def test_online_elbo_ablation_trains_on_bui_bound_with_the_previous_posterior(stream):
    first, second = stream(2, 40)
    trained = make_model(config(method="poam-online-elbo"))
    reference = make_model(config(method="poam-online-elbo"))
    for model in (trained, reference):
        model.add_data(*first)
        model.update()
    previous = (reference.inducing, reference.posterior, reference.data_chol)
    trained.config = trained.config.replace(train_steps=1)  # reports the loss before its step
    for model in (trained, reference):
        model.add_data(*second)
    loss = trained.update().loss
    reference.update()
    x = torch.as_tensor(reference.x_scaler.transform(second[0]))
    y = torch.as_tensor(reference.y_scaler.transform(second[1]))
    with torch.no_grad():
        prior = StreamingPrior.from_posterior(*previous, 1e-6, 4)
        b, a = reference.inducing, previous[0]
        bound = online_elbo(reference.covariance(b, b), reference.covariance(b, x),
                            reference.amplitude, reference.noise, y, prior,
                            reference.inducing_cross_covariance(a, b),
                            reference.inducing_cross_covariance(a, a), 1e-6, 4)
    assert loss == pytest.approx(float(-bound / len(y)), rel=1e-9)


def test_var_ssgp_and_ovc_plus_plus_reach_the_same_posterior_by_different_routes(stream):
    """With a Gaussian likelihood, Bui et al.'s update in moments (S_a⁻¹ − K'_aa⁻¹, factorising
    S_a) and Maddox et al.'s cached noise-weighted terms are the same conditioning; with the
    same inducing inputs and M-step the two implementations agree to round-off, hyper-parameter
    training included."""
    models = [make_model(config(method=name, train_steps=3)) for name in ("poam-var-ssgp", "ovc++")]
    for x, y in stream(3, 30):
        for model in models:
            model.add_data(x, y)
            model.update()
    assert torch.equal(models[0].inducing, models[1].inducing)
    query = np.array([[0.0, 0.0], [10.0, -20.0], [25.0, 25.0]])
    for got, want in zip(models[0].predict(query), models[1].predict(query)):
        assert np.allclose(got, want, rtol=1e-9, atol=1e-10)
