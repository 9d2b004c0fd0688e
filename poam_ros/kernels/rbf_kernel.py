"""The stationary RBF kernel, for comparison with the attentive kernel.

gpytorch's RBFKernel with the same cached-evaluation interface as :class:`AttentiveKernel`:
the squared distances between fixed inducing inputs are computed once per update and reused
in every hyper-parameter step. With one lengthscale per input dimension (``ard_num_dims``,
automatic relevance determination) the distances depend on the lengthscales, so nothing is
cached: each evaluation scales the inputs first.
"""

from __future__ import annotations

import gpytorch
import torch
from torch import Tensor

from poam_ros.kernels.base_stack import squared_distances
from poam_ros.kernels.stationary import StationaryCache


class RBFKernel(StationaryCache, gpytorch.kernels.RBFKernel):
    """k(x, x') = exp(-|x - x'|² / (2 l²)) with one learned lengthscale l (scaled units), or
    exp(-Σ_d (x_d - x'_d)² / (2 l_d²)) with one per dimension (``ard_num_dims`` = D)."""

    @property
    def ard(self) -> bool:
        return self.ard_num_dims is not None

    def precompute(self, x1: Tensor, x2: Tensor) -> Tensor:
        """Squared distances, N1 × N2; with ARD nothing (0 × 0): they depend on the
        lengthscales."""
        return x1.new_empty(0, 0) if self.ard else squared_distances(x1, x2)

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
        if self.ard:
            lengthscales = self.lengthscale.reshape(-1)
            return torch.exp(-0.5 * squared_distances(x1 / lengthscales, x2 / lengthscales))
        return torch.exp(-0.5 * sq_dist / self.lengthscale.reshape(()).square())

    def lengthscale_map(self, x: Tensor) -> Tensor:
        """The lengthscale at every input (N,); with ARD the geometric mean of the D
        lengthscales (the radius of the sphere of the same volume as the ellipsoid)."""
        if not self.ard:
            return super().lengthscale_map(x)
        return self.lengthscale.reshape(-1).log().mean().exp().expand(x.shape[0])
