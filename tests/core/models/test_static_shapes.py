"""Static shapes and compilation of the M-step (``mapping.static_shapes``, ``mapping.compile``).

The padded rows add nothing: at fixed parameters the padded step's kernel blocks, ELBO and
gradient are the unpadded ones to round-off, and whole updates (E-step, training, prediction)
of POAM and of the methods whose M changes at every update agree to round-off. The compiled
step (inductor, on this CPU) gives the eager update to round-off, falls back to eager with one
log line where compilation fails, and its failed deferred check replays the M-step checked.
"""

import logging
import shutil

import numpy as np
import pytest
import torch

from poam_ros.models import MappingConfig, load_model, make_model
from poam_ros.models import compiled as compiled_module
from poam_ros.models.linalg import DeferredChecks
from poam_ros.models.objectives import FixedPosteriorElbo, fixed_posterior_blocks
from poam_ros.models.padding import MIN_BUCKET, Padding, bucket

pytestmark = pytest.mark.usefixtures("single_thread")

QUERY = np.random.default_rng(5).uniform(-30, 30, (300, 2))
needs_compiler = pytest.mark.skipif(
    not any(shutil.which(name) for name in ("g++", "c++", "clang++")),
    reason="torch.compile (inductor) needs a C++ compiler: none found here")


def test_buckets_are_powers_of_two_capped_and_never_below_the_size():
    assert [bucket(size, 500) for size in (1, 32, 33, 64, 65, 200, 257, 500)] == [
        MIN_BUCKET, 32, 64, 64, 128, 256, 500, 500]
    assert bucket(700, 500) == 700  # a size beyond the cap is left as it is


def padded_and_plain(model):
    """The step's loss and gradients of the hyper-parameters, with and without padding, from
    the same generator state (the same mini-batch); its M of 60 padded to 64."""
    state = model.generator.get_state()
    results = []
    for static in (False, True):
        model.config = model.config.replace(static_shapes=static, num_inducing=100)
        model.generator.set_state(state)
        model.trainer.fast = True  # the unchecked attempt, the one that pads
        try:
            objective = FixedPosteriorElbo(model)
        finally:
            model.trainer.fast = False
        for p in [*model.kernel.parameters(), *model.likelihood.parameters()]:
            p.grad = None
        loss = objective.loss()
        loss.backward()
        grads = [p.grad.clone() for p in [*model.kernel.parameters(),
                                          *model.likelihood.parameters()]]
        results.append((objective, loss.detach(), grads))
    return results


def test_the_padded_elbo_and_its_gradient_equal_the_unpadded(trained):
    model = trained[0]
    (plain, loss, grads), (padded, padded_loss, padded_grads) = padded_and_plain(model)
    assert padded.padding is not None and padded.padding.extra > 0
    assert padded.z.shape[0] == bucket(model.inducing.shape[0], model.config.num_inducing)
    assert torch.allclose(loss, padded_loss, rtol=1e-12, atol=0)
    for a, b in zip(grads, padded_grads):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_the_padded_kernel_blocks_keep_the_real_ones_and_mask_the_rest(trained):
    model = trained[0]
    (plain, *_), (padded, *_) = padded_and_plain(model)
    x = torch.rand(40, 2, dtype=torch.float64) * 2 - 1
    base, size = model.kernel.base_kernel, model.inducing.shape[0]
    with torch.no_grad():
        args = (base, model.amplitude)
        k_uu, k_uf, cov, logdet = padded.blocks(*args, padded.z, padded.cache, x, padded.cov_u,
                                                padded.logdet, padded.mask, model.config.jitter)
        ref = plain.blocks(*args, plain.z, plain.cache, x, plain.cov_u, plain.logdet, None,
                           model.config.jitter)
    assert torch.allclose(k_uu[:size, :size], ref[0], rtol=1e-13, atol=1e-15)
    assert torch.allclose(k_uf[:size], ref[1], rtol=1e-13, atol=1e-15)
    assert torch.count_nonzero(k_uf[size:]) == 0 and torch.count_nonzero(k_uu[size:, :size]) == 0
    kappa = ref[0].diagonal().mean()
    assert torch.allclose(k_uu[size:, size:].diagonal(), kappa.expand(padded.padding.extra))
    assert torch.equal(cov[:size, :size], ref[2])


