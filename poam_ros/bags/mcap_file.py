"""One MCAP storage file of a rosbag2 bag, written a batch of messages at a time.

The ``mcap`` library's writer spends about 9 µs of Python on every message (a record
object, a stream write per field, statistics updated one by one): half a core at the
recorder's 20,000 messages/s. Here a batch's Message records are packed with one struct
call each and its message index is kept as flat lists, about 1 µs a message. Every other
record (header, schemas, channels, chunks, message and chunk indexes, statistics,
metadata, summary offsets, footer) is written with the library's record classes, so the
file is laid out as its writer lays it out: ``ros2`` profile, ``ros2msg`` schemas, ``cdr``
channels carrying ``offered_qos_profiles``, chunks of ``chunk_size`` bytes of records
compressed with zstd (or not) with a CRC of their content, message indexes after each
chunk and a summary. Schemas and channels go into the data section as they are added, so
that a reader of a truncated file knows them before any of their messages.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import zstandard
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    Chunk,
    ChunkIndex,
    DataEnd,
    Footer,
    Header,
    Metadata,
    MetadataIndex,
    Schema,
    Statistics,
    SummaryOffset,
)

MAGIC = b"\x89MCAP0\r\n"
# Message record: opcode, record length, channel id, sequence, log time, publish time.
_MESSAGE = struct.Struct("<BQHIQQ")
_MESSAGE_FIELDS = 22  # bytes of a Message record between its length and its data
_MESSAGE_INDEX = struct.Struct("<BQHI")  # opcode, record length, channel id, entries' bytes


class McapFile:
    """Writes ``directory/name``; topics are added as ``(index, TopicRecord)`` and their
    messages written as ``(index, log_time, data, publish_time)``: channel id index + 1."""

    def __init__(self, directory: Path, name: str, compression: str, chunk_size: int,
                 library: str) -> None:
        self.stream = open(directory / name, "xb")
        self.compression = "zstd" if compression == "zstd" else ""
        self.chunk_size = chunk_size
        self.schemas: dict[str, Schema] = {}
        self.channels: list[Channel] = []
        self.sequence = 0
        self.counts: dict[int, int] = {}  # channel id -> messages
        self.start, self.end = 2**64 - 1, 0
        self._records: list[bytes] = []  # the open chunk's records
        self._size = 0  # their bytes
        self._index: dict[int, list[int]] = {}  # channel id -> [log time, offset, ...]
        self._chunk_indexes: list[ChunkIndex] = []
        self._metadata_indexes: list[MetadataIndex] = []
        self.stream.write(MAGIC)
        self._write(Header(profile="ros2", library=library))

    def add_topic(self, index: int, topic, offered_qos: str) -> None:
        schema = self.schemas.get(topic.msgtype)
        if schema is None:
            schema = self.schemas[topic.msgtype] = Schema(
                id=len(self.schemas) + 1, name=topic.msgtype, encoding="ros2msg",
                data=topic.definition.encode())
            self._write(schema)
        channel = Channel(id=index + 1, topic=topic.name, message_encoding="cdr",
                          schema_id=schema.id, metadata={"offered_qos_profiles": offered_qos})
        self.channels.append(channel)
        self._write(channel)

    def write_many(self, items) -> None:
        """Append ``(index, log_time, data, publish_time)`` messages in order (publish time
        0 or None: the log time)."""
        records, index, pack = self._records, self._index, _MESSAGE.pack
        size, sequence, limit = self._size, self.sequence, self.chunk_size
        for topic, log_time, data, publish_time in items:
            sequence += 1
            channel = topic + 1
            entries = index.get(channel)
            if entries is None:
                entries = index[channel] = []
            entries += (log_time, size)
            records += (pack(5, _MESSAGE_FIELDS + len(data), channel, sequence & 0xFFFFFFFF,
                             log_time, publish_time or log_time), data)
            size += 31 + len(data)
            if size >= limit:
                self._close_chunk()
                records, index, size = self._records, self._index, 0
        self._size, self.sequence = size, sequence

    def close(self, metadata: str) -> None:
        """The last chunk, the ``rosbag2`` metadata record (``metadata``: the bag's
        metadata.yaml content), the summary and the footer."""
        self._close_chunk()
        offset = self.stream.tell()
        length = self._write(Metadata(name="rosbag2",
                                      metadata={"serialized_metadata": metadata}))
        self._metadata_indexes.append(MetadataIndex(offset=offset, length=length,
                                                    name="rosbag2"))
        self._write(DataEnd(data_section_crc=0))
        self._write_summary()
        self.stream.write(MAGIC)
        self.stream.close()

    # ------------------------------------------------------------------ internals

    def _write(self, record) -> int:
        builder = RecordBuilder()
        record.write(builder)
        data = builder.end()
        self.stream.write(data)
        return len(data)

    def _close_chunk(self) -> None:
        if not self._records:
            return
        data = b"".join(self._records)
        times = [t for entries in self._index.values() for t in entries[::2]]
        start, end = min(times), max(times)
        compressed = zstandard.compress(data) if self.compression else data
        offset = self.stream.tell()
        length = self._write(Chunk(compression=self.compression, data=compressed,
                                   message_start_time=start, message_end_time=end,
                                   uncompressed_crc=zlib.crc32(data),
                                   uncompressed_size=len(data)))
        index_offsets, index_start = {}, self.stream.tell()
        for channel, entries in self._index.items():
            index_offsets[channel] = self.stream.tell()
            self.stream.write(_MESSAGE_INDEX.pack(Opcode.MESSAGE_INDEX, 6 + 8 * len(entries),
                                                  channel, 8 * len(entries)))
            self.stream.write(struct.pack(f"<{len(entries)}Q", *entries))
            self.counts[channel] = self.counts.get(channel, 0) + len(entries) // 2
        self._chunk_indexes.append(ChunkIndex(
            message_start_time=start, message_end_time=end, chunk_start_offset=offset,
            chunk_length=length, message_index_offsets=index_offsets,
            message_index_length=self.stream.tell() - index_start,
            compression=self.compression, compressed_size=len(compressed),
            uncompressed_size=len(data)))
        self.start, self.end = min(self.start, start), max(self.end, end)
        self._records, self._size, self._index = [], 0, {}

    def _write_summary(self) -> None:
        summary_start = self.stream.tell()
        builder, offsets = RecordBuilder(), []
        statistics = Statistics(
            message_count=sum(self.counts.values()), schema_count=len(self.schemas),
            channel_count=len(self.channels), attachment_count=0,
            metadata_count=len(self._metadata_indexes), chunk_count=len(self._chunk_indexes),
            message_start_time=self.start if self.counts else 0,
            message_end_time=self.end, channel_message_counts=dict(sorted(self.counts.items())))
        for opcode, group in ((Opcode.SCHEMA, list(self.schemas.values())),
                              (Opcode.CHANNEL, self.channels),
                              (Opcode.STATISTICS, [statistics]),
                              (Opcode.CHUNK_INDEX, self._chunk_indexes),
                              (Opcode.METADATA_INDEX, self._metadata_indexes)):
            if group:
                start = builder.count
                for record in group:
                    record.write(builder)
                offsets.append(SummaryOffset(group_opcode=opcode,
                                             group_start=summary_start + start,
                                             group_length=builder.count - start))
        offset_start = summary_start + builder.count
        for offset in offsets:
            offset.write(builder)
        summary = builder.end()
        self.stream.write(summary)
        crc = zlib.crc32(struct.pack("<BQQQ", Opcode.FOOTER, 20, summary_start, offset_start),
                         zlib.crc32(summary))
        self._write(Footer(summary_start=summary_start, summary_offset_start=offset_start,
                           summary_crc=crc))
