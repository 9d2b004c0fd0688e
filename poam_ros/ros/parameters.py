"""Declare a configuration dataclass as ROS parameters and keep it valid when they change.

A node declares each of its configs once (:func:`declare_config`): every field becomes a
typed parameter whose descriptor carries the field's description, unit and range, so
``ros2 param describe`` documents it and rclpy itself refuses out-of-range values; a value
of the wrong type is refused in words (``mapping.num_inducing: expected an integer, got a
double (2.5)``) rather than in rclpy's type codes. :func:`add_config_callback` then vets
every proposed change by building the dataclass with it, which also applies the checks a
descriptor cannot express (choices, finiteness, cross-field ``validate``), and hands the
node the new config once the change has been made.
"""

from __future__ import annotations

import math
import sys
import weakref
from typing import Callable, Iterable, TypeVar

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

from poam_ros.params import ConfigError, Params, ParamSpec
from poam_ros.params.kinds import parameter_kind

ConfigT = TypeVar("ConfigT", bound=Params)

_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
_ELEMENT_TYPES = {"bool": bool, "integer": int, "double": float, "string": str}
_TYPE_NAMES = {Parameter.Type.BOOL: "a bool", Parameter.Type.INTEGER: "an integer",
               Parameter.Type.DOUBLE: "a double", Parameter.Type.STRING: "a string",
               Parameter.Type.BYTE_ARRAY: "a byte array", Parameter.Type.BOOL_ARRAY: "a bool array",
               Parameter.Type.INTEGER_ARRAY: "an integer array",
               Parameter.Type.DOUBLE_ARRAY: "a double array",
               Parameter.Type.STRING_ARRAY: "a string array"}
_TYPE_GUARDED: weakref.WeakSet[Node] = weakref.WeakSet()  # nodes that refuse types by name


def parameter_name(prefix: str, field: str) -> str:
    """``model`` + ``num_inducing`` -> ``model.num_inducing``, ROS's nesting separator."""
    return f"{prefix}.{field}" if prefix else field


def declare_config(node: Node, config_cls: type[ConfigT], prefix: str = "", *,
                   read_only: Iterable[str] = ()) -> ConfigT:
    """Declare every field of ``config_cls`` under ``prefix`` and build it from the values.

    Values come from the node's overrides (``--params-file``, ``parameter_overrides``) or
    the field defaults. Fields named in ``read_only`` cannot change after start-up. A value
    ROS refuses (an integer for a double, out of range) or the dataclass refuses raises
    :class:`ConfigError` naming the parameter, so a misconfigured node fails at start.
    """
    _guard_types(node)
    read_only = set(read_only)
    unknown = read_only - {spec.name for spec in config_cls.specs()}
    if unknown:
        raise ConfigError(f"{config_cls.__name__}: read_only names unknown field(s) "
                          f"{', '.join(sorted(unknown))}")
    for spec in config_cls.specs():
        name = parameter_name(prefix, spec.name)
        kind = parameter_kind(config_cls, spec)
        descriptor = _descriptor(spec, kind, spec.name in read_only)
        default = _typed(spec.default, kind)
        try:
            if default == []:
                # rclpy would infer BYTE_ARRAY from an empty list: declare by type instead and
                # leave it unset, read_config falls back to the (empty) field default.
                node.declare_parameter(name, Parameter.Type(descriptor.type), descriptor)
            else:
                node.declare_parameter(name, default, descriptor)
        except InvalidParameterTypeException as error:
            hint = "; ROS reads 1 as an integer: write 1.0" if kind.startswith("double") else ""
            raise ConfigError(f"{config_cls.__name__}.{spec.name}: {error}{hint}") from error
        except InvalidParameterValueException as error:
            raise ConfigError(f"{config_cls.__name__}.{spec.name}: {error}") from error
    return read_config(node, config_cls, prefix)


def read_config(node: Node, config_cls: type[ConfigT], prefix: str = "") -> ConfigT:
    """``config_cls`` built from the node's current values of its declared parameters."""
    values = {}
    for spec in config_cls.specs():
        name = parameter_name(prefix, spec.name)
        try:
            value = node.get_parameter(name).value
        except ParameterUninitializedException:
            # Declared by type and left unset: an empty-list default (declare_config), or a
            # file's ``[]``, which rcl reads as no value at all: an empty list either way,
            # never the default (``workspace.vertices: []`` is refused, not the default area).
            if not isinstance(spec.default, list):
                raise ConfigError(f"{name}: no value given") from None
            value = []
        values[spec.name] = list(value) if isinstance(spec.default, list) else value
    return config_cls.from_dict(values)


def add_config_callback(node: Node, config_cls: type[ConfigT],
                        apply: Callable[[ConfigT], None], prefix: str = "") -> None:
    """Vet changes to a declared config's parameters and pass the new config to ``apply``.

    A change is refused, with the :class:`ConfigError` text as the reason, when the config
    built with it is invalid; the node keeps its old values and runs on. ``apply`` runs
    after rclpy has stored an accepted change (a post-set callback), so it never sees a
    change that another callback refused. Parameters of other configs are left alone.
    Register after :func:`declare_config`. Changes that only make sense together (a
    min/max pair) must be set atomically (``set_parameters_atomically``).
    """
    fields = {parameter_name(prefix, spec.name): spec.name for spec in config_cls.specs()}

    def vet(parameters: list[Parameter]) -> SetParametersResult:
        try:
            proposed_config(node, config_cls, parameters, prefix)
        except ConfigError as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def apply_accepted(parameters: list[Parameter]) -> None:
        if any(p.name in fields for p in parameters):
            apply(read_config(node, config_cls, prefix))

    node.add_on_set_parameters_callback(vet)
    node.add_post_set_parameters_callback(apply_accepted)


