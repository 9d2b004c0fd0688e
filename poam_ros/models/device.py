"""Where a model runs: the one reading of ``MappingConfig.device``; device and precision.

``device`` is auto | cpu | cuda, ``dtype`` float64 (the default) | float32. In float32 the
kernel, the training steps and prediction run in float32; the data terms summed over the whole
mission, the closed-form q(u) and the prediction factors stay float64 (``TERMS_DTYPE``),
because C = K_uf K_fu summed in float32 turns indefinite after a few thousand samples.
``predict(x, kernel_dtype=torch.float32)`` evaluates K(x, Z) in float32 for a float64 model.

Off the CPU the update takes another code path with the same results: the attentive kernel
runs as whole matrices (:mod:`poam_ros.kernels.base_stack`), Adam is fused, the M-step's
mini-batch indices are drawn up front from the model's CPU generator (CPU and GPU draw the
same samples) and its numerical checks are read once after the last step
(:mod:`.training`). With ``mapping.cuda_graphs`` POAM's training steps run on the inducing
set padded to a bucket (:mod:`.padding`) and are replayed from one CUDA graph per bucket
(:mod:`.captured`): M changes while the set fills and, for the methods that size themselves, at
every update, but a bucket holds many sizes.
"""

from __future__ import annotations

import torch

from poam_ros.params import ConfigError


def resolve_device(name: str) -> torch.device:
    """The torch device for a ``device`` setting: ``auto`` picks CUDA when torch sees it and
    the CPU otherwise; ``cuda`` where torch sees no CUDA device is a :class:`ConfigError`."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda': torch sees no CUDA device here; "
                          "choose one of: auto, cpu")
    return torch.device(name)
