"""Typed, validated component configuration shared by the core, the nodes and the CLI.

Every configurable component of the stack describes its settings as a dataclass whose
fields are made with :func:`param`. A field carries its default, a one-line description,
its unit and its admissible range or choices. From that single description:

* the core validates a configuration when it is built (``__post_init__``),
* the ROS nodes declare exactly these fields as parameters with descriptors,
* the YAML parameter files and ``poam-ros`` load into the same dataclasses, refusing
  unknown keys so that a typo in YAML is an error rather than a silent default.

This module imports no ROS.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


class ConfigError(ValueError):
    """A configuration value or key is invalid; the message names the field."""


@dataclass(frozen=True)
class ParamSpec:
    """What a node needs to declare one parameter."""

    name: str
    default: Any
    doc: str
    unit: str | None
    low: float | None
    high: float | None
    choices: tuple | None

    @property
    def description(self) -> str:
        text = self.doc
        if self.unit:
            text += f" [{self.unit}]"
        if self.choices:
            text += f" (one of: {', '.join(map(str, self.choices))})"
        return text


def param(default, doc: str, *, unit: str | None = None, low: float | None = None,
          high: float | None = None, choices: Sequence | None = None):
    """A dataclass field with the metadata :class:`Params` validates and nodes declare."""
    metadata = {"doc": doc, "unit": unit, "low": low, "high": high,
                "choices": tuple(choices) if choices is not None else None}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class Params:
    """Mixin for configuration dataclasses: validation, description and strict loading."""

    def __post_init__(self) -> None:
        for spec in self.specs():
            value = getattr(self, spec.name)
            setattr(self, spec.name, _checked(type(self).__name__, spec, value))
        self.validate()

    def validate(self) -> None:
        """Cross-field checks; subclasses override and raise :class:`ConfigError`."""

    @classmethod
    def specs(cls) -> list[ParamSpec]:
        specs = []
        for f in dataclasses.fields(cls):
            meta = f.metadata
            if "doc" not in meta:
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            specs.append(ParamSpec(f.name, default, meta["doc"], meta["unit"], meta["low"],
                                   meta["high"], meta["choices"]))
        return specs

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None = None, **overrides):
        """Build from a mapping, refusing keys that are not fields of this dataclass."""
        merged = {**(values or {}), **overrides}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(merged) - known)
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown parameter(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known))}")
        return cls(**merged)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _checked(owner: str, spec: ParamSpec, value):
    where = f"{owner}.{spec.name}"
    kind = type(spec.default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is list and isinstance(value, tuple):
        value = list(value)
    if spec.default is not None and not isinstance(value, kind) or (
            kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where} must be of type {kind.__name__}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where} must be finite, got {value!r}")
    if spec.choices is not None and value not in spec.choices:
        raise ConfigError(f"{where} must be one of {list(spec.choices)}, got {value!r}")
    if spec.low is not None and value < spec.low:
        raise ConfigError(f"{where} must be >= {spec.low}, got {value!r}")
    if spec.high is not None and value > spec.high:
        raise ConfigError(f"{where} must be <= {spec.high}, got {value!r}")
    return value
