"""The cached-evaluation interface shared by the stationary kernels of one lengthscale.

Their parameter-free part is the squared distance between inputs (computed once per update for
fixed inducing inputs, :meth:`precompute`), and they have no per-input factor: the column-wise
selection's ``features`` are empty (N × 0), as the attentive kernel's are not.
"""

from __future__ import annotations

from torch import Tensor

from poam_ros.kernels.base_stack import squared_distances


class StationaryCache:
    """Mixin for a gpytorch kernel with one ``lengthscale`` that defines
    ``from_precomputed(x1, x2, sq_dist)``."""

    def precompute(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The parameter-free part: squared distances, N1 × N2."""
        return squared_distances(x1, x2)

    def features(self, x: Tensor) -> Tensor:
        """No per-input factor (N × 0): the interface of :meth:`AttentiveKernel.features`."""
        return x.new_empty(x.shape[0], 0)

    #: The share of the prior variance that :meth:`distance_correlation` measures: all of it.
    distance_share = 1.0

    def distance_correlation(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The correlation of the part that tells places apart (N1 × N2), which OIPS
        thresholds: the whole kernel (overridden where a constant part correlates all pairs)."""
        return self.from_precomputed(x1, x2, self.precompute(x1, x2))

    def columns(self, x1: Tensor, f1: Tensor, x2: Tensor, f2: Tensor) -> Tensor:
        """k(x1, x2); the features are empty."""
        return self.from_precomputed(x1, x2, self.precompute(x1, x2))

    def lengthscale_map(self, x: Tensor) -> Tensor:
        """The one lengthscale l at every input (N,)."""
        return self.lengthscale.reshape(()).expand(x.shape[0])
