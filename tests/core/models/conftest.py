import numpy as np
import pytest

from poam_ros.models import MappingConfig, make_model


def true_field(xy):
    """A smooth test field with a step, in target units."""
    return 3.0 * np.sin(xy[:, 0] / 6.0) + 2.0 * np.cos(xy[:, 1] / 9.0) + 5.0 * (xy[:, 0] > 10)


@pytest.fixture
def stream():
    """Batches of noisy samples of :func:`field` over [-30, 30]² m."""
    rng = np.random.default_rng(0)

    def batches(count, size, noise=0.2):
        out = []
        for _ in range(count):
            x = rng.uniform(-30, 30, (size, 2))
            out.append((x, true_field(x) + rng.normal(0, noise, size)))
        return out
    return batches


@pytest.fixture
def small_config():
    return MappingConfig(num_inducing=80, train_steps=3, batch_size=64, device="cpu",
                         dtype="float64")  # identities hold to float64 round-off


@pytest.fixture
def trained(stream, tmp_path):
    """A small attentive-kernel POAM after three updates, saved, and its next batch."""
    config = MappingConfig(num_inducing=60, train_steps=3, batch_size=64, device="cpu",
                           dtype="float64")
    model = make_model(config)
    batches = stream(4, 80)
    for x, y in batches[:3]:
        model.add_data(x, y)
        model.update()
    path = tmp_path / "model.pt"
    model.save(path)
    return model, path, batches[3]


@pytest.fixture
def field():
    return true_field


@pytest.fixture
def single_thread():
    """One torch thread for tests of tiny matrices, whose run time on a busy machine is
    otherwise dominated by thread synchronisation; restored afterwards."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

