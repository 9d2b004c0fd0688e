"""The ROS type each configuration field is declared with."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from poam_ros.params import ConfigError, Params, param
from poam_ros.params.kinds import check_value_kind, parameter_kind, value_kind


@dataclass
class Kinds(Params):
    flag: bool = param(True, "a flag")
    count: int = param(3, "a count")
    scale: float = param(0.5, "a scale")
    name: str = param("a", "a name")
    vertices: list = param([-10, 10.5], "ints and floats: doubles")
    empty: list = param([], "no annotation, no elements: doubles")
    counts: list[int] = param([], "annotated")
    labels: list = param(["a", "b"], "strings")
    switches: list = param([True, False], "booleans")


@pytest.mark.parametrize("field, kind", [
    ("flag", "bool"), ("count", "integer"), ("scale", "double"), ("name", "string"),
    ("vertices", "double_array"), ("empty", "double_array"), ("counts", "integer_array"),
    ("labels", "string_array"), ("switches", "bool_array"),
])
def test_parameter_kind(field, kind):
    [spec] = [spec for spec in Kinds.specs() if spec.name == field]
    assert parameter_kind(Kinds, spec) == kind


def test_defaults_without_a_ros_type_are_refused():
    @dataclass
    class Optional(Params):
        seed: int = param(None, "no default")

    with pytest.raises(ConfigError, match="Optional.seed: a default of type NoneType"):
        parameter_kind(Optional, Optional.specs()[0])


@pytest.mark.parametrize("value, kind", [
    (True, "bool"), (1, "integer"), (1.0, "double"), ("x", "string"), ([], "array"),
    ([1, 2], "integer_array"), ([1.0], "double_array"), ([1, 2.0], None), ([[1.0]], None),
    (None, None),
])
def test_value_kind_is_what_ros_would_read(value, kind):
    assert value_kind(value) == kind


def test_check_value_kind():
    check_value_kind("x", "double_array", [])
    with pytest.raises(ConfigError, match="write 1.0"):
        check_value_kind("x", "double_array", [1, 2])
