"""The fleet's packets: soundings and plans in a few bytes each, for a link as thin as an
acoustic modem.

A packet is a header, ``count`` fixed-size entries and a CRC trailer, all big-endian
(docs/fleet.md tabulates it):

======== ======= ===========================================================================
bytes    type    field
======== ======= ===========================================================================
2        bytes   magic ``b"PF"``
1        uint8   version (1)
1        uint8   kind: 1 soundings, 2 plan
1        uint8   format tag: CRC-8 of the quantisation (:attr:`PacketCodec.tag`); a packet
                 quantised otherwise than the receiver's configuration is dropped
1        uint8   sender id (0-255)
4        uint32  sequence number, per sender, from 0
4 + 2    uint32, the time base: seconds and milliseconds of the sender's clock (sim time in
         uint16  simulation); for soundings the newest stamp among them
1        uint8   count of entries (at most 255)
entries          soundings: x, y (int16 each), then one int16 per output (the depth first,
                 then each channel), ``-32768`` where the sounding did not measure it;
                 plan: the waypoints' x, y (int16 each)
2        uint16  CRC-16/CCITT (``binascii.crc_hqx``, start 0xFFFF) of everything before it
======== ======= ===========================================================================

So a packet costs 19 bytes and a sounding 4 + 2·D bytes (6 with the depth alone, D = 1), a
waypoint 4. Positions are relative to the map origin (the geodetic anchor's map frame,
REP-105 ``map``): q = round(x / ``xy_resolution``), within ±32767 steps (±16,383.5 m at
0.5 m); an output's value v is q = round((v − offset) / resolution), also within ±32767 (the
depth at 0.1 m: ±3,276.7 m about its offset). Rounding makes each decoded value lie within
half a resolution of the sent one. A sounding whose position or value does not fit, or is not
finite, is refused when it is quantised and counted by reason (:data:`REFUSALS`); it is never
clipped onto the range's edge.

:meth:`PacketCodec.decode` never raises: a packet that is truncated, has trailing bytes, the
wrong magic, version, kind or format tag, a CRC that does not match, a time base's
milliseconds over 999 or no entries gives ``None`` and is counted by reason (:data:`DROPS`).
The CRC catches every error burst of up to 16 bits and lets a random corruption through with
probability 2⁻¹⁶; the header's checks come on top of it.
"""

from __future__ import annotations

import binascii
import math
import struct
from collections import Counter
from dataclasses import dataclass

import numpy as np

from poam_ros.params import ConfigError, Params, param

MAGIC = b"PF"
VERSION = 1
SOUNDINGS = 1
PLAN = 2
KINDS = (SOUNDINGS, PLAN)
ABSENT = -32768  # an output the sounding did not measure
LIMIT = 32767  # the largest step count either way
MAX_ENTRIES = 255
_HEADER = struct.Struct(">2sBBBBIIHB")
HEADER_BYTES = _HEADER.size  # 17
CRC_BYTES = 2
OVERHEAD_BYTES = HEADER_BYTES + CRC_BYTES  # 19
WAYPOINT_BYTES = 4
MAX_SECONDS = 2**32 - 1

# refusals at quantisation
NON_FINITE = "non_finite"
XY_OUT_OF_RANGE = "xy_out_of_range"
VALUE_OUT_OF_RANGE = "value_out_of_range"
REFUSALS = (NON_FINITE, XY_OUT_OF_RANGE, VALUE_OUT_OF_RANGE)
# drops at decoding
TRUNCATED = "truncated"
TRAILING_BYTES = "trailing_bytes"
BAD_MAGIC = "bad_magic"
BAD_VERSION = "bad_version"
BAD_CRC = "bad_crc"
UNKNOWN_KIND = "unknown_kind"
FORMAT_MISMATCH = "format_mismatch"
BAD_TIME = "bad_time"
EMPTY = "empty"
DROPS = (TRUNCATED, TRAILING_BYTES, BAD_MAGIC, BAD_VERSION, BAD_CRC, UNKNOWN_KIND,
         FORMAT_MISMATCH, BAD_TIME, EMPTY)


