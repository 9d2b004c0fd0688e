"""The launch and synchronisation counter against sequences counted by hand, and one update."""

import numpy as np
import torch

from poam_ros.benchmark.dispatch import DispatchCounter, count_update
from poam_ros.models import MappingConfig


def test_counts_launches_but_not_views_or_allocations():
    with DispatchCounter() as counter:
        a = torch.ones(4, dtype=torch.float64)  # a fill: one launch
        b = a + 1  # one launch
        b.view(2, 2).t().unsqueeze(0)  # views: none
        b.detach()  # an alias: none
        torch.empty(3)  # an allocation: none
        torch.mm(b.view(2, 2), b.view(2, 2))  # one launch
    assert counter.ops == 3
    assert dict(counter.by_op) == {"aten::ones": 1, "aten::add": 1, "aten::mm": 1}
    assert counter.syncs == 0 and counter.uploads == 0


def test_counts_what_makes_the_host_wait():
    b = torch.arange(4, dtype=torch.float64)
    with DispatchCounter() as counter:
        b[b > 1.5]  # a comparison, and indexing by a mask (its size is data-dependent)
        float(b.sum())  # a sum, then the scalar read back
        torch.nonzero(b)  # data-dependent size
        b.cpu()  # a copy to the host (nothing to do on CPU tensors, counted all the same)
        b.tolist()
        torch.equal(b, b)  # a Python bool from the device
        torch.linalg.cholesky(torch.eye(2, dtype=torch.float64))  # its error check reads info
    assert dict(counter.sync_by_op) == {
        "aten::index": 1, "aten::_local_scalar_dense": 1, "aten::nonzero": 1, "Tensor.cpu": 1,
        "Tensor.tolist": 1, "aten::equal": 1, "aten::_linalg_check_errors": 1}
    assert counter.by_op["aten::gt"] == counter.by_op["aten::index"] == 1
    assert counter.by_op["aten::nonzero"] == 1 and "aten::_local_scalar_dense" not in counter.by_op


def test_counts_uploads_of_host_data_apart():
    with DispatchCounter() as counter:
        torch.as_tensor(np.zeros(3))
        torch.tensor([1.0, 2.0])
        torch.as_tensor(torch.zeros(2))  # already a tensor: no upload
    assert counter.uploads == 2 and counter.syncs == 0


def test_counts_accumulate_over_uses_and_stop_outside():
    counter = DispatchCounter()
    x = torch.ones(3)
    for _ in range(2):
        with counter:
            x + x
    x * x
    assert counter.ops == 2


def test_one_update_of_a_small_model():
    config = MappingConfig(num_inducing=30, train_steps=3, batch_size=16)
    result = count_update(config, num_samples=200, batch=20, top=5)
    assert result["ops"] > 0 and len(result["by_op"]) == 5
    assert sum(result["sync_by_op"].values()) == result["syncs"]
    # The M-step reads the device once, however many steps it takes.
    more = count_update(config.replace(train_steps=6), num_samples=200, batch=20)
    assert more["syncs"] == result["syncs"]
