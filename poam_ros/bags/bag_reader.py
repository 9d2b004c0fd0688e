"""Read rosbag2 bags (MCAP or sqlite3), damaged ones included, without ROS.

:class:`BagReader` opens a bag directory (or one ``.mcap``/``.db3`` file) and yields its
messages as :class:`BagMessage` (topic, type, receive time, CDR bytes), file by file; an
intact MCAP file's messages in receive-time order (merged across its chunks, as ``ros2
bag play`` reads), a truncated one's in the order they were written.

Damage is read around, never raised mid-way:

* **no metadata.yaml** (a recording killed before it could write one): topics and types
  come from the storage files themselves;
* **a truncated MCAP file** (killed mid-write: no summary, no footer): records are read in
  order up to the first incomplete one; what followed is lost and said so;
* **a corrupt MCAP chunk** (bad CRC, bad compression or framing): the chunk is skipped and
  its messages counted as lost from the message indexes that follow it, where those are
  intact; reading goes on with the next chunk;
* **a damaged sqlite3 file**: rows are read until sqlite refuses.

Everything lost is in :attr:`BagReader.report` (:class:`ReadReport`): one line per
problem and the number of messages lost per topic, where known. Errors that leave nothing
to read (no bag at the path, no storage file, not a bag) raise :class:`BagError` with one
clear message.
"""

from __future__ import annotations

import heapq
import logging
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

import yaml
from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.records import Channel, Chunk, Footer, MessageIndex, Schema
from mcap.records import Message as McapMessage
from mcap.stream_reader import StreamReader, breakup_chunk

from poam_ros.bags.bag_records import BagError, BagMessage, ReadReport, TopicInfo

log = logging.getLogger(__name__)

MCAP_MAGIC = b"\x89MCAP0\r\n"
SQLITE_MAGIC = b"SQLite format 3\x00"


