"""OIPS's options: the bounded mode (pruning to ``num_inducing`` with ρ re-adapted), the
accept rule's invariants, the median lengthscale of the paper's App. E and OIPS/opt."""

import math

import numpy as np
import pytest
import torch

from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models.oips import median_distance, prune, threshold_selection
from poam_ros.params import ConfigError

pytestmark = pytest.mark.usefixtures("single_thread")


def model_for(method="oips", input_dim=2, **changes):
    settings = dict(method=method, kernel="rbf", num_inducing=1000, train_steps=0,
                    device="cpu", dtype="float64", initial_noise_variance=0.05,
                    rbf_initial_lengthscale=0.1)
    return make_model(MappingConfig.from_dict(settings).replace(**changes), input_dim)


def correlation(model):
    return model.kernel.base_kernel.distance_correlation


def off_diagonal_max(k):
    return float((k - torch.diag(torch.diag(k))).max())


@pytest.mark.parametrize("method", ["oips", "poam-oips"])
def test_pruning_keeps_the_set_within_num_inducing_and_lowers_rho(method, stream):
    """With ``at_capacity: prune`` M never exceeds the bound, selection goes on after the
    set is full, ρ only falls, and no two kept inputs correlate at ρ or more."""
    cap = 25
    model = model_for(method, num_inducing=cap, oips={"rho": 0.9, "at_capacity": "prune"})
    rhos, pruned = [0.9], 0
    for x, y in stream(6, 80):
        model.add_data(x, y)
        report = model.update()
        assert report.num_inducing <= cap and report.extra["cap_bound"] == 0
        rhos.append(report.extra["rho"])
        pruned += report.extra["inducing_pruned"]
    assert pruned > 0 and rhos[-1] < 0.9
    assert all(b <= a for a, b in zip(rhos, rhos[1:]))
    assert model.rho == rhos[-1]
    with torch.no_grad():
        assert off_diagonal_max(correlation(model)(model.inducing, model.inducing)) < 0.9


def test_prune_removes_one_of_each_close_pair_and_respects_kmin():
    """Three tight pairs far apart: η = 0.95 of the largest correlation leaves one input of
    each pair; kmin stops the removal."""
    model = model_for(input_dim=1, rbf_initial_lengthscale=1.0)
    z = torch.tensor([[0.0], [0.1], [10.0], [10.1], [20.0], [20.05]], dtype=torch.float64)
    with torch.no_grad():
        kept, rho_remove = prune(correlation(model), z, 1, 0.95,
                                 torch.Generator().manual_seed(0))
        assert rho_remove == pytest.approx(0.95 * math.exp(-0.5 * 0.05 ** 2))
        assert len(kept) == 3
        assert sorted(int(round(v / 10)) for v in kept[:, 0].tolist()) == [0, 1, 2]
        assert off_diagonal_max(correlation(model)(kept, kept)) <= rho_remove
        # the kept inputs stay in their order
        order = [int(torch.nonzero((z == row).all(1))[0]) for row in kept]
        assert order == sorted(order)
        floor, _ = prune(correlation(model), z, 5, 0.95, torch.Generator().manual_seed(0))
        assert len(floor) == 5


def test_prune_shrinks_a_set_without_correlated_pairs():
    model = model_for(input_dim=1, rbf_initial_lengthscale=1e-3)
    z = torch.tensor([[0.0], [1.0], [2.0]], dtype=torch.float64)
    with torch.no_grad():
        kept, _ = prune(correlation(model), z, 1, 0.95, torch.Generator())
    assert torch.equal(kept, z[:2])


@pytest.mark.parametrize("rho", [0.3, 0.8, 0.97])
def test_accepted_inputs_are_mutually_below_rho_and_every_sample_is_explained(rho, stream):
    """Alg. 1's invariants: every pair of added inputs correlates below ρ, and every sample
    of the batches correlates at ρ or more with the final set (or is in it)."""
    model = model_for(oips={"rho": rho, "kmin": 1})
    batches = stream(3, 60)
    for x, y in batches:
        model.add_data(x, y)
        model.update()
    with torch.no_grad():
        z = model.inducing
        assert off_diagonal_max(correlation(model)(z, z)) < rho
        x = torch.as_tensor(model.x_scaler.transform(np.vstack([b[0] for b in batches])))
        assert bool((correlation(model)(x, z).amax(1) >= rho - 1e-12).all())


