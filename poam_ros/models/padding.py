"""Static shapes for the training steps: sizes padded to buckets, padded rows that add nothing.

A replayed CUDA graph or a compiled kernel is specialised to its shapes, but M grows while the
inducing set fills and, for the methods that size themselves (``vips``, ``poam-vips``,
``oips``, ``cv``), changes at every update. With ``mapping.static_shapes`` the M-step's
objectives (:mod:`.objectives`) pad the inducing set to a bucket (:func:`bucket`: powers of two
from ``MIN_BUCKET``, capped at ``num_inducing``), so that a capture or compilation is made once
per bucket and reused across updates. A size that fills its bucket (M at the cap) is left
unmasked on the eager and compiled paths, where the mask would only cost; a captured step
masks it with all ones, as its graph serves the whole bucket.

A padded set Z̃ = [Z; P] (P: ``bucket − M`` rows at the origin, a finite point) is masked by
m = [1…1, 0…0]:

    K̃_uu = (m mᵀ) ⊙ K(Z̃, Z̃) + κ diag(1 − m),     K̃_uf = (m 1ᵀ) ⊙ K(Z̃, X)

with κ the mean of K_uu's diagonal (detached): the padded matrix is block-diagonal, its
Cholesky factor that of K_uu beside √κ·I, and the relative jitter of
:func:`~.linalg.robust_cholesky` (scaled by the diagonal's mean) is unchanged. The masked
entries are multiplied by an exact zero, so they carry no gradient into the attention network
or the amplitude. q(u) is padded with zero means and, for the ELBO's KL term, a covariance
block s·I with s = κ(1 + jitter), the jittered pad block of K̃_uu: its share of
tr(K⁻¹S) + log|K| − log|S| − M is P(1 + 0 − 1) = 0, and its gradient through K is zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: The smallest bucket: below it, a size is padded to this.
MIN_BUCKET = 32


def bucket(size: int, cap: int) -> int:
    """The padded size of ``size`` rows: the smallest power of two ≥ size (at least
    ``MIN_BUCKET``), but at most ``cap``, and never below ``size``."""
    power = max(MIN_BUCKET, 1 << max(size - 1, 0).bit_length())
    return max(size, min(power, cap))


class Padding:
    """``size`` real rows padded to ``bucket(size, cap)``; ``mask`` (bucket,) is 1 on real rows
    and 0 on padded ones."""

    def __init__(self, size: int, cap: int, dtype: torch.dtype, device: torch.device):
        self.size, self.bucket = size, bucket(size, cap)
        self.mask = torch.zeros(self.bucket, dtype=dtype, device=device)
        self.mask[:size] = 1.0

    @property
    def extra(self) -> int:
        """Padded rows."""
        return self.bucket - self.size

    def rows(self, tensor: Tensor) -> Tensor:
        """``tensor`` (size × …) with zero rows appended to the bucket."""
        fill = tensor.new_zeros((self.extra, *tensor.shape[1:]))
        return torch.cat([tensor, fill]) if self.extra else tensor

    def block(self, matrix: Tensor, diagonal: float = 0.0) -> Tensor:
        """A size × size ``matrix`` as the leading block of a bucket × bucket one whose padded
        block is ``diagonal``·I."""
        if not self.extra:
            return matrix
        eye = torch.eye(self.extra, dtype=matrix.dtype, device=matrix.device)
        return torch.block_diag(matrix, diagonal * eye)


def masked_gram(kernel: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """K̃_uu from K(Z̃, Z̃) and the mask: the real block kept, the padded block κI; and κ
    (detached). Tensors only, so that a compiled or captured step takes any mask of its
    bucket."""
    kappa = (kernel.diagonal().detach() * mask).sum() / mask.sum()
    masked = kernel * torch.outer(mask, mask)
    return masked + torch.diag((1.0 - mask) * kappa), kappa
