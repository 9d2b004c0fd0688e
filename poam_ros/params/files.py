"""Load ROS 2 parameter YAML files into plain dicts and configuration dataclasses.

One loader for every reader of our parameter files: the launch files, ``poam-ros`` and the
benchmark. The format is the one ``--ros-args --params-file`` takes::

    /**:                      # every node
      ros__parameters:
        use_sim_time: true
    /**/mapper:               # a node named mapper in any namespace
      ros__parameters:
        world_frame: map
        model:                # nested keys are dotted names: model.num_inducing
          num_inducing: 500
    planner:                  # the node /planner only; "ns: {planner: ...}" is /ns/planner
      ros__parameters:
        world_frame: odom

Sections apply to a node as rcl applies them (:func:`section_matches`,
:func:`parameter_table`): a key's tokens are names, ``*`` (one name) or ``**`` (any number of
names), a key without a leading ``/`` is absolute; the sections of every file a node is given
form one table in the order their keys first appear, a key seen again (in the same or a later
file, or ``/**`` for a ``-p name:=value``) updating its first entry in place, and every entry
matching the node applies in table order, a later over an earlier. So a later file's ``/**``
does not override an earlier file's ``/**/mapper``. Values are held to the types the nodes
declare (:mod:`poam_ros.params.kinds`), so ``lengthscale: 1`` is refused here as it would be by
the node. This module imports no ROS.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from poam_ros.params import ConfigError, Params
from poam_ros.params.kinds import check_value_kind, parameter_kind
from poam_ros.params.node_settings import LifecycleSettings

PARAMETERS_KEY = "ros__parameters"

# Parameters every node declares beside its configs' fields: rclpy's own, the list of values
# its file must set (poam_ros.params.sources.RequiredValues), and those a managed node
# declares (LifecycleSettings).
ROS_NODE_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service", "required",
                                 *(spec.name for spec in LifecycleSettings.specs())})
# Publisher/subscription QoS overrides (QoSOverridingOptions) are declared per topic.
QOS_OVERRIDES_PREFIX = "qos_overrides."


class _RosYamlLoader(yaml.SafeLoader):
    """Safe YAML that, like rcl's parser, reads ``1e-3`` as a float (YAML 1.1 wants ``1.0e-3``).

    The resolver table is copied, not shared, so the stock SafeLoader stays untouched.
    """

    yaml_implicit_resolvers = {first: list(resolvers) for first, resolvers
                               in yaml.SafeLoader.yaml_implicit_resolvers.items()}


_RosYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


class _PlainDumper(yaml.SafeDumper):
    """Writes a value shared by two nodes twice: rcl's parser refuses YAML aliases."""

    def ignore_aliases(self, data) -> bool:
        return True


def dump_parameters(tree: Mapping[str, Any]) -> str:
    """``tree`` (node -> {ros__parameters: {...}}) as a parameter file's YAML, without
    aliases, keys in the given order."""
    return yaml.dump(tree, Dumper=_PlainDumper, sort_keys=False)


def nest_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``{dotted name: value}`` as the nested mapping a ``ros__parameters`` section holds."""
    nested: dict[str, Any] = {}
    for name, value in parameters.items():
        *parents, leaf = name.split(".")
        level = nested
        for parent in parents:
            level = level.setdefault(parent, {})
        level[leaf] = value
    return nested


def read_yaml_value(text: str) -> Any:
    """A value written as rcl reads ``-p name:=value``: YAML, ``1e-3`` a float."""
    return yaml.load(text, Loader=_RosYamlLoader)


def load_parameter_tree(path: str | Path) -> dict[str, Any]:
    """The parameter file at ``path`` as nested dicts, read as rcl reads it ({} if empty)."""
    path = Path(path)
    with path.open() as stream:
        tree = yaml.load(stream, Loader=_RosYamlLoader)
    if tree is None:
        return {}
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: expected a mapping of node names, got {type(tree).__name__}")
    return tree


def load_node_parameters(paths: str | Path | Iterable[str | Path],
                         node_name: str) -> dict[str, Any]:
    """Parameters the file (or the files, in command-line order) give the node ``node_name``
    (``mapper`` or ``/ns/mapper``), as ``{dotted name: value}``, merged as rcl merges them.
    A node no section matches gets ``{}``."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    table = parameter_table((path, load_parameter_tree(path)) for path in paths)
    return parameters_for(table, node_name)


