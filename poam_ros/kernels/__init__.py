"""Covariance functions with a cached-evaluation interface for fixed inducing inputs.

Both kernels have unit diagonal (k(x, x) = 1); the amplitude is a gpytorch ScaleKernel around
them. Besides gpytorch's ``forward`` they offer ``precompute(x1, x2)`` (the part that does not
depend on trainable parameters) and ``from_precomputed(x1, x2, cache)``, and
``lengthscale_map(x)``.
"""

from gpytorch.kernels import ScaleKernel

from poam_ros.kernels.attentive_kernel import AttentiveKernel
from poam_ros.kernels.rbf_kernel import RBFKernel

__all__ = ["AttentiveKernel", "RBFKernel", "ScaleKernel", "make_kernel"]

KERNELS = ("attentive", "rbf")


def make_kernel(name: str, input_dim: int, config) -> ScaleKernel:
    """Build the named kernel inside a ScaleKernel from a MappingConfig-like object."""
    if name == "attentive":
        base = AttentiveKernel(input_dim, config.attention_hidden_width,
                               config.num_base_lengthscales, config.min_lengthscale,
                               config.max_lengthscale)
    elif name == "rbf":
        base = RBFKernel()
        base.lengthscale = config.rbf_initial_lengthscale
    else:
        raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
    kernel = ScaleKernel(base)
    kernel.outputscale = config.initial_amplitude
    return kernel
