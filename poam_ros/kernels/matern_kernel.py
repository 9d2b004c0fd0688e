"""A constant plus a Matérn-5/2 kernel, the kernel of the VIPS and OIPS papers' magnetometer runs.

The papers' kernel is c_v + σ² m(r/l), with a constant variance c_v ≥ 0 (the field's unknown
offset), a Matérn-5/2 variance σ² and

    m(s) = (1 + √5 s + 5 s² / 3) · exp(−√5 s),   s = |x − x'| / l.

Here it has unit diagonal like the other kernels, so that the amplitude a of the surrounding
ScaleKernel is the prior variance k(x, x) everywhere (the selection, the prediction and OIPS's
threshold ρ·a read it so):

    k(x, x') = (c + m(|x − x'| / l)) / (1 + c),   c ≥ 0 learned, l > 0 learned.

With a = c_v + σ² and c = c_v / σ², a·k is the papers' kernel exactly, for every c_v, σ² ≥ 0
(c → ∞ is a pure constant). Every correlation is at least c / (1 + c), so OIPS tests the
Matérn part alone (:meth:`ConstantMaternKernel.distance_correlation`).

Reference: C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning",
MIT Press 2006, Eq. 4.17 (the Matérn class at ν = 5/2).
"""

from __future__ import annotations

import math

import gpytorch
import torch
from gpytorch.constraints import Positive
from torch import Tensor

from poam_ros.kernels.stationary import StationaryCache

_SQRT5 = math.sqrt(5.0)


class ConstantMaternKernel(StationaryCache, gpytorch.kernels.Kernel):
    """k(x, x') = (c + m(|x − x'| / l)) / (1 + c) on N × D inputs (scaled units), m the
    Matérn-5/2 correlation; one lengthscale l (gpytorch's ``lengthscale``) and the constant's
    share c (``constant``, a ratio of variances, ≥ 0), both learned.

    Like :class:`~poam_ros.kernels.RBFKernel` it caches squared distances (:meth:`precompute`)
    and has no per-input features.
    """

    has_lengthscale = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.register_parameter("raw_constant", torch.nn.Parameter(torch.zeros(1)))
        self.register_constraint("raw_constant", Positive())

    @property
    def constant(self) -> Tensor:
        """c, the constant's variance over the Matérn part's (shape (1,))."""
        return self.raw_constant_constraint.transform(self.raw_constant)

    @constant.setter
    def constant(self, value) -> None:
        value = torch.as_tensor(value, dtype=self.raw_constant.dtype,
                                device=self.raw_constant.device)
        self.initialize(raw_constant=self.raw_constant_constraint.inverse_transform(value))

    def from_precomputed(self, x1: Tensor, x2: Tensor, sq_dist: Tensor,
                         f1: Tensor | None = None, f2: Tensor | None = None) -> Tensor:
        """k(x1, x2) from squared distances (features unused: there are none).

        The distance is the root of the squared distance floored at the smallest normal
        number: m is smooth at 0 (m'(0) = 0) but the root is not, and the floor keeps the
        gradient with respect to coinciding inputs 0 instead of 0 · ∞. The floor's root
        (1e-154 in float64) changes no kernel value.
        """
        c = self.constant.reshape(())
        return (c + self._matern(sq_dist)) / (1.0 + c)

    def _matern(self, sq_dist: Tensor) -> Tensor:
        dist = sq_dist.clamp_min(torch.finfo(sq_dist.dtype).tiny).sqrt()
        s = _SQRT5 * dist / self.lengthscale.reshape(())
        return (1.0 + s + s.square() / 3.0) * torch.exp(-s)

    def distance_correlation(self, x1: Tensor, x2: Tensor) -> Tensor:
        """m(|x1 − x2| / l) (N1 × N2): the correlation of the Matérn part alone, the part that
        tells places apart (the constant correlates every pair by c / (1 + c))."""
        return self._matern(self.precompute(x1, x2))

    @property
    def distance_share(self) -> Tensor:
        """1 / (1 + c): the Matérn part's share of the prior variance (no gradient)."""
        return 1.0 / (1.0 + self.constant.detach().reshape(()))

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False,
                last_dim_is_batch: bool = False, **params) -> Tensor:
        if last_dim_is_batch or x1.dim() != 2 or x2.dim() != 2:
            raise ValueError("ConstantMaternKernel takes inputs of shape N × D without batch "
                             "dims")
        if diag:
            return torch.ones(x1.shape[0], dtype=x1.dtype, device=x1.device)
        return self.from_precomputed(x1, x2, self.precompute(x1, x2))
