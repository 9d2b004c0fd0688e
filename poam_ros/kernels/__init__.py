"""Covariance functions with a cached-evaluation interface for fixed inducing inputs.

The kernels (attentive, RBF, constant + Matérn-5/2) have unit diagonal (k(x, x) = 1); the
amplitude is a gpytorch ScaleKernel around them. Besides gpytorch's ``forward`` they offer
``precompute(x1, x2)`` (the part that does not depend on trainable parameters) and
``from_precomputed(x1, x2, cache)``, ``features(x)`` and ``columns(x1, f1, x2, f2)`` (kernel
columns for the selection) and ``lengthscale_map(x)``.
"""

from gpytorch.kernels import ScaleKernel

from poam_ros.kernels.attentive_kernel import AttentiveKernel
from poam_ros.kernels.matern_kernel import ConstantMaternKernel
from poam_ros.kernels.rbf_kernel import RBFKernel

__all__ = ["AttentiveKernel", "ConstantMaternKernel", "RBFKernel", "ScaleKernel", "make_kernel"]

KERNELS = ("attentive", "rbf", "matern52")


def make_kernel(name: str, input_dim: int, config) -> ScaleKernel:
    """Build the named kernel inside a ScaleKernel from a MappingConfig-like object."""
    if name == "attentive":
        base = AttentiveKernel(input_dim, config.attention_hidden_width,
                               config.num_base_lengthscales, config.min_lengthscale,
                               config.max_lengthscale)
    elif name == "rbf":
        base = RBFKernel(ard_num_dims=input_dim if config.rbf_ard else None)
        base.lengthscale = config.rbf_initial_lengthscale
    elif name == "matern52":
        base = ConstantMaternKernel()
        base.lengthscale = config.matern_initial_lengthscale
        base.constant = config.matern_initial_constant
    else:
        raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
    kernel = ScaleKernel(base)
    kernel.outputscale = config.initial_amplitude
    return kernel
