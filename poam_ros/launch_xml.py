"""The nodes a ROS 2 launch XML file starts, read without ROS: what ``poam-ros sim`` runs.

``ros2 launch`` (launch_ros) is not needed to run the package, so :func:`expand` reads the
subset of the launch XML format that ``launch/*.launch.xml`` use and turns a file and its
arguments into the list of :class:`LaunchNode` that ``ros2 launch`` would start, each with
the command line launch_ros gives it. Anything outside the subset (an element, an attribute,
a substitution) is refused with a :class:`LaunchError` naming it, never skipped, so a launch
file cannot start a graph here that differs from the one ``ros2 launch`` starts.

The subset, with launch_ros's meaning:

- ``<launch>``; ``<arg name default description>`` (an argument without a default must be
  given; an argument not declared is refused); ``<let name value>``;
- ``<group>`` (its ``<let>`` and pushed namespace stay inside it) and
  ``<push-ros-namespace namespace>``;
- ``<include file if unless>`` with ``<arg name value>``: the file's nodes with those
  arguments, under the namespace pushed where it stands (launch_ros also lets the included
  file see the includer's arguments of the same name: an include that passes every argument
  the two files share, as fleet.launch.xml's do, means the same to both);
- ``<node pkg exec name namespace output args>``, with ``<param from>`` (a parameter file),
  ``<param name value>`` and ``<remap from to>``;
- ``if`` and ``unless`` on ``<node>``, ``<group>`` and ``<include>``
  (``true``/``false``/``1``/``0``, any case);
- substitutions ``$(var name)``, ``$(find-pkg-share poam_ros)`` (the installed share
  directory, or the source tree), ``$(env NAME [default])``, ``$(equals A B)`` (``true``
  or ``false``) and ``$(eval 'EXPRESSION')`` for the arithmetic, comparisons and ``and``,
  ``or``, ``not`` of number, string and truth literals (launch's Python expression, its
  result as ``str`` gives it: ``True``), the inner ones of nested substitutions first
  (``$(equals $(var vehicle) mavlink)``, ``$(eval '$(var robots) >= 2')``).

A ``<param name value>`` reaches the node as launch_ros passes it: under the key ``/**`` when
the node's namespace is unspecified (the same as ``-p name:=value``), else under the node's
fully qualified name, after the parameter files before it; its value is read as YAML.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping

from poam_ros.params.files import (
    PARAMETERS_KEY,
    dump_parameters,
    load_parameter_tree,
    parameter_table,
    parameters_for,
    read_yaml_value,
)

PACKAGE = "poam_ros"
#: the package's executables (``ros2 run poam_ros <exec>``) and the module each runs
EXECUTABLES = {
    "simulated_auv": "poam_ros.ros.simulated_auv_node",
    "fleet_sim": "poam_ros.ros.fleet_sim_node",
    "sensor_ingest": "poam_ros.ros.ingest_node",
    "mapper": "poam_ros.ros.mapper_node",
    "planner": "poam_ros.ros.planner_node",
    "recorder": "poam_ros.ros.recorder_node",
    "viewer": "poam_ros.ros.viewer_node",
    "vehicle_bridge": "poam_ros.ros.vehicle_bridge_node",
    "fleet_link": "poam_ros.ros.fleet_link_node",
    "fleet_channel": "poam_ros.ros.fleet_channel_node",
}
WILDCARD_KEY = "/**"  # the key of a <param name value> on a node of unspecified namespace

_ATTRIBUTES = {
    "launch": set(),
    "arg": {"name", "default", "description", "value"},
    "let": {"name", "value"},
    "group": {"if", "unless"},
    "include": {"file", "if", "unless"},
    "push-ros-namespace": {"namespace"},
    "node": {"pkg", "exec", "name", "namespace", "output", "args", "if", "unless"},
    "param": {"from", "name", "value"},
    "remap": {"from", "to"},
}
_CHILDREN = {"launch": {"arg", "let", "group", "push-ros-namespace", "node", "include"},
             "group": {"let", "group", "push-ros-namespace", "node", "include"},
             "node": {"param", "remap"},
             "include": {"arg"}}
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
_SUBSTITUTIONS = {"var": (1, 1), "find-pkg-share": (1, 1), "env": (1, 2), "equals": (2, 2),
                  "eval": (1, 1)}
#: what an ``$(eval)`` expression may hold: literals and the operators on them, no names
_EXPRESSION_NODES = (ast.Expression, ast.Constant, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp,
                     ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult,
                     ast.Div, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt,
                     ast.LtE, ast.Gt, ast.GtE)
_TRUTH = {"true": True, "1": True, "false": False, "0": False}


class LaunchError(ValueError):
    """A launch file outside the subset, or arguments it does not take; says which."""


@dataclass(frozen=True)
class ParameterFile:
    """``<param from="path"/>``: ``--params-file path``."""

    path: Path


@dataclass(frozen=True)
class InlineParameter:
    """``<param name value/>``: ``name`` set to the YAML ``value`` under ``key``."""

    key: str
    name: str
    value: str

    def tree(self) -> dict[str, Any]:
        """As the parameter file launch_ros writes for it."""
        return {self.key: {PARAMETERS_KEY: {self.name: read_yaml_value(self.value)}}}


@dataclass(frozen=True)
class LaunchNode:
    """One ``<node>`` as launch_ros starts it."""

    package: str
    executable: str
    name: str
    namespace: str  # absolute; "" when unspecified (the root namespace)
    parameters: tuple[ParameterFile | InlineParameter, ...] = ()
    remaps: tuple[tuple[str, str], ...] = ()
    arguments: tuple[str, ...] = ()

    @property
    def fqn(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"

    @property
    def module(self) -> str:
        """The Python module that runs the executable (:data:`EXECUTABLES`)."""
        if self.package != PACKAGE or self.executable not in EXECUTABLES:
            raise LaunchError(f"node {self.fqn}: {self.package}/{self.executable} is not an "
                              f"executable of {PACKAGE} ({', '.join(EXECUTABLES)})")
        return EXECUTABLES[self.executable]

    def parameter_values(self) -> dict[str, Any]:
        """The node's parameters, ``{dotted name: value}``, as rcl merges its sources."""
        trees = [(source.path, load_parameter_tree(source.path))
                 if isinstance(source, ParameterFile) else ("<launch>", source.tree())
                 for source in self.parameters]
        return parameters_for(parameter_table(trees), self.fqn)

    def ros_arguments(self, inline_dir: Path) -> list[str]:
        """The arguments after ``--ros-args``: name, namespace, parameter sources in order,
        remaps. An inline parameter keyed by the node's name (its namespace given) goes
        through a file written into ``inline_dir``, as launch_ros writes one."""
        arguments = ["-r", f"__node:={self.name}"]
        if self.namespace:
            arguments += ["-r", f"__ns:={self.namespace}"]
        for index, source in enumerate(self.parameters):
            if isinstance(source, ParameterFile):
                arguments += ["--params-file", str(source.path)]
            elif source.key == WILDCARD_KEY:
                arguments += ["-p", f"{source.name}:={source.value}"]
            else:
                path = inline_dir / f"{self.fqn.strip('/').replace('/', '.')}.{index}.yaml"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(dump_parameters(source.tree()))
                arguments += ["--params-file", str(path)]
        for remap_from, remap_to in self.remaps:
            arguments += ["-r", f"{remap_from}:={remap_to}"]
        return arguments