@dataclass
class EncodingConfig(Params):
    """How soundings are quantised; every vehicle of a fleet must share it (the packets'
    format tag says when one does not)."""

    xy_resolution: float = param(0.5, "the step of x and y about the map origin; the range is "
                                      "±32767 steps", unit="m", low=1e-6)
    value_resolutions: list[float] = param(
        [0.1], "the step of each output's value: the depth (elevation, m) first, then each "
               "channel in the ingest's order (its own unit); the range is offset ± 32767 steps")
    value_offsets: list[float] = param(
        [0.0], "the value each output's steps count from, as value_resolutions (e.g. -3000 "
               "for a survey between -6276.7 and 276.7 m)")

    def validate(self) -> None:
        if len(self.value_resolutions) != len(self.value_offsets) or not self.value_offsets:
            raise ConfigError("EncodingConfig.value_resolutions and value_offsets must name the "
                              f"same outputs, got {self.value_resolutions!r} and "
                              f"{self.value_offsets!r}")
        if not all(r > 0 and math.isfinite(r) for r in self.value_resolutions):
            raise ConfigError("EncodingConfig.value_resolutions must be positive, got "
                              f"{self.value_resolutions!r}")

    @property
    def outputs(self) -> int:
        """D: the depth and the channels."""
        return len(self.value_resolutions)


@dataclass(frozen=True)
class Soundings:
    """A decoded soundings packet: positions ``xy`` (N, 2) [m, map frame] and ``values``
    (N, D), the depth first, NaN where a sounding did not measure an output."""

    sender: int
    sequence: int
    time: float  # s
    xy: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class Plan:
    """A decoded plan packet: the sender's remaining ``waypoints`` (N, 2) [m, map frame]."""

    sender: int
    sequence: int
    time: float  # s
    waypoints: np.ndarray


@dataclass(frozen=True)
class Quantised:
    """Soundings as the packets carry them: steps ``xy`` (N, 2) and ``values`` (N, D) int16
    (:data:`ABSENT` where not measured), and each one's ``stamp`` [s]."""

    xy: np.ndarray
    values: np.ndarray
    stamps: np.ndarray

    def __len__(self) -> int:
        return len(self.stamps)


