"""POAM's training steps replayed from CUDA graphs (``mapping.cuda_graphs``) equal the eager
steps with the same draws, a capture is reused within its bucket and a new bucket costs one
capture (skipped, and said so, where torch sees no CUDA device)."""

import numpy as np
import pytest
import torch

from poam_ros.models import load_model, make_model
from poam_ros.models.padding import bucket

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA device: torch sees none here")


@pytest.fixture
def saved(tmp_path, small_config, stream):
    model = make_model(small_config.replace(device="cpu", num_inducing=100))
    for x, y in stream(2, 30):
        model.add_data(x, y)
        model.update()
    path = tmp_path / "model.pt"
    model.save(path)
    return path, stream(2, 30)


def test_captured_steps_equal_the_eager_padded_steps(saved):
    path, batches = saved
    models = []
    for graphs in (False, True):
        model = load_model(path, device="cuda")
        model.config = model.config.replace(static_shapes=True, cuda_graphs=graphs)
        losses = []
        for x, y in batches:
            model.add_data(x, y)
            report = model.update()
            assert report.training_failure is None
            losses.append(report.loss)
        models.append((model, losses))
    (eager, eager_losses), (captured, captured_losses) = models
    assert captured.trainer.graphs.failure is None and captured.trainer.graphs.captures
    assert np.allclose(eager_losses, captured_losses, rtol=1e-9, atol=0)
    for a, b in zip(eager.kernel.state_dict().values(), captured.kernel.state_dict().values()):
        assert torch.allclose(a, b, rtol=1e-8, atol=1e-10)
    query = np.random.default_rng(0).uniform(-30, 30, (500, 2))
    for a, b in zip(eager.predict(query), captured.predict(query)):
        assert np.abs(a - b).max() < 1e-6


def test_a_bucket_is_captured_once_and_a_new_bucket_recaptures(small_config, stream):
    model = make_model(small_config.replace(device="cuda", num_inducing=100, cuda_graphs=True))
    seen = []
    for x, y in stream(5, 20):
        model.add_data(x, y)
        model.update()
        seen.append(bucket(model.inducing.shape[0], 100))
    captures = model.trainer.graphs.captures
    assert model.trainer.graphs.failure is None
    assert set(captures) == set(seen) and all(count == 1 for count in captures.values())
    assert len(set(seen)) > 1 and len(seen) > len(set(seen))  # both cases happened
    assert model.diagnostics()["graph_captures"] == len(set(seen))
