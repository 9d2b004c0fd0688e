"""Write rosbag2 bags (MCAP or sqlite3 storage) from serialized messages, without ROS.

A bag is a directory ``NAME/`` holding ``metadata.yaml`` and one storage file per split,
``NAME_0.mcap``, ``NAME_1.mcap``, … (``.db3`` for sqlite3), as ``ros2 bag record`` lays it
out, so that ``ros2 bag info``/``play`` and Foxglove open it as is. Messages go in as the
CDR bytes a publisher sent, with the time they were received, and are never re-encoded.

Storage:

* **MCAP** through :mod:`poam_ros.bags.mcap_file` (the ``mcap`` library's records, messages
  packed a batch at a time): ``ros2`` profile, ``ros2msg`` schemas, ``cdr`` channels
  carrying ``offered_qos_profiles``, chunks of 1 MiB compressed with zstd (or not) and with
  CRCs, so that a reader can tell a damaged chunk from a good one, message indexes, and
  the ``rosbag2`` metadata record.
* **sqlite3** through ``rosbags``' storage writer (schema version 4, message definitions
  table), the file renamed to its split name when it is closed.

``metadata.yaml`` (version 9) is rewritten, atomically, whenever a split file is closed
and at :meth:`BagWriter.close`; a recording that is killed outright (SIGKILL, power loss)
leaves the previous splits described and the open file readable up to its last complete
chunk (see :mod:`poam_ros.bags.bag_reader`).
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from poam_ros import __version__
from poam_ros.bags.mcap_file import McapFile

log = logging.getLogger(__name__)

STORAGES = ("mcap", "sqlite3")
EXTENSIONS = {"mcap": ".mcap", "sqlite3": ".db3"}
METADATA_VERSION = 9
CHUNK_SIZE = 1 << 20  # bytes of an MCAP chunk before compression
SQLITE_COMMIT_PERIOD = 1.0  # s, wall


class BagWriteError(OSError):
    """The bag cannot be created or written; the message names the path."""


@dataclass
class TopicRecord:
    """A topic of the bag: name, type, ros2msg definition, hash and offered QoS profiles
    (rosbag2's version-9 dictionaries: history, depth, reliability, durability, ...)."""

    name: str
    msgtype: str
    definition: str
    type_hash: str
    offered_qos: list[dict] = field(default_factory=list)
    count: int = 0


@dataclass
class _FileStats:
    path: str
    start: int = 2**63 - 1  # ns
    end: int = 0
    count: int = 0

    def entry(self) -> dict:
        start = self.start if self.count else 0
        return {"path": self.path, "starting_time": {"nanoseconds_since_epoch": start},
                "duration": {"nanoseconds": max(0, self.end - start) if self.count else 0},
                "message_count": self.count}


def check_new_bag(path) -> Path:
    """``path`` as a Path, if no file or folder is there yet: a bag is never overwritten.

    Raises:
        BagWriteError: something exists at ``path``.
    """
    path = Path(path)
    if path.exists():
        raise BagWriteError(f"{path} exists already; a bag is never overwritten")
    return path


class BagWriter:
    """Writes one rosbag2 bag; see the module docstring.

    Args:
        path: the bag directory to create; it must not exist.
        storage: ``mcap`` (default) or ``sqlite3``.
        max_bytes: start a new split file once the current one holds this many bytes of
            messages (0: no size splitting).
        max_duration: start a new split file once the current one spans this many seconds
            of receive time (0: no duration splitting).
        compression: ``zstd`` or ``none``: MCAP chunk compression (sqlite3: ``none`` only).
        custom_data: string pairs for metadata.yaml's ``custom_data``.
        chunk_size: bytes of messages per MCAP chunk (before compression); a damaged
            chunk loses its messages only.
    """

    def __init__(self, path, storage: str = "mcap", max_bytes: int = 0,
                 max_duration: float = 0.0, compression: str = "zstd",
                 custom_data: dict[str, str] | None = None,
                 chunk_size: int = CHUNK_SIZE) -> None:
        if storage not in STORAGES:
            raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
        if compression not in ("zstd", "none"):
            raise ValueError(f"compression must be zstd or none, got {compression!r}")
        if storage == "sqlite3" and compression != "none":
            compression = "none"  # rosbag2's sqlite3 storage compresses whole files only
        if max_bytes < 0 or max_duration < 0:
            raise ValueError("max_bytes and max_duration must be >= 0")
        self.path = check_new_bag(path)
        try:
            self.path.mkdir(parents=True)
        except OSError as error:
            raise BagWriteError(f"cannot create the bag directory {self.path}: {error}") \
                from error
        self.storage = storage
        self.compression = compression
        self.max_bytes = int(max_bytes)
        self.max_duration_ns = int(max_duration * 1e9)
        self.custom_data = dict(custom_data or {})
        self.chunk_size = int(chunk_size)
        self.topics: list[TopicRecord] = []
        self.files: list[_FileStats] = []
        self._file = None
        self._file_bytes = 0
        self._closed = False
        self._open_split()

    # ------------------------------------------------------------------ public API

    @property
    def message_count(self) -> int:
        return sum(topic.count for topic in self.topics)

    def add_topic(self, name: str, msgtype: str, definition: str, type_hash: str,
                  offered_qos=()) -> int:
        """Register a topic; returns its id for :meth:`write`. A name already added with
        the same type returns the existing id."""
        for index, topic in enumerate(self.topics):
            if topic.name == name:
                if topic.msgtype != msgtype:
                    raise ValueError(f"topic {name} is in the bag as {topic.msgtype}, not "
                                     f"{msgtype}")
                return index
        topic = TopicRecord(name, msgtype, definition, type_hash, list(offered_qos))
        self.topics.append(topic)
        self._file.add_topic(len(self.topics) - 1, topic, qos_yaml(topic.offered_qos))
        return len(self.topics) - 1

    def write(self, topic_id: int, log_time: int, data: bytes,
              publish_time: int = 0) -> None:
        """Append a serialized message of topic ``topic_id`` received at ``log_time`` ns and
        sent at ``publish_time`` ns (the publisher's source time; 0: the receive time.
        MCAP stores it, sqlite3 does not)."""
        self.write_many([(topic_id, log_time, data, publish_time)])

    def write_many(self, items) -> None:
        """Append ``(topic_id, log_time, data, publish_time)`` items, in order: :meth:`write`
        with the bookkeeping done once per batch and split rather than per message (the
        recorder's hot path)."""
        items = list(items)
        while items:
            stats = self.files[-1]
            cut = len(items)
            if self.max_bytes or self.max_duration_ns:
                # Stop at the first message that makes a split due; it starts the next file.
                size, start = self._file_bytes, stats.start if stats.count else None
                for k, (_, log_time, data, _) in enumerate(items):
                    if (stats.count or k) and (
                            (self.max_bytes and size >= self.max_bytes) or
                            (self.max_duration_ns and start is not None
                             and log_time - start >= self.max_duration_ns)):
                        cut = k
                        break
                    size += len(data)
                    start = log_time if start is None else min(start, log_time)
            if cut == 0:
                self._close_split()
                self._open_split()
                continue
            head, items = items[:cut], items[cut:]
            self._file.write_many(head)
            for topic_id, count in Counter(item[0] for item in head).items():
                self.topics[topic_id].count += count
            times = [item[1] for item in head]
            stats.count += len(head)
            stats.start, stats.end = min(stats.start, *times), max(stats.end, *times)
            self._file_bytes += sum(len(item[2]) for item in head)

    def close(self) -> None:
        """Finish the storage file and write metadata.yaml; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close_split()

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def metadata(self) -> dict:
        """metadata.yaml's content as it stands (version 9)."""
        files = [stats for stats in self.files if stats.count or len(self.files) == 1]
        counted = [stats for stats in files if stats.count]
        start = min((s.start for s in counted), default=0)
        end = max((s.end for s in counted), default=0)
        info = {
            "version": METADATA_VERSION,
            "storage_identifier": self.storage,
            "duration": {"nanoseconds": end - start},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": self.message_count,
            "topics_with_message_count": [
                {"topic_metadata": {"name": topic.name, "type": topic.msgtype,
                                    "serialization_format": "cdr",
                                    "offered_qos_profiles": topic.offered_qos,
                                    "type_description_hash": topic.type_hash},
                 "message_count": topic.count}
                for topic in self.topics],
            "compression_format": "",
            "compression_mode": "",
            "relative_file_paths": [stats.path for stats in files],
            "files": [stats.entry() for stats in files],
            "custom_data": self.custom_data or None,
            "ros_distro": os.environ.get("ROS_DISTRO") or "kilted",
        }
        return {"rosbag2_bagfile_information": info}

    # ------------------------------------------------------------------ internals

    def _open_split(self) -> None:
        name = f"{self.path.name}_{len(self.files)}{EXTENSIONS[self.storage]}"
        self.files.append(_FileStats(name))
        try:
            self._file = McapFile(self.path, name, self.compression, self.chunk_size,
                                  library=f"poam_ros {__version__}") \
                if self.storage == "mcap" else _Sqlite3File(self.path, name)
        except OSError as error:
            raise BagWriteError(f"cannot create {self.path / name}: {error}") from error
        self._file_bytes = 0
        for index, topic in enumerate(self.topics):
            self._file.add_topic(index, topic, qos_yaml(topic.offered_qos))

    def _close_split(self) -> None:
        metadata = self.metadata()
        self._file.close(_dump(metadata["rosbag2_bagfile_information"]))
        self._file = None
        tmp = self.path / "metadata.yaml.tmp"
        tmp.write_text(_dump(metadata))
        tmp.replace(self.path / "metadata.yaml")


def _dump(metadata: dict) -> str:
    return yaml.safe_dump(metadata, sort_keys=False, default_flow_style=False)


def qos_yaml(profiles: list[dict]) -> str:
    """Offered QoS profiles as the YAML string MCAP channels and sqlite3 topics carry."""
    return yaml.safe_dump(profiles, sort_keys=False).strip() if profiles else ""


class _Sqlite3File:
    """One sqlite3 storage file, written by rosbags' Sqlite3Writer.

    That writer names its file after the directory it is given (``DIR/DIR.db3``); the file
    is renamed to the split's name when it is closed. It commits only when closed; here a
    commit every :data:`SQLITE_COMMIT_PERIOD` seconds keeps a killed recording readable."""

    def __init__(self, directory: Path, name: str) -> None:
        from rosbags.rosbag2 import CompressionMode
        from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer

        self.final = directory / name
        self.writer = Sqlite3Writer(directory, CompressionMode.NONE)
        self.connections: dict[int, object] = {}
        self.types: set[str] = set()
        self.committed = time.monotonic()

    def add_topic(self, index: int, topic: TopicRecord, offered_qos: str) -> None:
        from rosbags.interfaces import (
            Connection,
            ConnectionExtRosbag2,
            MessageDefinition,
            MessageDefinitionFormat,
        )

        connection = Connection(
            id=index + 1, topic=topic.name, msgtype=topic.msgtype,
            msgdef=MessageDefinition(MessageDefinitionFormat.MSG, topic.definition),
            digest=topic.type_hash, msgcount=0,
            ext=ConnectionExtRosbag2(serialization_format="cdr", offered_qos_profiles=[]),
            owner=None)
        if topic.msgtype not in self.types:
            self.writer.add_msgtype(connection)
            self.types.add(topic.msgtype)
        self.writer.add_connection(connection, offered_qos)
        self.connections[index] = connection

    def write_many(self, items) -> None:
        write, connections = self.writer.write, self.connections
        for index, log_time, data, _ in items:
            write(connections[index], log_time, data)
        now = time.monotonic()
        if now - self.committed >= SQLITE_COMMIT_PERIOD:
            self.writer.conn.commit()
            self.committed = now

    def close(self, metadata: str) -> None:
        self.writer.close(METADATA_VERSION, metadata.strip())
        Path(self.writer.path).replace(self.final)


def default_bag_path(folder="bags", prefix: str = "poam") -> Path:
    """``folder/prefix_YYYYmmdd-HHMMSS`` (local time), as ``ros2 bag record`` names bags."""
    return Path(folder) / time.strftime(f"{prefix}_%Y%m%d-%H%M%S")


__all__ = ["BagWriter", "BagWriteError", "TopicRecord", "STORAGES", "default_bag_path",
           "qos_yaml"]
