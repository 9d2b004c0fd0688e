"""The stationary RBF kernel, for comparison with the attentive kernel.

gpytorch's RBFKernel with the same cached-evaluation interface as :class:`AttentiveKernel`:
the squared distances between fixed inducing inputs are computed once per update and reused
in every hyper-parameter step.
"""

from __future__ import annotations

import gpytorch
import torch
from torch import Tensor

from poam_ros.kernels.stationary import StationaryCache


class RBFKernel(StationaryCache, gpytorch.kernels.RBFKernel):
    """k(x, x') = exp(-|x - x'|² / (2 l²)) with one learned lengthscale l (scaled units)."""

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False,
                last_dim_is_batch: bool = False, **params) -> Tensor:
        """gpytorch's RBF, evaluated as :meth:`from_precomputed` for N × D inputs, so that the
        cached and the direct evaluation agree to the last bit."""
        if diag or last_dim_is_batch or x1.dim() != 2 or x2.dim() != 2:
            return super().forward(x1, x2, diag=diag, last_dim_is_batch=last_dim_is_batch,
                                   **params)
        return self.from_precomputed(x1, x2, self.precompute(x1, x2))

    def from_precomputed(self, x1: Tensor, x2: Tensor, sq_dist: Tensor,
                         f1: Tensor | None = None, f2: Tensor | None = None) -> Tensor:
        """k(x1, x2) from squared distances (features unused: there are none). Unlike the
        attentive kernel's base stack, ``exp`` is not clamped here: a value of the one term
        has no larger term beside it to vanish into."""
        return torch.exp(-0.5 * sq_dist / self.lengthscale.reshape(()).square())
