"""The survey's channels: the depth (the soundings' elevation) first, then the ingest's.

A survey with channels besides the depth (``ingest.channels``: a temperature, ...) is mapped
by one multi-channel model of D = 1 + C outputs; the mapper node and the ROS-free mission
build it here, from the same configuration, and name its layers and figures from
:func:`channel_names`.
"""

from __future__ import annotations

from typing import Sequence

from poam_ros.models import METHODS, MappingConfig, OnlineSparseGP, make_model
from poam_ros.models.multitask import MultiTaskSparseGP
from poam_ros.params import ConfigError

#: the name of the first channel, the soundings' elevation, in per-channel records and layers
DEPTH = "depth"


def channel_names(channels: Sequence[str]) -> tuple[str, ...]:
    """The model's outputs in order: the depth, then ``channels`` (the ingest's)."""
    return (DEPTH, *channels)


def check_method(config: MappingConfig, channels: Sequence[str]) -> None:
    """``ConfigError`` unless ``config.method`` maps ``channels`` besides the depth."""
    if channels and not issubclass(METHODS[config.method], MultiTaskSparseGP):
        multi = sorted(name for name, cls in METHODS.items()
                       if issubclass(cls, MultiTaskSparseGP))
        raise ConfigError(f"mapping.method {config.method!r} maps one channel; with "
                          f"ingest.channels {list(channels)!r} use one of {multi}")


def survey_model(config: MappingConfig, channels: Sequence[str] = ()) -> OnlineSparseGP:
    """The configured method over 2-D positions; with ``channels`` one of D = 1 + C outputs
    (a multi-channel method, else ``ConfigError``)."""
    if not channels:
        return make_model(config)
    check_method(config, channels)
    return METHODS[config.method](config, 2, output_dim=1 + len(channels))


def output_count(model: OnlineSparseGP) -> int:
    """D, the model's channels (1 for a single-channel method)."""
    return getattr(model, "output_dim", 1)