def package_share() -> Path:
    """``$(find-pkg-share poam_ros)``: the source tree this package sits in, else the share
    directory of the prefix it is installed into."""
    here = Path(__file__).resolve().parent
    if (here.parent / "package.xml").is_file() and (here.parent / "launch").is_dir():
        return here.parent
    for ancestor in here.parents:
        if (ancestor / "share" / PACKAGE / "package.xml").is_file():
            return ancestor / "share" / PACKAGE
    raise LaunchError(f"cannot find the share directory of {PACKAGE}")


def launch_file(name: str) -> Path:
    """The package's launch file ``name`` (``sim.launch.xml``)."""
    return package_share() / "launch" / name


def expand(path: str | Path, arguments: Mapping[str, str] | None = None) -> list[LaunchNode]:
    """The nodes ``ros2 launch <path> name:=value ...`` starts, in the file's order."""
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        raise LaunchError(f"{path}: {error}") from None
    if root.tag != "launch":
        raise LaunchError(f"{path}: the root element is <{root.tag}>, not <launch>")
    return _Expansion(path, dict(arguments or {})).run(root)


def _expand_under(path: Path, arguments: dict[str, str],
                  namespace: str | None) -> list[LaunchNode]:
    """``<include>``: the nodes of ``path`` with ``arguments``, under ``namespace``."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        raise LaunchError(f"{path}: {error}") from None
    return _Expansion(path, arguments).run(root, namespace)


@dataclass
class _Scope:
    variables: dict[str, str] = field(default_factory=dict)
    namespace: str | None = None


class _Expansion:
    """One reading of a launch file: its declared arguments, the scopes of its groups."""

    def __init__(self, path: Path, given: dict[str, str]) -> None:
        self.path, self.given, self.declared = path, given, set()
        self.nodes: list[LaunchNode] = []

    def run(self, root: ET.Element, namespace: str | None = None) -> list[LaunchNode]:
        self._check(root)
        self._children(root, _Scope(namespace=namespace))
        unknown = sorted(set(self.given) - self.declared)
        if unknown:
            raise LaunchError(f"{self.path}: no launch argument {', '.join(unknown)} "
                              f"(it takes {', '.join(sorted(self.declared))})")
        return self.nodes

    def _check(self, element: ET.Element) -> None:
        """Every element, attribute and substitution in the subset, taken or not."""
        where = f"{self.path}:<{element.tag}>"
        if element.tag not in _ATTRIBUTES:
            raise LaunchError(f"{where}: element not understood")
        unknown = sorted(set(element.attrib) - _ATTRIBUTES[element.tag])
        if unknown:
            raise LaunchError(f"{where}: attribute {', '.join(unknown)} not understood")
        if element.text and element.text.strip():
            raise LaunchError(f"{where}: text not understood: {element.text.strip()!r}")
        for value in element.attrib.values():
            text = value
            while _SUBSTITUTION.search(text):  # the innermost first, each standing for a word
                for match in _SUBSTITUTION.finditer(text):
                    self._parse_substitution(match.group(1), where)
                text = _SUBSTITUTION.sub("x", text)
            if "$(" in text:
                raise LaunchError(f"{where}: substitution not understood in {value!r}")
        for child in element:
            if child.tag not in _CHILDREN.get(element.tag, set()):
                raise LaunchError(f"{self.path}:<{child.tag}> in <{element.tag}>: "
                                  f"element not understood there")
            self._check(child)

    def _parse_substitution(self, text: str, where: str) -> list[str]:
        words = shlex.split(text)
        if not words or words[0] not in _SUBSTITUTIONS:
            raise LaunchError(f"{where}: substitution $({text}) not understood")
        low, high = _SUBSTITUTIONS[words[0]]
        if not low <= len(words) - 1 <= high:
            raise LaunchError(f"{where}: $({text}): wrong number of arguments")
        return words

    def _substitute(self, value: str, scope: _Scope, where: str) -> str:
        def one(match: re.Match) -> str:
            kind, *words = self._parse_substitution(match.group(1), where)
            if kind == "var":
                if words[0] not in scope.variables:
                    raise LaunchError(f"{where}: $(var {words[0]}): no such argument")
                return scope.variables[words[0]]
            if kind == "env":
                if words[0] not in os.environ and len(words) == 1:
                    raise LaunchError(f"{where}: $(env {words[0]}): not set")
                return os.environ.get(words[0], words[-1])
            if kind == "equals":
                return "true" if words[0] == words[1] else "false"
            if kind == "eval":
                return _evaluate(words[0], where)
            if words[0] != PACKAGE:
                raise LaunchError(f"{where}: $(find-pkg-share {words[0]}): only {PACKAGE} "
                                  f"is known here")
            return str(package_share())

        for _ in range(value.count("$(")):  # the innermost first (checked: well nested)
            if not _SUBSTITUTION.search(value):
                break
            value = _SUBSTITUTION.sub(one, value)
        return value

    def _attribute(self, element: ET.Element, name: str, scope: _Scope,
                   required: bool = True) -> str | None:
        where = f"{self.path}:<{element.tag}>"
        if name not in element.attrib:
            if required:
                raise LaunchError(f"{where}: needs the attribute {name}")
            return None
        return self._substitute(element.attrib[name], scope, where)

    def _taken(self, element: ET.Element, scope: _Scope) -> bool:
        for name, wanted in (("if", True), ("unless", False)):
            value = self._attribute(element, name, scope, required=False)
            if value is None:
                continue
            if value.strip().lower() not in _TRUTH:
                raise LaunchError(f"{self.path}:<{element.tag}>: {name}={value!r} is not "
                                  f"true, false, 1 or 0")
            if _TRUTH[value.strip().lower()] != wanted:
                return False
        return True

    def _children(self, parent: ET.Element, scope: _Scope) -> None:
        for element in parent:
            if element.tag == "arg":
                self._argument(element, scope)
            elif element.tag == "let":
                scope.variables[self._attribute(element, "name", scope)] = \
                    self._attribute(element, "value", scope)
            elif element.tag == "push-ros-namespace":
                scope.namespace = _join_namespace(
                    scope.namespace, self._attribute(element, "namespace", scope))
            elif element.tag == "group" and self._taken(element, scope):
                self._children(element, _Scope(dict(scope.variables), scope.namespace))
            elif element.tag == "node" and self._taken(element, scope):
                self.nodes.append(self._node(element, scope))
            elif element.tag == "include" and self._taken(element, scope):
                self._include(element, scope)

    def _include(self, element: ET.Element, scope: _Scope) -> None:
        arguments = {}
        for child in element:
            if set(child.attrib) != {"name", "value"}:
                raise LaunchError(f"{self.path}:<include>: each <arg> takes name and value")
            arguments[self._attribute(child, "name", scope)] = \
                self._attribute(child, "value", scope)
        self.nodes.extend(_expand_under(Path(self._attribute(element, "file", scope)),
                                        arguments, scope.namespace))

    def _argument(self, element: ET.Element, scope: _Scope) -> None:
        name = self._attribute(element, "name", scope)
        if "value" in element.attrib:
            raise LaunchError(f"{self.path}:<arg {name}>: value belongs to an <include>'s "
                              f"<arg>; a declaration takes default")
        self.declared.add(name)
        if name in self.given:
            scope.variables[name] = self.given[name]
        elif "default" in element.attrib:
            scope.variables[name] = self._attribute(element, "default", scope)
        else:
            raise LaunchError(f"{self.path}: the launch argument {name} has no default and "
                              f"was not given")

    def _node(self, element: ET.Element, scope: _Scope) -> LaunchNode:
        attribute = partial(self._attribute, element, scope=scope)
        name = attribute("name")
        namespace = attribute("namespace", required=False)
        if namespace is not None or scope.namespace is not None:
            namespace = _join_namespace(scope.namespace, namespace)
        key = WILDCARD_KEY if namespace is None else f"{namespace.rstrip('/')}/{name}"
        parameters, remaps = [], []
        for child in element:
            get = partial(self._attribute, child, scope=scope)
            if child.tag == "remap":
                remaps.append((get("from"), get("to")))
            elif "from" in child.attrib:
                if {"name", "value"} & set(child.attrib):
                    raise LaunchError(f"{self.path}:<param>: from and name/value exclude "
                                      f"each other")
                parameters.append(ParameterFile(Path(get("from"))))
            else:
                parameters.append(InlineParameter(key, get("name"), get("value")))
        arguments = shlex.split(attribute("args", required=False) or "")
        return LaunchNode(attribute("pkg"), attribute("exec"), name, namespace or "",
                          tuple(parameters), tuple(remaps), tuple(arguments))


def _evaluate(expression: str, where: str) -> str:
    """``$(eval)``: the expression's value as ``str`` writes it, when it holds literals and
    operators only (:data:`_EXPRESSION_NODES`); anything else is refused by name."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise LaunchError(f"{where}: $(eval {expression!r}): {error.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _EXPRESSION_NODES):
            raise LaunchError(f"{where}: $(eval {expression!r}): {type(node).__name__} not "
                              f"understood (literals and operators only)")
    try:
        return str(eval(compile(tree, where, "eval"), {"__builtins__": {}}))
    except (ArithmeticError, TypeError) as error:
        raise LaunchError(f"{where}: $(eval {expression!r}): {error}") from None


def _join_namespace(base: str | None, namespace: str | None) -> str:
    """launch_ros's rule: a namespace starting with ``/`` stands alone, a relative one is
    pushed under ``base``; the result is absolute."""
    if namespace is None:
        joined = base or ""
    elif namespace.startswith("/") or not base:
        joined = namespace
    else:
        joined = f"{base.rstrip('/')}/{namespace}"
    return "/" + joined.strip("/")