class BagReader:
    """A rosbag2 bag to read; see the module docstring.

    Args:
        path: the bag directory, or a single ``.mcap``/``.db3`` storage file.
    """

    def __init__(self, path) -> None:
        self.path = Path(path)
        self.report = ReadReport()
        if not self.path.exists():
            raise BagError(f"no bag at {self.path}: the path does not exist")
        self.metadata: dict = {}
        if self.path.is_dir():
            self.files = self._files_of_directory()
        else:
            self.files = [self.path]
        for file in self.files:
            _storage_kind(file)  # refuse a file that is no bag before reading any
        self.topics: dict[str, TopicInfo] = {}
        self._topics_from_metadata()
        self._scan_file_headers()
        if not self.topics and not any(f.stat().st_size for f in self.files):
            raise BagError(f"{self.path}: the storage files are empty")

    # ------------------------------------------------------------------ public API

    @property
    def storage(self) -> str:
        return _storage_kind(self.files[0]) if self.files else ""

    @property
    def custom_data(self) -> dict:
        return dict(self.metadata.get("custom_data") or {})

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[BagMessage]:
        """Messages of ``topics`` (all when None): file by file, each intact MCAP file in
        receive-time order (a truncated one in stored order); losses go to :attr:`report`
        (which starts afresh at each call)."""
        wanted = None if topics is None else set(topics)
        self.report = ReadReport()
        if self._metadata_problem:
            self.report.problems.append(self._metadata_problem)
        for file in self.files:
            reader = _read_mcap if _storage_kind(file) == "mcap" else _read_sqlite
            for message in reader(file, self.report, self.topics):
                if wanted is None or message.topic in wanted:
                    yield message

    def describe(self) -> str:
        """A short listing: storage, files and topics with types and counts."""
        lines = [f"{self.path}: {self.storage}, {len(self.files)} file(s)"]
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            count = "?" if topic.count is None else topic.count
            lines.append(f"  {topic.name:<28} {topic.msgtype:<36} {count:>8}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ internals

    _metadata_problem = ""

    def _files_of_directory(self) -> list[Path]:
        meta_path = self.path / "metadata.yaml"
        listed: list[Path] = []
        if meta_path.is_file():
            try:
                tree = yaml.safe_load(meta_path.read_text()) or {}
                self.metadata = tree["rosbag2_bagfile_information"]
                listed = [self.path / p for p in self.metadata.get("relative_file_paths", [])]
            except (yaml.YAMLError, KeyError, TypeError, AttributeError) as error:
                self._metadata_problem = (f"metadata.yaml is unreadable ({error}); topics "
                                          f"taken from the storage files")
                self.metadata = {}
        else:
            self._metadata_problem = ("metadata.yaml is missing (the recording did not "
                                      "finish?); topics taken from the storage files")
        present = [p for p in self.path.iterdir()
                   if p.suffix in (".mcap", ".db3") and p.is_file()]
        missing = [p for p in listed if not p.is_file()]
        if missing:
            self.report.problems.append(
                f"storage file(s) listed in metadata.yaml are missing: "
                f"{', '.join(p.name for p in missing)}")
            self._metadata_problem = "; ".join(filter(None, [
                self._metadata_problem, self.report.problems[-1]]))
        files = [p for p in listed if p.is_file()]
        files += sorted((p for p in present if p not in files), key=_split_index)
        if not files:
            raise BagError(f"{self.path} holds no .mcap or .db3 storage file: not a "
                           f"rosbag2 bag")
        return files

    def _topics_from_metadata(self) -> None:
        for entry in self.metadata.get("topics_with_message_count", []) or []:
            try:
                meta = entry["topic_metadata"]
                qos = meta.get("offered_qos_profiles") or []
                if isinstance(qos, str):
                    qos = yaml.safe_load(qos) or []
                self.topics[meta["name"]] = TopicInfo(
                    meta["name"], meta["type"], type_hash=meta.get("type_description_hash", ""),
                    offered_qos=list(qos), count=int(entry.get("message_count", 0)))
            except (KeyError, TypeError, ValueError, yaml.YAMLError):
                continue

    def _scan_file_headers(self) -> None:
        """Definitions (and topics metadata.yaml lacks) from each file's schemas."""
        for file in self.files:
            try:
                if _storage_kind(file) == "mcap":
                    found = _mcap_topics(file)
                else:
                    found = _sqlite_topics(file)
            except (OSError, McapError, sqlite3.DatabaseError, ValueError) as error:
                log.debug("no topic list from %s: %s", file, error)
                continue
            for info in found:
                known = self.topics.get(info.name)
                if known is None:
                    self.topics[info.name] = info
                    continue
                known.definition = known.definition or info.definition
                known.type_hash = known.type_hash or info.type_hash
                known.offered_qos = known.offered_qos or info.offered_qos


def _split_index(path: Path) -> tuple:
    match = re.search(r"_(\d+)\.(mcap|db3)$", path.name)
    return (int(match.group(1)) if match else -1, path.name)


def _storage_kind(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            head = stream.read(16)
    except OSError as error:
        raise BagError(f"cannot read {path}: {error.strerror}") from error
    if head.startswith(MCAP_MAGIC):
        return "mcap"
    if head.startswith(SQLITE_MAGIC):
        return "sqlite3"
    if not head:
        return "mcap" if path.suffix == ".mcap" else "sqlite3"
    raise BagError(f"{path} is neither an MCAP nor an sqlite3 file: not a rosbag2 bag")


def _qos_list(text) -> list:
    if not text:
        return []
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    return loaded if isinstance(loaded, list) else []


# -------------------------------------------------------------------------- MCAP

def _mcap_topics(path: Path) -> list[TopicInfo]:
    """Topics of an MCAP file: from its summary, else from the records up front."""
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    with path.open("rb") as stream:
        summary = _summary(stream)
        if summary is not None:
            schemas, channels = dict(summary.schemas), dict(summary.channels)
            counts = dict(summary.statistics.channel_message_counts) if summary.statistics \
                else {}
        else:
            counts = {}
            stream.seek(0)
            try:
                for record in StreamReader(stream, emit_chunks=False).records:
                    if isinstance(record, Schema):
                        schemas[record.id] = record
                    elif isinstance(record, Channel):
                        channels[record.id] = record
                    elif isinstance(record, McapMessage):
                        break
            except Exception:  # noqa: BLE001 - a truncated file: keep what was found
                pass
    found = []
    for channel in channels.values():
        schema = schemas.get(channel.schema_id)
        found.append(TopicInfo(
            channel.topic, schema.name if schema else "",
            definition=schema.data.decode(errors="replace") if schema else "",
            offered_qos=_qos_list(channel.metadata.get("offered_qos_profiles", "")),
            count=counts.get(channel.id)))
    return found


def _summary(stream):
    """The file's summary, or None when it has none or its end is damaged."""
    try:
        return make_reader(stream).get_summary()
    except Exception:  # noqa: BLE001 - any damage at the end: read the file in order
        return None


def _read_mcap(path: Path, report: ReadReport, topics: dict) -> Iterator[BagMessage]:
    with path.open("rb") as stream:
        summary = _summary(stream)
        if summary is not None and summary.chunk_indexes:
            yield from _read_indexed(path, stream, summary, report)
        else:
            yield from _read_in_order(path, stream, report)


class _Channels:
    """Schemas and channels seen so far in one file."""

    def __init__(self, schemas=None, channels=None) -> None:
        self.schemas: dict[int, Schema] = dict(schemas or {})
        self.channels: dict[int, Channel] = dict(channels or {})

    def take(self, record) -> None:
        if isinstance(record, Schema):
            self.schemas[record.id] = record
        elif isinstance(record, Channel):
            self.channels[record.id] = record

    def topic(self, channel_id: int) -> tuple[str, str]:
        channel = self.channels.get(channel_id)
        if channel is None:
            return "", ""
        schema = self.schemas.get(channel.schema_id)
        return channel.topic, schema.name if schema else ""

    def messages(self, records) -> list[BagMessage]:
        """The chunk's messages, in receive-time order (stable)."""
        out = []
        for record in records:
            if isinstance(record, McapMessage):
                topic, msgtype = self.topic(record.channel_id)
                if topic:
                    out.append(BagMessage(topic, msgtype, record.log_time, record.data,
                                          record.publish_time or record.log_time))
            else:
                self.take(record)
        out.sort(key=lambda m: m.log_time)
        return out


def _read_indexed(path: Path, stream, summary, report: ReadReport) -> Iterator[BagMessage]:
    """An intact file end: chunks found through the chunk index, each read on its own, and
    their messages merged in receive-time order (a chunk is loaded once the merge reaches
    its first receive time, so memory holds only chunks whose times overlap)."""
    channels = _Channels(summary.schemas, summary.channels)
    indexes = sorted(summary.chunk_indexes,
                     key=lambda c: (c.message_start_time, c.chunk_start_offset))
    heap: list = []
    sequence = 0
    next_chunk = 0
    while next_chunk < len(indexes) or heap:
        while next_chunk < len(indexes) and (
                not heap or indexes[next_chunk].message_start_time <= heap[0][0]):
            for message in _load_chunk(path, stream, indexes, next_chunk, channels, report):
                heapq.heappush(heap, (message.log_time, sequence, message))
                sequence += 1
            next_chunk += 1
        if heap:
            yield heapq.heappop(heap)[2]


def _load_chunk(path: Path, stream, indexes, number: int, channels: "_Channels",
                report: ReadReport) -> list[BagMessage]:
    """The messages of chunk ``number``; a damaged chunk is counted lost (from its message
    indexes where they are intact) and gives none."""
    index = indexes[number]
    try:
        stream.seek(index.chunk_start_offset)
        record = next(StreamReader(stream, skip_magic=True, emit_chunks=True).records)
        if not isinstance(record, Chunk):
            raise McapError(f"expected a chunk, found {type(record).__name__}")
        return channels.messages(breakup_chunk(record, validate_crc=True))
    except Exception as error:  # noqa: BLE001 - any damage: count it, go on
        lost = Counter()
        for channel_id, offset in index.message_index_offsets.items():
            try:
                stream.seek(offset)
                message_index = next(StreamReader(stream, skip_magic=True).records)
                lost[channels.topic(channel_id)[0] or f"channel {channel_id}"] += \
                    len(message_index.records)
            except Exception:  # noqa: BLE001
                report.unknown_loss = True
        report.lost.update(lost)
        report.problems.append(
            f"{path.name}: chunk {number + 1} of {len(indexes)} (receive times "
            f"{index.message_start_time / 1e9:.3f}-{index.message_end_time / 1e9:.3f} s) "
            f"is corrupt ({_reason(error)}): {sum(lost.values())} message(s) skipped")
        return []


def _read_in_order(path: Path, stream, report: ReadReport) -> Iterator[BagMessage]:
    """No usable summary (a truncated file): records in order up to the first bad one."""
    channels = _Channels()
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    reader = StreamReader(stream, emit_chunks=True).records
    last_time = None
    after_bad_chunk = False
    while True:
        position = stream.tell()
        try:
            record = next(reader)
        except StopIteration:
            return
        except Exception as error:  # noqa: BLE001 - truncation or damaged framing
            report.unknown_loss = True
            after = f" after receive time {last_time / 1e9:.3f} s" if last_time else ""
            report.problems.append(
                f"{path.name} ends without its index: truncated at byte {position} of "
                f"{size} ({_reason(error)}); the rest of the recording{after} is lost "
                f"(was it killed mid-write?)")
            return
        if isinstance(record, Chunk):
            try:
                records = breakup_chunk(record, validate_crc=True)
            except Exception as error:  # noqa: BLE001
                after_bad_chunk = True
                report.problems.append(
                    f"{path.name}: the chunk at byte {position} is corrupt "
                    f"({_reason(error)}): its messages are skipped")
                continue
            after_bad_chunk = False
            messages = channels.messages(records)
            if messages:
                last_time = messages[-1].log_time
            yield from messages
        elif isinstance(record, MessageIndex):
            if after_bad_chunk:
                report.lost[channels.topic(record.channel_id)[0]
                            or f"channel {record.channel_id}"] += len(record.records)
        elif isinstance(record, McapMessage):
            for message in channels.messages([record]):
                last_time = message.log_time
                yield message
        elif isinstance(record, Footer):
            return
        else:
            channels.take(record)


def _reason(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) < 120 else text[:117] + "..."


# ------------------------------------------------------------------------ sqlite3

def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _sqlite_topics(path: Path) -> list[TopicInfo]:
    connection = _connect(path)
    try:
        definitions = {}
        try:
            for msgtype, text, digest in connection.execute(
                    "SELECT topic_type, encoded_message_definition, type_description_hash "
                    "FROM message_definitions"):
                definitions[msgtype] = (text, digest)
        except sqlite3.OperationalError:  # schema older than version 4
            pass
        columns = [row[1] for row in connection.execute("PRAGMA table_info(topics)")]
        rows = connection.execute(f"SELECT {', '.join(columns)} FROM topics").fetchall()
    finally:
        connection.close()
    found = []
    for row in rows:
        values = dict(zip(columns, row))
        text, digest = definitions.get(values["type"], ("", ""))
        found.append(TopicInfo(values["name"], values["type"], definition=text or "",
                               type_hash=values.get("type_description_hash") or digest or "",
                               offered_qos=_qos_list(values.get("offered_qos_profiles"))))
    return found


def _read_sqlite(path: Path, report: ReadReport, topics: dict) -> Iterator[BagMessage]:
    try:
        connection = _connect(path)
        names = {row[0]: (row[1], row[2]) for row in
                 connection.execute("SELECT id, name, type FROM topics")}
        rows = connection.execute("SELECT topic_id, timestamp, data FROM messages "
                                  "ORDER BY timestamp, id")
    except sqlite3.DatabaseError as error:
        report.unknown_loss = True
        report.problems.append(f"{path.name} cannot be read by sqlite ({error})")
        return
    last = None
    try:
        for topic_id, timestamp, data in rows:
            topic, msgtype = names.get(topic_id, ("", ""))
            if topic:
                last = timestamp
                yield BagMessage(topic, msgtype, int(timestamp), bytes(data), int(timestamp))
    except sqlite3.DatabaseError as error:
        report.unknown_loss = True
        after = f" after receive time {last / 1e9:.3f} s" if last else ""
        report.problems.append(f"{path.name} is damaged ({error}): the messages{after} "
                               f"are lost")
    finally:
        connection.close()
