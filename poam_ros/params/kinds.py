"""The ROS parameter type of each configuration field, decided without importing ROS.

ROS fixes a parameter's type when the node declares it and then refuses values of any
other type: a YAML ``1`` is an INTEGER and cannot set a DOUBLE parameter, ``[1, 2]`` cannot
set a DOUBLE_ARRAY. Nodes declare with these types (:mod:`poam_ros.ros.parameters`) and the YAML
loader (:mod:`poam_ros.params.files`) holds files to them, so a file that a node would refuse
is refused before any node starts, with the same rule everywhere.

Kinds are the lower-case names of ``rcl_interfaces/ParameterType``: ``bool``, ``integer``,
``double``, ``string`` and each of them with ``_array``.
"""

from __future__ import annotations

import typing
from typing import Any

from poam_ros.params import ConfigError, ParamSpec

_SCALAR_KINDS = {bool: "bool", int: "integer", float: "double", str: "string"}


def parameter_kind(config_cls: type, spec: ParamSpec) -> str:
    """Kind of a field: from its default, and for lists from ``list[T]`` or the elements.

    A bare ``list`` field with an empty default is taken as ``double_array``; annotate it
    ``list[int]`` (or ``list[str]``...) when it holds something else.
    """
    if isinstance(spec.default, list):
        element = _annotated_element(config_cls, spec.name) or _element_type(spec)
        return _SCALAR_KINDS[element] + "_array"
    kind = _SCALAR_KINDS.get(type(spec.default))
    if kind is None:
        raise ConfigError(f"{config_cls.__name__}.{spec.name}: a default of type "
                          f"{type(spec.default).__name__} has no ROS parameter type")
    return kind


def value_kind(value: Any) -> str | None:
    """Kind ROS gives a YAML value, or None when it has none (mixed or nested lists).

    An empty list fits every array kind and is reported as ``"array"``.
    """
    if not isinstance(value, list):
        return _SCALAR_KINDS.get(type(value))
    if not value:
        return "array"
    kinds = {_SCALAR_KINDS.get(type(item)) for item in value}
    return f"{kinds.pop()}_array" if len(kinds) == 1 and None not in kinds else None


def check_value_kind(where: str, kind: str, value: Any) -> None:
    """Raise :class:`ConfigError` unless ROS would accept ``value`` for a ``kind`` parameter."""
    given = value_kind(value)
    if given == kind or (given == "array" and kind.endswith("_array")):
        return
    hint = ""
    if kind.startswith("double") and given in ("integer", "integer_array"):
        hint = "; ROS reads 1 as an integer: write 1.0"
    raise ConfigError(f"{where}: expected {kind}, got {value!r} "
                      f"({given or 'no ROS parameter type'}){hint}")


def _annotated_element(config_cls: type, name: str) -> type | None:
    group, dot, field = name.partition(".")
    if dot:  # a nested config's field (Params groups)
        return _annotated_element(config_cls.groups()[group], field)
    try:
        hint = typing.get_type_hints(config_cls).get(name)
    except NameError:  # an annotation naming something the module does not define
        return None
    arguments = typing.get_args(hint) if typing.get_origin(hint) is list else ()
    return arguments[0] if len(arguments) == 1 and arguments[0] in _SCALAR_KINDS else None


def _element_type(spec: ParamSpec) -> type:
    types = {type(item) for item in spec.default}
    if not types:
        return float
    if len(types) == 1 and next(iter(types)) in _SCALAR_KINDS:
        return types.pop()
    if types == {int, float}:
        return float
    raise ConfigError(f"{spec.name}: list default {spec.default!r} mixes element types")
