"""What the journal and persistence tests share: a small model, batches of a smooth field and a
clock the test moves by hand."""

import numpy as np

from poam_ros.models import MappingConfig

SMALL = MappingConfig(num_inducing=20, train_steps=1, batch_size=32, device="cpu")


def batch(seed, n=50):
    """``n`` samples (xy (n, 2) m, z (n,)) of a smooth field, drawn from ``seed``."""
    xy = np.random.default_rng(seed).uniform(-30.0, 30.0, (n, 2))
    return xy, np.sin(xy[:, 0] / 7.0) + np.cos(xy[:, 1] / 9.0)


class Clock:
    """A monotonic clock that stands still until a test sets ``now`` (s)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now