def section_matches(key: str, node_name: str) -> bool:
    """Whether the section ``key`` (``/**``, ``/**/mapper``, ``/auv1/mapper``, ``mapper``)
    applies to the node ``node_name`` (fully qualified; a name without ``/`` is in the root
    namespace), by rcl's rule: ``/*`` stands for one name, ``/**`` for any number of them,
    and a key is absolute with or without its leading ``/``."""
    return _node_pattern(key).fullmatch(_absolute(node_name)) is not None


def sections_for(tree: Mapping[str, Any], node_name: str, source: str | Path = "<tree>"
                 ) -> list[tuple[str, dict[str, Any]]]:
    """The sections of one parameter file's ``tree`` that apply to ``node_name``, as
    ``(key, {dotted name: value})`` in the order rcl applies them (a later one overrides an
    earlier one); ``[]``: the file gives the node nothing. ``source`` names the tree in
    errors."""
    return [(key, parameters) for key, parameters in parameter_table([(source, tree)]).items()
            if section_matches(key, node_name)]


def parameter_table(trees: Iterable[tuple[str | Path, Mapping[str, Any]]]
                    ) -> dict[str, dict[str, Any]]:
    """The sections of several parameter trees ``(source, tree)``, in command-line order, as
    rcl holds them: ``{key: {dotted name: value}}`` in the order each key first appears, a
    key seen again updating its first entry."""
    table: dict[str, dict[str, Any]] = {}
    for source, tree in trees:
        for key, section in _sections(tree, Path(source)):
            table.setdefault(key, {}).update(_flatten(section))
    return table


def parameters_for(table: Mapping[str, Mapping[str, Any]], node_name: str) -> dict[str, Any]:
    """What a :func:`parameter_table` gives ``node_name``: its matching entries merged in
    table order."""
    parameters: dict[str, Any] = {}
    for key, section in table.items():
        if section_matches(key, node_name):
            parameters.update(section)
    return parameters


def section_keys(path: str | Path) -> list[str]:
    """The node keys of the parameter file at ``path``, in file order (``auv1: {mapper:
    ...}`` is ``/auv1/mapper``)."""
    path = Path(path)
    return [key for key, _ in _sections(load_parameter_tree(path), path)]


def config_from_parameters(parameters: Mapping[str, Any], config_cls: type[Params],
                           prefix: str = "") -> Params:
    """Build ``config_cls`` from the parameters directly under ``prefix`` and under its groups
    (``model`` takes ``model.x`` and, if ``vips`` is a group of its, ``model.vips.x``, but
    leaves ``model.sub.x`` to a ``model.sub`` config); with no prefix, from the undotted names
    except :data:`ROS_NODE_PARAMETERS`.

    Unknown names (a renamed one with its new name), values of another ROS type and invalid
    values raise :class:`ConfigError`.
    """
    lead = f"{prefix}." if prefix else ""
    groups = config_cls.groups()
    values = {}
    for name, value in parameters.items():
        head, dot, _ = name[len(lead):].partition(".")
        if (name.startswith(lead) and (prefix or name not in ROS_NODE_PARAMETERS)
                and (not dot or head in groups)):
            values[name[len(lead):]] = value
    renamed = sorted(set(values) & set(config_cls.RENAMED))
    if renamed:
        raise ConfigError(f"{config_cls.__name__}: renamed parameter(s) "
                          f"{', '.join(config_cls.new_names(renamed, prefix))}")
    kinds = {spec.name: parameter_kind(config_cls, spec) for spec in config_cls.specs()}
    for name, value in values.items():
        if name in kinds:
            check_value_kind(f"{config_cls.__name__}.{name}", kinds[name], value)
    return config_cls.from_dict(values)


