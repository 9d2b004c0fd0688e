"""Batches of any size: the column-wise selection and the chunked data terms compute what the
dense ones do, and a large batch updates within its memory bound."""

import json
import subprocess
import sys

import pytest
import torch

from poam_ros.models import BatchTooLargeError, batch_terms, make_model, selection
from poam_ros.models.batch_terms import DenseCross, FactorCross, KernelCross
from poam_ros.models.report import UpdateReport


@pytest.fixture
def column_route(monkeypatch):
    """Make every selection take the column route (no candidates' matrix is formed)."""
    def use():
        monkeypatch.setattr(selection, "DENSE_SELECTION_BYTES", 0)
    return use


def two_models(small_config, stream, method="poam", **changes):
    config = small_config.replace(method=method, train_steps=0, **changes)
    models = [make_model(config), make_model(config)]
    return models, stream(3, 120)


@pytest.mark.parametrize("kernel", ["attentive", "rbf"])
def test_column_selection_chooses_the_dense_pivots_and_blocks(small_config, stream, kernel):
    model = make_model(small_config.replace(kernel=kernel, train_steps=0))
    first, second = stream(2, 150)
    model.add_data(*first)
    model.update()
    model.add_data(*second)  # the old inducing inputs are candidates too
    x_new, y_new = model._scaled(torch.arange(150, 300).numpy())
    with torch.no_grad():
        dense = model._choose_inducing(x_new, UpdateReport())
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(selection, "DENSE_SELECTION_BYTES", 0)
            columns = model._choose_inducing(x_new, UpdateReport())
    assert isinstance(dense.cross, DenseCross) and isinstance(columns.cross, FactorCross)
    assert torch.equal(dense.inducing, columns.inducing)
    assert torch.allclose(dense.k_new, columns.k_new, atol=1e-12)
    assert torch.allclose(dense.k_old, columns.k_old, atol=1e-12)
    assert torch.allclose(dense.cross.dense(), columns.cross.dense(), atol=1e-10)
    for a, b in zip(dense.cross.terms(y_new), columns.cross.terms(y_new)):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("method", ["poam", "ovc++", "ssgp++", "pam"])
def test_updates_by_the_column_route_equal_the_dense_ones(small_config, stream, column_route,
                                                          method):
    (dense, columns), batches = two_models(small_config, stream, method)
    for x, y in batches:
        dense.add_data(x, y)
        dense.update()
    column_route()
    for x, y in batches:
        columns.add_data(x, y)
        columns.update()
    assert torch.equal(dense.inducing, columns.inducing)
    assert torch.allclose(dense.posterior.mean, columns.posterior.mean, rtol=1e-7, atol=1e-8)
    query = batches[0][0][:50]
    for a, b in zip(dense.predict(query), columns.predict(query)):
        assert abs(a - b).max() < 1e-6


def test_chunked_terms_equal_the_whole_block(monkeypatch, small_config, stream):
    model = make_model(small_config)
    (x, y), = stream(1, 300)
    model.add_data(x, y)
    model.update()
    x_new, y_new = model._scaled(torch.arange(300).numpy())
    z = model.inducing
    with torch.no_grad():
        whole = model.covariance(z, x_new).double()
        expected = (whole @ y_new.double(), whole @ whole.T)
        monkeypatch.setattr(batch_terms, "CHUNK_ELEMENTS", 7 * len(z))  # blocks of 7 columns
        kernel = KernelCross(model.covariance, z, x_new)
        assert len(list(kernel.blocks())) == 43
        factor = torch.linalg.cholesky(model.covariance(x_new, x_new).double()
                                       + 1e-9 * torch.eye(300, dtype=torch.float64))
        pivots = torch.arange(len(z))  # Z as the first rows of a factor of [Z; X]
        joint = torch.cat([z, x_new])
        k_joint = model.covariance(joint, joint).double()
        k_joint.diagonal().add_(1e-9)
        factor = torch.linalg.cholesky(k_joint)
        from_factor = FactorCross(factor[pivots][:, :len(z)], factor[len(z):, :len(z)])
        for got in (kernel.terms(y_new), DenseCross(whole).terms(y_new)):
            assert torch.allclose(got[0], expected[0], rtol=1e-10, atol=1e-10)
            assert torch.allclose(got[1], expected[1], rtol=1e-10, atol=1e-10)
        # The factor's first |Z| columns reproduce K(X, Z) up to the jitter's effect.
        assert torch.allclose(from_factor.dense(), whole, atol=1e-6)


def test_a_50000_sample_batch_updates_within_its_memory_bound():
    """A first update of 50,000 samples at M = 500 in a fresh process: its peak resident
    memory grows by at most 1.5 GB over the filled model (the dense selection asked for 60)."""
    script = """
import json, resource, numpy as np, torch
from poam_ros.models import MappingConfig, make_model
from poam_ros.benchmark.core_speed import synthetic_field
torch.set_num_threads(2)
rng = np.random.default_rng(0)
x = rng.uniform(-30, 30, (50_000, 2))
model = make_model(MappingConfig(num_inducing=500, train_steps=2))
model.add_data(x, synthetic_field(x) + rng.normal(0, 1.0, len(x)))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = model.update()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kib": after - before, "inducing": report.num_inducing}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["inducing"] == 500
    assert result["growth_kib"] * 1024 <= 1.5e9


@pytest.mark.parametrize("method", ["ssgp", "ssgp++", "poam-online-elbo"])
def test_a_whole_batch_method_refuses_a_batch_beyond_its_limit(small_config, stream, method):
    model = make_model(small_config.replace(method=method, max_whole_batch=100))
    first, second = stream(2, 100)
    model.add_data(*first)
    model.update()
    inducing, mean = model.inducing.clone(), model.posterior.mean.clone()
    model.add_data(*second)
    model.add_data(second[0] + 0.5, second[1])  # 200 pending
    with pytest.raises(BatchTooLargeError, match="at most 100 new samples per update"):
        model.update()
    assert torch.equal(model.inducing, inducing) and torch.equal(model.posterior.mean, mean)
    assert model.num_pending == 200


def test_a_method_with_a_mini_batch_m_step_takes_any_batch(small_config, stream):
    model = make_model(small_config.replace(max_whole_batch=100))
    (x, y), = stream(1, 300)
    model.add_data(x, y)
    assert model.update().num_new == 300
