"""CV (the VIPS paper's conditional-variance baseline): pivoted Cholesky over [Z_o; X_new]
stopped at an absolute trace tolerance, against the Nyström error computed densely."""

import pytest
import torch

from poam_ros.models import MappingConfig, make_model

pytestmark = pytest.mark.usefixtures("single_thread")


def model_for(method="cv", **changes):
    settings = dict(method=method, kernel="rbf", num_inducing=200, train_steps=0,
                    device="cpu", dtype="float64", initial_noise_variance=0.05)
    return make_model(MappingConfig.from_dict(settings).replace(**changes))


def nystrom_error(model, pool, z):
    """tr(K − K_pz K_zz⁻¹ K_zp) over the pool, by a dense solve."""
    with torch.no_grad():
        k_pz = model.covariance(pool, z)
        explained = k_pz @ torch.linalg.solve(model.covariance(z, z), k_pz.T)
        return float(model.amplitude * len(pool) - explained.diagonal().sum())


@pytest.mark.parametrize("tolerance", [0.05, 1.0, 8.0])
def test_stops_at_the_first_set_within_the_tolerance(tolerance, stream):
    """After the update the pool's unexplained trace at Z' is at most η, and at Z' without its
    last pivot above η (the greedy order: Z' is a prefix of the pivots)."""
    model = model_for(cv={"tolerance": tolerance}, initial_amplitude=1.7)
    first, second = stream(2, 80)
    model.add_data(*first)
    model.update()
    old = model.inducing
    model.add_data(*second)
    report = model.update()
    pool = torch.cat([old, torch.as_tensor(model.x_scaler.transform(second[0]))])
    z = model.inducing
    assert nystrom_error(model, pool, z) == pytest.approx(report.extra["trace_error"], abs=1e-6)
    assert report.extra["trace_error"] <= tolerance < nystrom_error(model, pool, z[:-1])
    assert report.extra["cap_bound"] == 0 and 1 < len(z) < 200
    new = {tuple(p) for p in second[0].round(9)}
    assert report.extra["inducing_added"] == sum(tuple(p) in new
                                                 for p in model.inducing_inputs.round(9))


def test_the_set_shrinks_when_the_tolerance_allows(stream):
    """A longer lengthscale (as training may learn) explains the pool with fewer points: M
    falls and old inducing inputs are dropped, however many there were."""
    first, second = stream(2, 150)
    model = model_for(cv={"tolerance": 0.5}, num_inducing=100)
    model.add_data(*first)
    before = model.update().num_inducing
    old = {tuple(p) for p in model.inducing_inputs.round(9)}
    model.kernel.base_kernel.lengthscale = torch.tensor(0.7, dtype=torch.float64)
    model.add_data(*second)
    report = model.update()
    assert report.num_inducing < before / 2 < 50
    assert report.extra["trace_error"] <= 0.5 and report.extra["cap_bound"] == 0
    kept = {tuple(p) for p in model.inducing_inputs.round(9)} & old
    assert len(kept) < before


@pytest.mark.parametrize("kernel", ["rbf", "attentive"])
def test_zero_tolerance_is_the_ssgp_plus_plus_selection(kernel, stream):
    batches = stream(3, 60)
    models = [model_for(method, kernel=kernel, num_inducing=40, train_steps=2,
                        cv={"tolerance": 0.0})
              for method in ("cv", "ssgp++")]
    for x, y in batches:
        for model in models:
            model.add_data(x, y)
            model.update()
        assert torch.equal(models[0].inducing, models[1].inducing)
    assert torch.allclose(models[0].posterior.mean, models[1].posterior.mean, rtol=1e-9,
                          atol=1e-12)


def test_the_cap_binds_and_is_reported(stream):
    model = model_for(cv={"tolerance": 1e-3}, num_inducing=25)
    model.add_data(*stream(1, 100)[0])
    report = model.update()
    assert report.num_inducing == 25 and report.extra["cap_bound"] == 1
    assert report.extra["trace_error"] > 1e-3
