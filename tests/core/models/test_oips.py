"""OIPS (Galy-Fajou & Opper, Alg. 1): the threshold rule against closed forms and a
one-sample-at-a-time reference, the cap, the amplitude scaling, and its two E-steps."""

import math

import numpy as np
import pytest
import torch
from gp_reference import posterior_moments, sgpr_posterior

from poam_ros.models import MappingConfig, make_model, oips
from poam_ros.models.oips import threshold_selection

pytestmark = pytest.mark.usefixtures("single_thread")


def model_for(method="oips", input_dim=2, **changes):
    """Hyper-parameters fixed (no training steps), so that the rule can be checked after."""
    settings = dict(method=method, kernel="rbf", num_inducing=1000, train_steps=0,
                    device="cpu", dtype="float64", initial_noise_variance=0.05)
    return make_model(MappingConfig.from_dict(settings).replace(**changes), input_dim)


def scaled(model, x):
    return torch.as_tensor(model.x_scaler.transform(x))


def one_at_a_time(correlation, inducing, x, rho, capacity):
    """Alg. 1 as written: each sample against the whole set so far."""
    z, added = inducing, []
    for i in range(len(x)):
        if len(z) == capacity:
            break
        if len(z) == 0 or correlation(x[i:i + 1], z).max() < rho:
            z = torch.cat([z, x[i:i + 1]])
            added.append(i)
    return added


@pytest.mark.parametrize("rows", [1, 7, 1024])
@pytest.mark.parametrize("kernel", ["rbf", "attentive"])
def test_chunks_select_what_one_sample_at_a_time_selects(kernel, rows, monkeypatch):
    """Chunks of any size, the set growing between them, give Alg. 1's choice exactly."""
    monkeypatch.setattr(oips, "MAX_CHUNK_ROWS", rows)
    model = model_for(kernel=kernel)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(300, 2, generator=generator, dtype=torch.float64) * 2 - 1
    start = x[:4]
    with torch.no_grad():
        for rho in (0.3, 0.8, 0.97):
            added, refused = threshold_selection(model.kernel.base_kernel.forward, start, x,
                                                 rho, 1000)
            reference = one_at_a_time(model.kernel.base_kernel.forward, start, x, rho, 1000)
            assert added.tolist() == reference and refused is None
            assert 4 < len(reference) < 300


@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_the_starting_points_are_distinct_positions(method):
    """A first batch that dwells at one position (30 of its 40 samples) starts Z from
    oips.kmin distinct positions: no copy holds a slot of the cap."""
    model = model_for(method, oips={"rho": 1e-9, "kmin": 10})  # ρ that adds nothing beyond them
    rng = np.random.default_rng(0)
    x = np.vstack([np.full((30, 2), 5.0), rng.uniform(0, 10, (10, 2))])
    model.add_data(x, rng.normal(size=40))
    model.update()
    z = model.inducing_inputs
    assert len(z) == 10 and len(np.unique(z, axis=0)) == 10


def test_first_occurrences_index_each_distinct_row_once_in_order():
    x = torch.tensor([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [3.0, 1.0], [0.0, 0.0]])
    assert oips.first_occurrences(x).tolist() == [0, 1, 3]
    assert oips.first_occurrences(torch.rand(5, 2)).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kernel", ["rbf", "attentive", "matern52"])
@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_rho_one_adds_every_new_distinct_point(method, kernel, stream):
    """ρ = 1: every sample not already an inducing input is added, repeated positions once."""
    model = model_for(method, kernel=kernel, oips={"rho": 1.0, "kmin": 3})
    first, second = stream(2, 40)
    repeated = np.vstack([second[0], second[0][:5], first[0][:5]])
    for x, y in (first, (repeated, np.arange(len(repeated), dtype=float))):
        model.add_data(x, y)
        model.update()
    z = model.inducing_inputs
    distinct = np.unique(np.vstack([first[0], second[0]]).round(9), axis=0)
    assert len(z) == len(distinct) == 80
    assert np.array_equal(np.unique(z.round(9), axis=0), distinct)
    # the 3 random seeds first, then the rest of the first batch in arrival order, then the second
    assert np.allclose(z[40:], second[0], rtol=0, atol=1e-9)


@pytest.mark.parametrize("kernel, changes, rho", [
    ("rbf", dict(rbf_initial_lengthscale=5.0), 0.8),  # k ≥ exp(−8 / 50) = 0.85 on [−1, 1]²
    # the Matérn part m ≥ 0.79 at distances up to 2√2 with l = 5
    ("matern52", dict(matern_initial_lengthscale=5.0, matern_initial_constant=0.25), 0.78),
])
def test_rho_below_every_kernel_value_adds_nothing(kernel, changes, rho, stream):
    model = model_for(kernel=kernel, oips={"rho": rho, "kmin": 4}, **changes)
    first, second = stream(2, 50)
    model.add_data(*first)
    report = model.update()
    assert report.num_inducing == 4 and report.extra["inducing_added"] == 4
    seeds = model.inducing_inputs
    assert {tuple(p) for p in seeds.round(9)} <= {tuple(p) for p in first[0].round(9)}
    model.add_data(*second)
    report = model.update()
    assert report.extra["inducing_added"] == 0
    assert np.array_equal(model.inducing_inputs, seeds)


@pytest.mark.parametrize("method, kernel", [("oips", "rbf"), ("oips", "attentive"),
                                            ("poam-oips", "matern52")])
