"""The attentive kernel (AK) of Chen et al., used by POAM.

k(x, x') = (w̄ᵀ w̄') · Σ_m w̄_m w̄'_m · exp(-|x - x'|² / (2 l_m²))

with w̄ = w(x) / |w(x)| and w(x) a small MLP (D → 10 → 10 → K, tanh, softmax). The first factor
(similarity attention) lets the kernel cut correlations across discontinuities; the sum
(lengthscale attention) blends K fixed base RBF kernels, so each location picks its own
lengthscale. Because |w̄| = 1, k(x, x) = 1 everywhere: the amplitude a lives in a ScaleKernel,
so the model's kernel is a·k. By default (``MappingConfig``: ``attention_hidden_width``,
``num_base_lengthscales``, ``min_lengthscale``, ``max_lengthscale``) the hidden layers are 10
wide and K = 10 base lengthscales are spaced linearly from 0.05 to 0.5 in scaled units.

The base lengthscales are fixed, so the stack of base kernels B_m(x, x') depends on the inputs
only. During the hyper-parameter steps the inducing inputs do not move either, so the model
computes B(Z, Z) once per update and reuses it in every step (:meth:`precompute` /
:meth:`from_precomputed`); only the attention weights carry gradients. Methods that optimise the
inducing inputs evaluate the kernel afresh in each step, with gradients for the inputs too.

Reference: W. Chen, R. Khardon, L. Liu, "AK: Attentive Kernel for Information Gathering",
RSS 2022; and "POAM: Probabilistic Online Attentive Mapping ...", Sec. III.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from torch import Tensor, nn

from poam_ros.kernels.base_stack import MixBaseKernels, base_kernel_stack


class AttentiveKernel(Kernel):
    """Non-stationary attentive kernel on inputs of shape N × D (no batch dimensions).

    Args:
        input_dim: D, the input dimension.
        hidden_width: width of the two tanh hidden layers of the attention MLP.
        num_base: K, the number of base RBF kernels (and softmax outputs).
        min_lengthscale, max_lengthscale: the base lengthscales, linearly spaced, in scaled
            input units (inputs scaled to [-1, 1]).
        block_rows: on the CPU, rows of x1 evaluated at a time, so that the K × rows × N2 stack
            of base kernels stays cache-sized and large predictions need bounded memory; None
            for whole matrices, which is what other devices always use (see :meth:`rows_for`).
    """

    is_stationary = False
    has_lengthscale = False

    def __init__(self, input_dim: int = 2, hidden_width: int = 10, num_base: int = 10,
                 min_lengthscale: float = 0.05, max_lengthscale: float = 0.5,
                 block_rows: int | None = 64, **kwargs):
        super().__init__(**kwargs)
        self.input_dim = input_dim
        self.block_rows = block_rows
        self.attention = nn.Sequential(
            nn.Linear(input_dim, hidden_width), nn.Tanh(),
            nn.Linear(hidden_width, hidden_width), nn.Tanh(),
            nn.Linear(hidden_width, num_base), nn.Softmax(dim=-1),
        )
        self.register_buffer("base_lengthscales",
                             torch.linspace(min_lengthscale, max_lengthscale, num_base))

    def attention_weights(self, x: Tensor) -> Tensor:
        """Unit-norm attention vectors w̄(x), N × K."""
        w = self.attention(x)
        return w / w.norm(dim=-1, keepdim=True)

    def lengthscale_map(self, x: Tensor) -> Tensor:
        """Learned lengthscale at each input (N,): softmax weights · base lengthscales."""
        return self.attention(x) @ self.base_lengthscales.to(x)

    def features(self, x: Tensor) -> Tensor:
        """The per-input factor of the kernel, w̄(x) (N × K), for :meth:`columns`."""
        return self.attention_weights(x)

    #: The share of the prior variance that :meth:`distance_correlation` measures: all of it.
    distance_share = 1.0

    def distance_correlation(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The correlation that OIPS thresholds (N1 × N2): the whole kernel, which has no
        constant part (the interface of :class:`~.stationary.StationaryCache`)."""
        return self.forward(x1, x2)

    def rows_for(self, x: Tensor) -> int | None:
        """Rows per block for inputs on x's device: ``block_rows`` on the CPU, whole matrices
        (None) elsewhere, where launches cost more than cache misses."""
        return self.block_rows if x.device.type == "cpu" else None

    def columns(self, x1: Tensor, f1: Tensor, x2: Tensor, f2: Tensor) -> Tensor:
        """k(x1, x2) (N1 × N2) from the inputs' :meth:`features`, for a few columns x2.

        One whole-matrix pass with N1 × N2 × K temporaries and no attention network: the
        kernel columns that pivoted Cholesky asks for one at a time over many candidates.
        """
        stack = base_kernel_stack(x1, x2, self.base_lengthscales.to(x1))  # K × N1 × N2
        mix = (f1.transpose(0, 1).unsqueeze(-1) * f2.transpose(0, 1).unsqueeze(1) * stack).sum(0)
        return mix * (f1 @ f2.transpose(0, 1))

    def precompute(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The parameter-free part: the K × N1 × N2 stack of base kernels."""
        return base_kernel_stack(x1, x2, self.base_lengthscales.to(x1))

    def from_precomputed(self, x1: Tensor, x2: Tensor, stack: Tensor | None,
                         f1: Tensor | None = None, f2: Tensor | None = None) -> Tensor:
        """k(x1, x2) from a stack made by :meth:`precompute` (None: evaluated on the fly);
        differentiable in the MLP. ``f1``, ``f2`` are the inputs' :meth:`features` where the
        caller has them already (K_uu and K_uf share w̄(Z): the network runs once on Z)."""
        w1 = self.attention_weights(x1) if f1 is None else f1
        w2 = (w1 if x2 is x1 else self.attention_weights(x2)) if f2 is None else f2
        mix = MixBaseKernels.apply(w1, w2, x1, x2, self.base_lengthscales.to(x1), stack,
                                   self.rows_for(x1))
        return mix * (w1 @ w2.transpose(-1, -2))

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False,
                last_dim_is_batch: bool = False, **params) -> Tensor:
        if last_dim_is_batch or x1.dim() != 2 or x2.dim() != 2:
            raise ValueError("AttentiveKernel takes inputs of shape N × D without batch dims")
        if diag:
            return torch.ones(x1.shape[0], dtype=x1.dtype, device=x1.device)
        return self.from_precomputed(x1, x2, None)  # a Gram matrix when x2 is x1
