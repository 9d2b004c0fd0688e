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
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence


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
          high: float | None = None, choices: Sequence | Callable[[], Sequence] | None = None):
    """A dataclass field with the metadata :class:`Params` validates and nodes declare.

    ``choices`` may be a function giving them, read whenever the field is checked or
    declared: a set that grows at run time (the mapping methods' registry)."""
    metadata = {"doc": doc, "unit": unit, "low": low, "high": high,
                "choices": tuple(choices) if choices is not None and not callable(choices)
                else choices}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class Params:
    """Mixin for configuration dataclasses: validation, description and strict loading.

    A field made with :func:`group` holds a nested config: its fields are the parameters
    ``<group>.<name>`` (``mapping.vips.delta``), declared, loaded and written as any other.
    """

    #: old field name -> its new (dotted) name; naming the old one is refused with the new
    RENAMED: ClassVar[Mapping[str, str]] = {}

    def __post_init__(self) -> None:
        for spec in self._own_specs():
            value = getattr(self, spec.name)
            setattr(self, spec.name, _checked(type(self).__name__, spec, value))
        for name, group_cls in self.groups().items():
            if not isinstance(getattr(self, name), group_cls):
                raise ConfigError(f"{type(self).__name__}.{name} must be a "
                                  f"{group_cls.__name__}, got {getattr(self, name)!r}")
        self.validate()

    def validate(self) -> None:
        """Cross-field checks; subclasses override and raise :class:`ConfigError`."""

    @classmethod
    def groups(cls) -> dict[str, type[Params]]:
        """The nested configs by field name."""
        return {f.name: f.default_factory for f in dataclasses.fields(cls)
                if "group" in f.metadata}

    @classmethod
    def specs(cls) -> list[ParamSpec]:
        """Every parameter, a group's as ``<group>.<name>``."""
        specs = cls._own_specs()
        for name, group_cls in cls.groups().items():
            specs += [dataclasses.replace(spec, name=f"{name}.{spec.name}")
                      for spec in group_cls.specs()]
        return specs

    @classmethod
    def _own_specs(cls) -> list[ParamSpec]:
        specs = []
        for f in dataclasses.fields(cls):
            meta = f.metadata
            if "doc" not in meta:
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            choices = meta["choices"]() if callable(meta["choices"]) else meta["choices"]
            specs.append(ParamSpec(f.name, default, meta["doc"], meta["unit"], meta["low"],
                                   meta["high"], None if choices is None else tuple(choices)))
        return specs

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None = None, **overrides):
        """Build from a mapping, refusing names that are no parameter of this dataclass (a
        renamed one with its new name). A group's values are a mapping, a config or dotted
        names (``vips.delta``)."""
        merged = {**(values or {}), **overrides}
        cls._refuse_unknown(merged)
        return cls(**cls._grouped(merged, None))

    @classmethod
    def _refuse_unknown(cls, values: Mapping[str, Any]) -> None:
        known = {spec.name for spec in cls.specs()} | set(cls.groups())
        unknown = sorted(set(_dotted(values, cls.groups())) - known)
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown parameter(s) "
                              f"{', '.join(cls.new_names(unknown))}; "
                              f"known: {', '.join(sorted(known))}")

    @classmethod
    def new_names(cls, names: Iterable[str], prefix: str = "") -> list[str]:
        """``names`` under ``prefix``, a renamed one with its new name: ``mapping.vips_delta
        (now mapping.vips.delta)``."""
        lead = f"{prefix}." if prefix else ""
        return [f"{lead}{name} (now {lead}{cls.RENAMED[name]})" if name in cls.RENAMED
                else f"{lead}{name}" for name in names]

    def to_dict(self) -> dict[str, Any]:
        """Field values, a group's as a dict of its own."""
        groups = self.groups()
        return {f.name: getattr(self, f.name).to_dict() if f.name in groups
                else getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_parameters(self) -> dict[str, Any]:
        """Values by parameter name, as :meth:`specs` names them (``vips.delta``)."""
        values = self.to_dict()
        for name in self.groups():
            values.update({f"{name}.{key}": value
                           for key, value in getattr(self, name).to_parameters().items()})
            del values[name]
        return values

    def replace(self, **changes):
        """A copy with ``changes``; a group's given as a config, as a mapping of the changes to
        make to it, or as dotted names (``replace(**{"vips.delta": 0.01})``)."""
        self._refuse_unknown(changes)
        return dataclasses.replace(self, **self._grouped(changes, self))

    @classmethod
    def _grouped(cls, values: Mapping[str, Any], current: Params | None) -> dict[str, Any]:
        """``values`` with each group's entries made into that group's config, over
        ``current``'s (None: the defaults)."""
        groups = cls.groups()
        own: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            head, dot, rest = name.partition(".")
            if dot:
                nested.setdefault(head, {})[rest] = value
            elif name in groups and isinstance(value, Mapping):
                nested.setdefault(name, {}).update(value)
            else:
                own[name] = value
        for name, changes in nested.items():
            base = own.get(name, None if current is None else getattr(current, name))
            own[name] = (base.replace(**changes) if isinstance(base, Params)
                         else groups[name].from_dict(changes))
        return own


def group(config_cls: type[Params]):
    """A dataclass field holding the nested config ``config_cls`` (see :class:`Params`):
    the options of one part of a component, beside the ones its parts share."""
    return dataclasses.field(default_factory=config_cls, metadata={"group": True})


def _dotted(values: Mapping[str, Any], groups: Mapping[str, type[Params]]) -> list[str]:
    """The parameter names ``values`` sets, a group's mapping as dotted names."""
    names = []
    for name, value in values.items():
        if name in groups and isinstance(value, Mapping):
            names += [f"{name}.{key}" for key in _dotted(value, groups[name].groups())]
        else:
            names.append(name)
    return names


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