def test_the_refused_sample_is_the_one_the_rule_adds_next():
    """With a full set, :func:`threshold_selection` names the first sample Alg. 1 would have
    added beyond the capacity (the prune mode adds it, then prunes)."""
    model = model_for()
    x = torch.rand(200, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        free, _ = threshold_selection(correlation(model), x[:1], x, 0.8, 1000)
        added, refused = threshold_selection(correlation(model), x[:1], x, 0.8, 11)
    assert added.tolist() == free[:10].tolist() and refused == int(free[10])


def test_median_distance_and_the_papers_lengthscale():
    """h is the median of the pairwise distances; the model's RBF lengthscale becomes h / √2
    (exp(−r²/h²) = exp(−r²/(2l²))) at the first update, and with lr_hyper 0 stays there."""
    x = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    assert median_distance(x, torch.Generator()) == 2.0
    model = model_for(input_dim=1, train_steps=5, lr_hyper=0.0,
                      oips={"median_lengthscale": True})
    rng = np.random.default_rng(0)
    xs = rng.uniform(0, 10, (120, 1))
    model.add_data(xs, np.sin(xs[:, 0]))
    model.update()
    scaled = torch.as_tensor(model.x_scaler.transform(xs))
    h = median_distance(scaled, torch.Generator())
    assert float(model.kernel.base_kernel.lengthscale.detach()) == pytest.approx(h / math.sqrt(2.0))
    model.add_data(xs + 10, np.sin(xs[:, 0]))
    model.update()
    assert float(model.kernel.base_kernel.lengthscale.detach()) == pytest.approx(h / math.sqrt(2.0))
    with pytest.raises(ConfigError):
        MappingConfig(kernel="matern52").replace(oips={"median_lengthscale": True}).validate()


def test_oips_opt_moves_the_inducing_inputs_at_fixed_hyperparameters(stream):
    model = model_for(train_steps=20, lr_hyper=0.0, oips={"rho": 0.8, "move_inducing": True})
    fixed = model_for(train_steps=20, lr_hyper=0.0, oips={"rho": 0.8})
    x, y = stream(1, 60)[0]
    for m in (model, fixed):
        m.add_data(x, y)
        m.update()
    assert model.inducing.shape == fixed.inducing.shape
    assert not torch.equal(model.inducing, fixed.inducing)
    assert float(model.kernel.base_kernel.lengthscale.detach()) == pytest.approx(0.1)
    assert float(model.noise.detach()) == pytest.approx(0.05)


def test_the_lowered_rho_is_saved_and_restored(stream, tmp_path):
    model = model_for(num_inducing=15, oips={"rho": 0.9, "at_capacity": "prune"})
    for x, y in stream(3, 80):
        model.add_data(x, y)
        model.update()
    assert model.rho is not None and model.rho < 0.9
    model.save(tmp_path / "oips.pt")
    assert load_model(tmp_path / "oips.pt").rho == model.rho


def test_ssgp_starts_from_k_means_centroids_of_the_first_batch(stream):
    """The paper's k-means/opt baseline: ``ssgp.initial: kmeans`` starts Z at M Lloyd
    centroids of the first batch, each the mean of the samples nearest to it."""
    model = model_for("ssgp", num_inducing=8, ssgp={"initial": "kmeans"})
    x, y = stream(1, 80)[0]
    model.add_data(x, y)
    model.update()
    z = model.inducing
    scaled = torch.as_tensor(model.x_scaler.transform(x))
    nearest = torch.cdist(scaled, z).argmin(1)
    assert z.shape == (8, 2) and len(set(nearest.tolist())) == 8
    for k in range(8):
        assert torch.allclose(scaled[nearest == k].mean(0), z[k], atol=1e-9)
