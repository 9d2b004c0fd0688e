"""The crash journal's files on disk: names, the segment header and the records. ROS-free.

A directory holds ``autosave-<n>.pt`` (the state file format of poam_ros.models.state_io) and
``segment-<n>.journal``, n zero-padded to 8 digits. A segment is a 32-byte header (magic
``POAMJRNL``, version u16, flags u16 with bit 0 set when the segment begins a new map and bits
8-15 the targets per sample T minus one (0: the depth alone; T = 1 + C for a mapper with C
channels), the segment's number u64, the newest data stamp of the map before it i64 [ns], the
CRC-32 of these 28 bytes u32), then records. A record is a 24-byte header (magic ``REC1``,
sample count N u32, the batch's data stamp i64 [ns], the payload's CRC-32 u32, the CRC-32 of
these 20 bytes u32) and its payload: positions (N, 2) then targets (N, T), float64, 8 (2 + T) N
bytes. Everything little-endian.

Reading never misreads: a record whose header or payload fails its CRC, or that would end past
the end of its file, is skipped, and reading goes on at the next record whose header and
payload both check out (a false match needs two 32-bit CRCs to agree by chance). Damage that
runs to the end of a segment is a *torn tail*, a write the crash cut short; damage with good
records after it is *corruption*.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

VERSION = 1
NEW_MAP = 0x1  # segment flag: no autosave comes before it
TARGETS_SHIFT = 8  # segment flags: (targets per sample - 1) << TARGETS_SHIFT
MAX_TARGETS = 256
_SEGMENT = struct.Struct("<8sHHQqI")  # magic, version, flags, number, stamp, CRC-32
_SEGMENT_MAGIC = b"POAMJRNL"
_RECORD = struct.Struct("<4sIqII")  # magic, count, stamp, payload CRC-32, header CRC-32
_RECORD_MAGIC = b"REC1"
_NAME = re.compile(r"(autosave|segment)-(\d+)\.(pt|journal)")
TEMPORARY = re.compile(r"\.(?:autosave|segment)-\d+\.(?:pt|journal)\.[a-z0-9_]{8}\.tmp")


def file_name(kind: str, number: int) -> str:
    """The name of ``kind`` (``autosave`` or ``segment``) number ``number``."""
    return f"{kind}-{number:08d}.{'pt' if kind == 'autosave' else 'journal'}"


def parse_name(name: str) -> tuple[str, int] | None:
    """(kind, number) of a journal file's name, None for any other name."""
    match = _NAME.fullmatch(name)
    return (match[1], int(match[2])) if match else None


def segment_header(number: int, flags: int, targets: int, stamp: int) -> bytes:
    """The 32 bytes that begin segment ``number`` of ``targets`` per sample."""
    head = struct.pack("<8sHHQq", _SEGMENT_MAGIC, VERSION,
                       flags | (targets - 1) << TARGETS_SHIFT, number, stamp)
    return head + struct.pack("<I", zlib.crc32(head))


def record(xy: np.ndarray, z: np.ndarray, stamp: int) -> bytes:
    """A record of positions ``xy`` (N, 2) and targets ``z`` (N, T) (little-endian float64)."""
    payload = np.ascontiguousarray(xy).tobytes() + np.ascontiguousarray(z).tobytes()
    head = struct.pack("<4sIqI", _RECORD_MAGIC, len(z), int(stamp), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


@dataclass
class Header:
    """A segment's header as read: ``flags`` and ``stamp`` [ns]; ``problem`` says why it is
    not one this version reads as segment n (empty: it is)."""

    flags: int = 0
    stamp: int = 0
    problem: str = ""

    @property
    def targets(self) -> int:
        """T, the targets per sample."""
        return (self.flags >> TARGETS_SHIFT) + 1


def read_header(data: bytes, number: int) -> Header:
    """The header of segment ``number`` at the start of ``data``."""
    if len(data) < _SEGMENT.size:
        return Header(problem=f"{len(data)} bytes, shorter than a segment header")
    magic, version, flags, found, stamp, crc = _SEGMENT.unpack_from(data)
    if magic != _SEGMENT_MAGIC or zlib.crc32(data[:_SEGMENT.size - 4]) != crc:
        return Header(problem="no valid header")
    if version != VERSION:
        return Header(flags, stamp, f"format version {version}, this poam_ros reads {VERSION}")
    if found != number:
        return Header(flags, stamp, f"the header of segment {found}")
    return Header(flags, stamp)


@dataclass
class Scan:
    """The records of a segment that check out, (stamp [ns], xy (N, 2), z (N, T)) in order,
    and the byte spans (start, end, torn: runs to the end of the file) that do not."""

    records: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)
    damage: list[tuple[int, int, bool]] = field(default_factory=list)


def scan_records(data: bytes, targets: int) -> Scan:
    """The records of a segment's bytes (``targets`` per sample), after its header."""
    scan, position = Scan(), _SEGMENT.size
    while position < len(data):
        found = _record_at(data, position, targets)
        if found is not None:
            scan.records.append(found[:3])
            position = found[3]
            continue
        good = _next_record(data, position + 1, targets)
        scan.damage.append((position, good or len(data), good is None))
        if good is None:
            break
        position = good
    return scan


def _record_at(data: bytes, position: int, targets: int):
    """(stamp, xy (N, 2), z (N, targets), end) of a record that checks out at ``position``,
    else None."""
    if len(data) - position < _RECORD.size:
        return None
    magic, count, stamp, payload_crc, head_crc = _RECORD.unpack_from(data, position)
    view = memoryview(data)
    if magic != _RECORD_MAGIC or zlib.crc32(view[position:position + _RECORD.size - 4]) \
            != head_crc:
        return None
    start = position + _RECORD.size
    end = start + 8 * (2 + targets) * count
    if end > len(data) or zlib.crc32(view[start:end]) != payload_crc:
        return None
    values = np.frombuffer(data, dtype="<f8", count=(2 + targets) * count,
                           offset=start).astype(float)
    return (stamp, values[:2 * count].reshape(count, 2),
            values[2 * count:].reshape(count, targets), end)


def _next_record(data: bytes, start: int, targets: int) -> int | None:
    position = data.find(_RECORD_MAGIC, start)
    while position >= 0:
        if _record_at(data, position, targets) is not None:
            return position
        position = data.find(_RECORD_MAGIC, position + 1)
    return None