def load_config(path: str | Path, node_name: str, config_cls: type[Params],
                prefix: str = "") -> Params:
    """``config_cls`` as the file configures it for ``node_name``; errors name the file."""
    return _config_from_file(load_node_parameters(path, node_name), path, node_name,
                             config_cls, prefix)


def load_configs(path: str | Path, node_name: str,
                 configs: Mapping[str, type[Params]]) -> dict[str, Params]:
    """Every config of a node, ``{prefix: config_cls}`` -> ``{prefix: config}``, refusing
    any parameter in the file that none of them (nor rclpy, nor a QoS override) declares,
    so a misspelt section name is an error too."""
    parameters = load_node_parameters(path, node_name)
    declared = {f"{prefix}.{spec.name}" if prefix else spec.name
                for prefix, config_cls in configs.items() for spec in config_cls.specs()}
    unclaimed = sorted(name for name in parameters
                       if name not in declared and name not in ROS_NODE_PARAMETERS
                       and not name.startswith(QOS_OVERRIDES_PREFIX))
    if unclaimed:
        raise ConfigError(f"{path}: node {_absolute(node_name)}: unknown parameter(s) "
                          f"{', '.join(_new_names(unclaimed, configs))}")
    return {prefix: _config_from_file(parameters, path, node_name, config_cls, prefix)
            for prefix, config_cls in configs.items()}


def _config_from_file(parameters: Mapping[str, Any], path: str | Path, node_name: str,
                      config_cls: type[Params], prefix: str) -> Params:
    try:
        return config_from_parameters(parameters, config_cls, prefix)
    except ConfigError as error:
        section = f" under '{prefix}'" if prefix else ""
        raise ConfigError(f"{path}: node {_absolute(node_name)}{section}: {error}") from error


def _new_names(names: list[str], configs: Mapping[str, type[Params]]) -> list[str]:
    """``names``, each renamed field of a config with its new name (:meth:`Params.new_names`)."""
    named = []
    for name in names:
        prefix, _, field = name.rpartition(".")
        config_cls = configs.get(prefix)
        named += config_cls.new_names([field], prefix) if config_cls else [name]
    return named


def _sections(tree: Mapping[str, Any], path: Path, namespace: str = ""
              ) -> Iterator[tuple[str, dict]]:
    """``(key, ros__parameters mapping)`` in file order; a key nested under others is joined
    to them with ``/`` (``auv1: {mapper: ...}`` is ``auv1/mapper``), as rcl's parser does."""
    for key, value in tree.items():
        if key == PARAMETERS_KEY:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: {PARAMETERS_KEY} of {_absolute(namespace)} "
                                  f"must be a mapping")
            _check_key(namespace, path)
            yield namespace, value
        elif isinstance(value, dict):
            yield from _sections(value, path, f"{namespace}/{key}" if namespace else str(key))
        else:
            raise ConfigError(f"{path}: {key!r} under {_absolute(namespace)} is neither a "
                              f"node nor {PARAMETERS_KEY}")


def _check_key(key: str, path: Path) -> None:
    """rcl refuses a file whose node key has an empty token or one that is neither a name
    nor a wildcard (``auv*`` is not one)."""
    tokens = key.removeprefix("/").split("/")
    bad = [token for token in tokens if not _KEY_TOKEN.fullmatch(token)]
    if bad:
        raise ConfigError(f"{path}: node key {key!r}: {bad[0]!r} is neither a name "
                          f"(letters, digits, _) nor * or **")


def _flatten(section: dict, lead: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in section.items():
        name = f"{lead}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


_KEY_TOKEN = re.compile(r"\*\*?|[A-Za-z0-9_]+")


def _node_pattern(key: str) -> re.Pattern:
    """rcl's regular expression of a section key: ``/*`` is ``(/\\w+)``, so ``/**`` is
    ``(/\\w+)*``."""
    regex = ""
    for token in key.removeprefix("/").split("/"):
        regex += {"*": "/[A-Za-z0-9_]+", "**": "(?:/[A-Za-z0-9_]+)*"}.get(
            token, "/" + re.escape(token))
    return re.compile(regex)


def _absolute(node_name: str) -> str:
    return "/" + node_name.strip("/")