def proposed_config(node: Node, config_cls: type[ConfigT], parameters: list[Parameter],
                    prefix: str = "") -> ConfigT:
    """``config_cls`` as it would be with the proposed ``parameters`` (those of other configs
    are ignored); raises :class:`ConfigError` when that config is invalid. For set-parameters
    callbacks that check more than one config together."""
    fields = {parameter_name(prefix, spec.name): spec.name for spec in config_cls.specs()}
    changes = {fields[p.name]: _python_value(p.value) for p in parameters
               if p.name in fields and p.type_ != Parameter.Type.NOT_SET}
    current = read_config(node, config_cls, prefix)
    return current.replace(**changes) if changes else current


def _guard_types(node: Node) -> None:
    """Make ``node`` refuse a value of the wrong type in words (:func:`_type_refusal`).

    rclpy checks a value's type against the descriptor before any set-parameters callback
    runs and refuses it in type codes ("Wrong parameter type, expected '2' got '3'"). Only
    a pre-set callback runs earlier, and it can only rewrite the list: it swaps each value
    of the wrong type for a :class:`_WrongType` stand-in, which a set-parameters callback
    then refuses with its reason, so nothing is set and the descriptors stay typed.
    """
    if node in _TYPE_GUARDED:
        return
    _TYPE_GUARDED.add(node)

    def refuse(parameters: list[Parameter]) -> SetParametersResult:
        reasons = [p.reason for p in parameters if isinstance(p, _WrongType)]
        return SetParametersResult(successful=not reasons, reason="; ".join(reasons))

    node.add_pre_set_parameters_callback(lambda parameters: [_screened(node, p)
                                                             for p in parameters])
    node.add_on_set_parameters_callback(refuse)


class _WrongType(Parameter):
    """Stands in for a value of the wrong type: the parameter's current value, which passes
    rclpy's type check, and the refusal to give."""

    def __init__(self, name: str, declared: Parameter.Type, current, reason: str) -> None:
        super().__init__(name, declared, current)
        self.reason = reason


def _screened(node: Node, parameter: Parameter) -> Parameter:
    """``parameter``, or its :class:`_WrongType` stand-in if its type is not the declared
    one. Undeclared names (rclpy refuses them) and dynamically typed ones pass as they are."""
    if not node.has_parameter(parameter.name):
        return parameter
    descriptor = node.describe_parameter(parameter.name)
    if descriptor.dynamic_typing or parameter.type_ in (Parameter.Type.NOT_SET, descriptor.type):
        return parameter
    declared = Parameter.Type(descriptor.type)
    # An unset parameter (an empty list default, see declare_config) stands in as empty.
    empty = [] if declared.name.endswith("_ARRAY") else _ELEMENT_TYPES[declared.name.lower()]()
    current = node.get_parameter_or(parameter.name, Parameter(parameter.name, declared, empty))
    return _WrongType(parameter.name, declared, current.value,
                      _type_refusal(parameter.name, declared, parameter))


def _type_refusal(name: str, expected: Parameter.Type, given: Parameter) -> str:
    """``mapping.num_inducing: expected an integer, got a double (2.5)``."""
    value = given.value
    shown = (repr(value) if isinstance(value, str) else
             value if isinstance(value, (bool, int, float)) else list(value))
    integer_for_double = (expected, given.type_) in {
        (Parameter.Type.DOUBLE, Parameter.Type.INTEGER),
        (Parameter.Type.DOUBLE_ARRAY, Parameter.Type.INTEGER_ARRAY)}
    hint = "; ROS reads 1 as an integer: write 1.0" if integer_for_double else ""
    return (f"{name}: expected {_TYPE_NAMES[expected]}, got {_TYPE_NAMES[given.type_]} "
            f"({shown}){hint}")


def _descriptor(spec: ParamSpec, kind: str, read_only: bool) -> ParameterDescriptor:
    descriptor = ParameterDescriptor(
        type=getattr(ParameterType, f"PARAMETER_{kind.upper()}"),
        description=spec.description, read_only=read_only)
    if spec.choices:
        descriptor.additional_constraints = f"one of: {', '.join(map(str, spec.choices))}"
    if spec.low is None and spec.high is None:
        return descriptor
    if kind == "double":
        # ROS ranges are closed on both ends; an open end is the largest finite double,
        # which also keeps inf out, as the dataclass does.
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(spec.low) if spec.low is not None else -sys.float_info.max,
            to_value=float(spec.high) if spec.high is not None else sys.float_info.max)]
    elif kind == "integer":
        descriptor.integer_range = [IntegerRange(
            from_value=math.ceil(spec.low) if spec.low is not None else _INT64_MIN,
            to_value=math.floor(spec.high) if spec.high is not None else _INT64_MAX)]
    return descriptor


def _typed(default, kind: str):
    """A list default with its elements as the kind's type ([-10, 1.5] -> floats)."""
    if isinstance(default, list):
        return [_ELEMENT_TYPES[kind.removesuffix("_array")](item) for item in default]
    return default


def _python_value(value):
    """Array parameters arrive as ``array.array``; the dataclasses hold lists."""
    return value if isinstance(value, (bool, int, float, str)) else list(value)
