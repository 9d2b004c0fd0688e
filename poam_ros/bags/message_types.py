"""Message type names, definitions and hashes for bags, without ROS.

A rosbag2 bag stores, per topic, the type name (``sensor_msgs/msg/Range``), its definition
in the ``ros2msg`` format (the type's ``.msg`` text followed by each nested type's, each
after a line of 80 ``=`` and ``MSG: pkg/Name``: what ``ros2 bag``, Foxglove and the ``mcap``
decoders read) and its type description hash (``RIHS01_…``). :class:`MessageTypes` gives
them from the ``rosbags`` type store of ROS 2 Kilted, which holds every standard type the
stack uses, and learns other types from installed ``.msg`` files (``share/<pkg>/msg/`` of
the ROS installation), so that a robot's own message packages are recorded with their
definitions too.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

log = logging.getLogger(__name__)

#: The topics ``poam-ros record`` and the recorder node take by default: every input and
#: output of the stack (relative names resolve in the recorder's namespace, as the nodes'
#: own do): the simulator's ``temperature`` and ``seabed_class`` and the ingest's default
#: ``imu`` and ``depth`` included; a channel on another topic (``channel_topics``) is added to
#: ``topics``.
STACK_TOPICS = ("odom", "sonar/range", "sonar/swath", "fix", "temperature", "seabed_class",
                "imu", "depth", "plan", "goal", "samples", "map", "map/std", "map/inducing",
                "uncertainty/query", "uncertainty/response", "/clock", "/diagnostics")


class UnknownMessageType(LookupError):
    """A message type neither the type store nor any installed ``.msg`` file defines."""


class MessageTypes:
    """Definitions and hashes of message types, from the Kilted store and installed files.

    Args:
        search_paths: install prefixes whose ``share/<pkg>/msg/<Name>.msg`` define types
            beyond the store; default: ``AMENT_PREFIX_PATH`` and this Python's prefix.
    """

    def __init__(self, search_paths=None) -> None:
        self.store: Typestore = get_typestore(Stores.ROS2_KILTED)
        if search_paths is None:
            search_paths = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
                            if p] + [sys.prefix]
        self.search_paths = [Path(p) for p in search_paths]

    def definition(self, msgtype: str) -> tuple[str, str]:
        """(ros2msg definition text, RIHS01 hash) of ``msgtype`` (``pkg/msg/Name``).

        Raises:
            UnknownMessageType: no definition of the type (or of a type it nests) is found.
        """
        self._ensure(msgtype)
        text, _ = self.store.generate_msgdef(msgtype, ros_version=2)
        return text, self.store.hash_rihs01(msgtype)

    def deserialize(self, data: bytes, msgtype: str):
        """A CDR message as the store's dataclass (fields as in ROS, arrays as numpy)."""
        return self.store.deserialize_cdr(data, msgtype)

    def _ensure(self, msgtype: str, seen: frozenset = frozenset()) -> None:
        if msgtype in self.store.fielddefs:
            return
        path = self._msg_file(msgtype)
        if path is None:
            raise UnknownMessageType(f"no definition of {msgtype}: not a standard type and "
                                     f"no installed share/.../{msgtype}.msg")
        types = get_types_from_msg(path.read_text(), msgtype)
        # Nested types the store lacks come from their own files first.
        for _, fields in types.values():
            for _, (kind, detail) in fields:
                nested = _nested_type(kind, detail)
                if nested and nested not in types and nested not in seen | {msgtype}:
                    self._ensure(nested, seen | {msgtype})
        self.store.register(types)
        log.debug("learnt %s from %s", msgtype, path)

    def _msg_file(self, msgtype: str) -> Path | None:
        package, _, name = msgtype.partition("/msg/")
        if not name:
            return None
        for prefix in self.search_paths:
            candidate = prefix / "share" / package / "msg" / f"{name}.msg"
            if candidate.is_file():
                return candidate
        return None


def _nested_type(kind, detail) -> str | None:
    """The type name a rosbags field description refers to, if it is a message."""
    from rosbags.typesys.base import Nodetype

    if kind == Nodetype.NAME:
        return detail
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        inner_kind, inner_detail = detail[0]
        return inner_detail if inner_kind == Nodetype.NAME else None
    return None