class PacketCodec:
    """One vehicle's encoder and decoder. It owns the sender id, the next sequence number and
    the counts: ``refused`` (soundings, by :data:`REFUSALS`) and ``dropped`` (packets, by
    :data:`DROPS`)."""

    def __init__(self, config: EncodingConfig, sender: int = 0) -> None:
        if not 0 <= sender <= 255:
            raise ConfigError(f"a sender id is 0-255, got {sender}")
        self.config = config
        self.sender = sender
        self.sequence = 0
        self.refused: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self._resolutions = np.asarray(config.value_resolutions, dtype=float)
        self._offsets = np.asarray(config.value_offsets, dtype=float)
        self._entry = np.dtype([("xy", ">i2", (2,)), ("values", ">i2", (config.outputs,))])
        quantisation = struct.pack(f">{2 * config.outputs + 1}d", config.xy_resolution,
                                   *config.value_resolutions, *config.value_offsets)
        self.tag = binascii.crc_hqx(quantisation, 0xFFFF) & 0xFF

    @property
    def sounding_bytes(self) -> int:
        """Bytes per sounding: 4 + 2·D."""
        return self._entry.itemsize

    def fitting(self, packet_bytes: int) -> int:
        """How many soundings a packet of at most ``packet_bytes`` holds."""
        return max(0, min(MAX_ENTRIES, (packet_bytes - OVERHEAD_BYTES) // self.sounding_bytes))

    # ------------------------------------------------------------------ encode
    def quantise(self, xy, values, stamps) -> Quantised:
        """The representable soundings of ``xy`` (N, 2) [m], ``values`` (N, D) or (N,) (NaN:
        not measured) and ``stamps`` (N,) [s], in their order; the others are counted in
        ``refused``. A sounding must carry at least one finite value."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        values = np.asarray(values, dtype=float)
        values = values[:, None] if values.ndim == 1 else values
        if values.shape != (len(xy), self.config.outputs):
            raise ValueError(f"values of shape {values.shape} for {len(xy)} soundings, the "
                             f"encoding has {self.config.outputs} output(s)")
        stamps = np.broadcast_to(np.asarray(stamps, dtype=float), (len(xy),))
        with np.errstate(invalid="ignore"):
            qxy = np.rint(xy / self.config.xy_resolution)
            qvalues = np.rint((values - self._offsets) / self._resolutions)
        measured = np.isfinite(values)
        non_finite = ~np.isfinite(xy).all(axis=1) | ~measured.any(axis=1) | ~np.isfinite(stamps)
        xy_out = ~non_finite & ~(np.abs(qxy) <= LIMIT).all(axis=1)
        value_out = ~non_finite & ~xy_out & (measured & ~(np.abs(qvalues) <= LIMIT)).any(axis=1)
        for reason, mask in ((NON_FINITE, non_finite), (XY_OUT_OF_RANGE, xy_out),
                             (VALUE_OUT_OF_RANGE, value_out)):
            if mask.any():
                self.refused[reason] += int(mask.sum())
        keep = ~(non_finite | xy_out | value_out)
        qvalues = np.where(measured, qvalues, ABSENT)[keep]
        return Quantised(qxy[keep].astype(np.int16), qvalues.astype(np.int16),
                         np.array(stamps[keep]))

    def encode(self, soundings: Quantised) -> bytes:
        """A soundings packet of ``soundings`` (at most 255), stamped with their newest stamp;
        each packet takes the next sequence number."""
        entries = np.empty(len(soundings), dtype=self._entry)
        entries["xy"] = soundings.xy
        entries["values"] = soundings.values
        return self._packet(SOUNDINGS, float(np.max(soundings.stamps)), entries)

    def encode_plan(self, waypoints, time: float) -> bytes:
        """A plan packet of ``waypoints`` (N, 2) [m] (at most 255) at ``time`` [s]; a waypoint
        outside the range raises ``ValueError`` (a plan is not thinned)."""
        steps = np.rint(np.asarray(waypoints, dtype=float).reshape(-1, 2)
                        / self.config.xy_resolution)
        if not (np.abs(steps) <= LIMIT).all():
            raise ValueError("a waypoint outside the encoding's range")
        return self._packet(PLAN, time, steps.astype(">i2"))

    def _packet(self, kind: int, time: float, entries: np.ndarray) -> bytes:
        if not 0 < len(entries) <= MAX_ENTRIES:
            raise ValueError(f"a packet holds 1-{MAX_ENTRIES} entries, got {len(entries)}")
        seconds = math.floor(time)
        milliseconds = min(999, round((time - seconds) * 1000))
        if not 0 <= seconds <= MAX_SECONDS:
            raise ValueError(f"a time base of {time} s is outside 0-{MAX_SECONDS} s")
        body = _HEADER.pack(MAGIC, VERSION, kind, self.tag, self.sender, self.sequence,
                            seconds, milliseconds, len(entries)) + entries.tobytes()
        self.sequence += 1
        return body + struct.pack(">H", binascii.crc_hqx(body, 0xFFFF))

    # ------------------------------------------------------------------ decode
    def decode(self, data: bytes) -> Soundings | Plan | None:
        """The packet ``data`` holds, or ``None`` with the reason counted in ``dropped``."""
        data = bytes(data)
        reason = self._check(data)
        if reason is not None:
            self.dropped[reason] += 1
            return None
        _, _, kind, _, sender, sequence, seconds, milliseconds, count = \
            _HEADER.unpack_from(data)
        time = seconds + milliseconds / 1000
        body = data[HEADER_BYTES:-CRC_BYTES]
        if kind == PLAN:
            steps = np.frombuffer(body, dtype=">i2").reshape(count, 2)
            return Plan(sender, sequence, time, steps * self.config.xy_resolution)
        entries = np.frombuffer(body, dtype=self._entry)
        raw = entries["values"].astype(float)
        values = np.where(raw == ABSENT, np.nan, raw * self._resolutions + self._offsets)
        return Soundings(sender, sequence, time,
                         entries["xy"].astype(float) * self.config.xy_resolution, values)

    def _check(self, data: bytes) -> str | None:
        """Why ``data`` is no packet of this format, or None."""
        if len(data) < OVERHEAD_BYTES:
            return TRUNCATED
        magic, version, kind, tag, _, _, _, milliseconds, count = _HEADER.unpack_from(data)
        if magic != MAGIC:
            return BAD_MAGIC
        if version != VERSION:
            return BAD_VERSION
        if kind not in KINDS:
            return UNKNOWN_KIND
        entry = WAYPOINT_BYTES if kind == PLAN else self.sounding_bytes
        expected = OVERHEAD_BYTES + count * entry
        if len(data) < expected:
            return TRUNCATED
        if len(data) > expected:
            return TRAILING_BYTES
        if struct.unpack(">H", data[-CRC_BYTES:])[0] != binascii.crc_hqx(data[:-CRC_BYTES],
                                                                           0xFFFF):
            return BAD_CRC
        if tag != self.tag:
            return FORMAT_MISMATCH
        if milliseconds > 999:
            return BAD_TIME
        return EMPTY if count == 0 else None