def test_padding_blocks_and_rows():
    pad = Padding(3, 100, torch.float64, torch.device("cpu"))
    assert pad.bucket == MIN_BUCKET and pad.mask.sum() == 3
    block = pad.block(torch.ones(3, 3), 2.0)
    assert block.shape == (32, 32) and torch.equal(block[3:, 3:], 2.0 * torch.eye(29))
    assert torch.count_nonzero(pad.rows(torch.ones(3, 2))[3:]) == 0


def run(method, static, batches, **options):
    model = make_model(MappingConfig(method=method, num_inducing=100, train_steps=2,
                                     batch_size=64, device="cpu", static_shapes=static,
                                     **options))
    reports = []
    for x, y in batches:
        model.add_data(x, y)
        reports.append(model.update())
    return model, reports


@pytest.mark.parametrize("method", ["poam", "vips", "poam-vips", "oips", "cv"])
def test_padded_updates_equal_unpadded_ones(method, stream):
    """M grows (and for the self-sizing methods changes at every update) through buckets; the
    E-step, the trained hyper-parameters and the prediction agree to round-off."""
    batches = stream(3, 40)
    (plain, plain_reports), (padded, padded_reports) = (run(method, static, batches)
                                                        for static in (False, True))
    sizes = [r.num_inducing for r in plain_reports]
    assert sizes == [r.num_inducing for r in padded_reports]
    assert any(bucket(size, 100) > size for size in sizes)  # some update was padded
    for a, b in zip(plain_reports, padded_reports):
        assert b.training_failure is None and a.loss == pytest.approx(b.loss, rel=1e-11)
    assert torch.equal(plain.inducing, padded.inducing)
    assert torch.allclose(plain.posterior.mean, padded.posterior.mean, rtol=1e-8, atol=1e-10)
    for a, b in zip(plain.predict(QUERY), padded.predict(QUERY)):
        assert np.abs(a - b).max() < 1e-9


@needs_compiler
def test_a_compiled_update_equals_the_eager_one(stream):
    batches = stream(3, 40)
    (eager, eager_reports), (fast, fast_reports) = (
        run("poam", True, batches, compile=mode) for mode in ("off", "cpu"))
    step = compiled_module.compiled_step(fixed_posterior_blocks)
    assert step.failure is None and step.graphs > 0 and step.compile_time > 0
    for a, b in zip(eager_reports, fast_reports):
        assert a.loss == pytest.approx(b.loss, rel=1e-11)
    for a, b in zip(eager.predict(QUERY), fast.predict(QUERY)):
        assert np.abs(a - b).max() < 1e-9


@needs_compiler
def test_a_failed_deferred_check_under_compile_replays_the_m_step_checked(trained,
                                                                          monkeypatch):
    """The compiled, padded attempt (M = 60 in the bucket of 64, compiled by the test above
    in the same process) is discarded as the eager one is: the replay (eager, on the true
    shapes) gives what the eager path's replay gives."""
    _, path, batch = trained
    read = DeferredChecks.read
    monkeypatch.setattr(DeferredChecks, "read", lambda self, *v: (False, read(self, *v)[1]))
    models = []
    for options in ({"num_inducing": 100},
                    {"static_shapes": True, "compile": "cpu", "num_inducing": 100}):
        model = load_model(path)
        model.config = model.config.replace(**options)
        model.add_data(*batch)
        assert model.update().training_failure is None
        models.append(model)
    for a, b in zip(models[0].kernel.state_dict().values(), models[1].kernel.state_dict().values()):
        assert torch.equal(a, b)
    for a, b in zip(models[0].predict(QUERY), models[1].predict(QUERY)):
        assert np.array_equal(a, b)


def test_a_failed_compilation_runs_eagerly_and_says_so_once(caplog, monkeypatch):
    def step(x):
        return (x * 2.0).exp()

    compiled = compiled_module.CompiledStep(step)

    def fail(*args):
        raise torch._dynamo.exc.BackendCompilerFailed(
            lambda *a: None, RuntimeError("no C++ compiler"), None)

    monkeypatch.setattr(compiled, "compiled", fail)
    x = torch.linspace(0, 1, 5, dtype=torch.float64)
    with caplog.at_level(logging.WARNING, logger="poam_ros.models.compiled"):
        assert torch.equal(compiled(x), step(x)) and torch.equal(compiled(x), step(x))
    assert compiled.failure is not None
    assert len([r for r in caplog.records if "eagerly" in r.getMessage()]) == 1
