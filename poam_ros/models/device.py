"""Where a model runs: the one reading of ``MappingConfig.device``."""

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
