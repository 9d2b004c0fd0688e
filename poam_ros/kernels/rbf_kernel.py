"""The stationary RBF kernel, for comparison with the attentive kernel.

gpytorch's RBFKernel with the same cached-evaluation interface as :class:`AttentiveKernel`:
the squared distances between fixed inducing inputs are computed once per update and reused
in every hyper-parameter step.
"""

from __future__ import annotations

import gpytorch
import torch
from torch import Tensor

from poam_ros.kernels.base_stack import squared_distances


class RBFKernel(gpytorch.kernels.RBFKernel):
    """k(x, x') = exp(-|x - x'|² / (2 l²)) with one learned lengthscale l (scaled units)."""

    def precompute(self, x1: Tensor, x2: Tensor) -> Tensor:
        return squared_distances(x1, x2)

    def from_precomputed(self, x1: Tensor, x2: Tensor, sq_dist: Tensor) -> Tensor:
        return torch.exp(-0.5 * sq_dist / self.lengthscale.reshape(()).square())

    def lengthscale_map(self, x: Tensor) -> Tensor:
        return self.lengthscale.reshape(()).expand(x.shape[0])
