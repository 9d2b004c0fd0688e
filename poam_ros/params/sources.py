"""Where a node's parameters come from, checked at start: its parameter files and the values
a file marks as required. ROS-free; :mod:`poam_ros.ros.parameter_sources` applies it to a node.

* **A file that gives the node nothing.** rcl applies the sections of a ``--params-file``
  whose key matches the node's fully qualified name and silently skips the rest, so under
  ``-r __ns:=/auv1`` a file's plain ``mapper:`` section (the root namespace's ``/mapper``)
  is dropped without a word. :func:`file_report` says so in one line: a warning when the file
  has a section for a node of this name that does not match (its values are lost: key it
  ``/**/mapper``), information when the file has nothing for this node at all (one file
  given to every node of a launch file, as ``config/authors_robot.yaml``, is normal).
* **Required values.** A robot template cannot ship a safe default for the workspace or the
  geodetic anchor: any number there is a wrong survey somewhere. A node's section lists what
  it must set in ``required`` (a string array, :class:`RequiredValues`), and the node refuses
  to start while one of them is given by none of its sources (files, ``-p``, launch
  parameters), one line each. A list rather than sentinel values because it works for every
  parameter type in a plain ROS 2 file: ``0.0`` is a valid latitude and rcl has no "unset"
  value (``[]`` reads as no value, but only for arrays), and rclpy would refuse a NaN
  sentinel against a descriptor's range in its own words before the node could name the cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from poam_ros.params.base import ConfigError, Params, param
from poam_ros.params.files import section_keys, section_matches

ROS_ARGS, ROS_ARGS_END, PARAMS_FILE = "--ros-args", "--", "--params-file"
ALTERNATIVE = "|"  # in a required entry: "depth|altitude", one of them


def params_file_arguments(argv: Sequence[str]) -> list[str]:
    """The ``--params-file`` paths of a command line, in order, from its ``--ros-args`` blocks
    (each up to ``--`` or the end, as rcl reads them)."""
    files, inside = [], False
    tokens = iter(argv)
    for token in tokens:
        if token == ROS_ARGS:
            inside = True
        elif token == ROS_ARGS_END:
            inside = False
        elif inside and token == PARAMS_FILE:
            path = next(tokens, None)
            if path is not None:
                files.append(path)
    return files


@dataclass(frozen=True)
class FileReport:
    """What a parameter file gives a node: ``warning`` when values meant for a node of its
    name are lost, else information; ``text`` is the line to log."""

    warning: bool
    text: str


def file_report(path: str | Path, node_name: str) -> FileReport | None:
    """``None`` when a section of the file at ``path`` applies to ``node_name`` (fully
    qualified, ``/auv1/mapper``) and one named after the node, if any, is among them; else
    the line that says what is not applied."""
    keys = section_keys(path)
    matching = [key for key in keys if section_matches(key, node_name)]
    name = node_name.rstrip("/").rpartition("/")[2]
    named = [key for key in keys if key.rstrip("/").rpartition("/")[2] == name]
    listed = f"{path} has no section for {node_name} (sections: {', '.join(keys) or 'none'})"
    if named and not set(named) & set(matching):
        return FileReport(True, f"{listed}; the values of {', '.join(named)} are not "
                                f"applied: key them /**/{name}")
    if not matching:
        return FileReport(False, f"{listed}; nothing in it applies to this node")
    return None


@dataclass
class RequiredValues(Params):
    """The values a node's parameter file must set (see the module docstring)."""

    required: list[str] = param([], "parameters (dotted names) that this node's sources must "
                                    "set, 'a|b' for one of them: the node refuses to start "
                                    "while one is unset; a robot template lists the values "
                                    "that have no safe default (workspace, geodetic anchor, "
                                    "...)")

    def unset(self, given: Callable[[str], bool]) -> list[str]:
        """The entries of ``required`` that ``given`` (name -> set by a source?) denies for
        every one of their alternatives, in order."""
        return [entry for entry in self.required
                if not any(given(name) for name in entry.split(ALTERNATIVE))]


def unset_line(entry: str) -> str:
    """The line a node logs for each unset entry of ``required``."""
    names = " or ".join(entry.split(ALTERNATIVE))
    return f"{names} must be set for a robot (listed in this node's required)"


def unset_error(entries: Sequence[str]) -> ConfigError:
    """The start's refusal, after :func:`unset_line` for each of ``entries``."""
    return ConfigError(f"required value(s) unset: {', '.join(entries)}")