def test_added_points_are_apart_and_every_sample_is_covered(method, kernel, stream):
    """With fixed hyper-parameters, after each update: each point the rule added has kernel
    value below ρ̄ = ρ·a with every inducing input before it (so every pair of added points),
    and every sample processed so far has one inducing input with k ≥ ρ̄."""
    rho, kmin = 0.7, 5
    model = model_for(method, kernel=kernel, oips={"rho": rho, "kmin": kmin},
                      initial_amplitude=2.5)
    base = model.kernel.base_kernel
    tested = base.distance_correlation  # Matérn: its distance part
    share = float(torch.as_tensor(base.distance_share))
    seen = []
    for x, y in stream(3, 80):
        model.add_data(x, y)
        report = model.update()
        seen.append(x)
        assert report.extra["rho_bar"] == pytest.approx(rho * 2.5 * share, rel=1e-6)
        with torch.no_grad():
            z = model.inducing
            k = tested(z, z)
            for i in range(kmin, len(z)):
                assert k[i, :i].max() < rho
            covered = tested(scaled(model, np.vstack(seen)), z).max(1).values
        assert (covered >= rho).all()


def test_a_large_constant_does_not_hide_new_places(stream):
    """Constant + Matérn with the constant 50 times the Matérn variance: every correlation is
    at least 50/51 > ρ, yet a sample far from the set (Matérn part below ρ) is added and the
    seeds' own neighbourhood adds nothing."""
    model = model_for(kernel="matern52", matern_initial_constant=50.0,
                      matern_initial_lengthscale=0.1, oips={"rho": 0.8, "kmin": 1})
    x = np.array([[0.0, 0.0], [0.0, 0.001], [20.0, 20.0], [-25.0, 10.0]])
    model.add_data(x[:1], np.zeros(1))
    model.update()
    model.add_data(x[1:], np.zeros(3))
    report = model.update()
    assert report.extra["inducing_added"] == 2
    assert np.allclose(model.inducing_inputs, x[[0, 2, 3]], atol=1e-9)


@pytest.mark.parametrize("rho", [0.8, 0.5, 0.93])
def test_spacing_on_a_grid_is_the_acceptance_radius_closed_form(rho):
    """1-D grid x_i = −1 + i h (scaled units) left to right from Z = {x_0}: the RBF kernel
    admits a point exactly beyond r = ℓ √(−2 ln ρ) from its nearest inducing input, so the
    accepted points are every s-th, s = ⌊r / h⌋ + 1."""
    model = model_for(input_dim=1, oips={"rho": rho, "kmin": 1})
    grid = np.linspace(0.0, 10.0, 201)[:, None]  # h = 0.01 scaled
    model.add_data(grid, np.sin(grid[:, 0]))
    model.update(max_new=1)  # the first batch is x_0 alone: Z = {x_0}
    model.update()
    lengthscale = model.kernel.base_kernel.lengthscale.item()
    radius, h = lengthscale * math.sqrt(-2 * math.log(rho)), 0.01
    assert abs(radius / h - round(radius / h)) > 1e-3  # no point on the boundary
    step = math.floor(radius / h) + 1
    expected = -1.0 + h * np.arange(0, 201, step)
    assert np.allclose(model.inducing[:, 0].numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_scaling_the_amplitude_leaves_the_inducing_inputs_unchanged(method, stream):
    batches = stream(3, 60)
    chosen = []
    for amplitude in (1.0, 9.0):
        model = model_for(method, kernel="attentive", oips={"rho": 0.6},
                          initial_amplitude=amplitude)
        for x, y in batches:
            model.add_data(x, y)
            model.update()
        chosen.append(model.inducing)
    assert torch.equal(*chosen)
    assert 10 < len(chosen[0]) < 180


def test_the_cap_binds_exactly_and_keeps_the_uncapped_prefix(stream):
    batches = stream(2, 60)
    free = model_for(oips={"rho": 0.9})
    for x, y in batches:
        free.add_data(x, y)
        report = free.update()
        assert report.extra["cap_bound"] == 0
    cap = len(free.inducing) - 7
    capped = model_for(oips={"rho": 0.9}, num_inducing=cap)
    for x, y in batches:
        capped.add_data(x, y)
        report = capped.update()
    assert report.extra["cap_bound"] == 1 and report.num_inducing == cap
    assert torch.equal(capped.inducing, free.inducing[:cap])
    capped.add_data(*stream(1, 10)[0])
    report = capped.update()
    assert report.extra == dict(inducing_added=0, inducing_pruned=0, rho=0.9,
                                rho_bar=pytest.approx(0.9), cap_bound=1)


@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_old_inducing_inputs_stay_first_in_order(method, stream):
    model = model_for(method, kernel="attentive", oips={"rho": 0.5}, train_steps=2, num_inducing=60)
    previous = None
    for x, y in stream(4, 50):
        model.add_data(x, y)
        report = model.update()
        z = model.inducing
        grown = 0 if previous is None else len(previous)
        if previous is not None:
            assert torch.equal(z[:len(previous)], previous)
        assert report.extra["inducing_added"] == len(z) - grown
        previous = z


@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_first_update_is_sgpr_at_the_selected_inputs(method, stream):
    """Both E-steps give Titsias' q(u) on the first batch at the inputs OIPS chose."""
    model = model_for(method, oips={"rho": 0.8})
    x, y = stream(1, 70)[0]
    model.add_data(x, y)
    model.update()
    mean, cov = sgpr_posterior(model, x, y)
    got_mean, got_cov = posterior_moments(model)
    assert torch.allclose(got_mean, mean, rtol=1e-7, atol=1e-8)
    assert torch.allclose(got_cov, cov, rtol=1e-7, atol=1e-9)
