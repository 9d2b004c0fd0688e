"""The fleet's packets: soundings and plans round-trip within the stated resolution; a packet
that is corrupted, truncated, foreign or empty is dropped and counted, never decoded; values
outside the range are refused at encode and counted."""

import struct

import numpy as np
import pytest

from poam_ros.fleet import encoding as en
from poam_ros.fleet.encoding import EncodingConfig, PacketCodec, Plan, Soundings
from poam_ros.params import ConfigError

XY_RANGE = 32767 * 0.5  # m, the default xy_resolution's range
DEPTH_RANGE = 32767 * 0.1  # m about the offset


def soundings(rng, n, outputs=1, scale=1.0):
    xy = rng.uniform(-XY_RANGE, XY_RANGE, (n, 2)) * scale
    values = rng.uniform(-DEPTH_RANGE, DEPTH_RANGE, (n, outputs)) * scale
    return xy, values


def test_soundings_round_trip_within_half_a_resolution():
    rng = np.random.default_rng(0)
    codec = PacketCodec(EncodingConfig(), sender=7)
    for trial in range(200):
        xy, values = soundings(rng, int(rng.integers(1, 256)))
        stamps = rng.uniform(0, 1e5, len(xy))
        packet = codec.encode(codec.quantise(xy, values, stamps))
        assert len(packet) == en.OVERHEAD_BYTES + 6 * len(xy)
        decoded = codec.decode(packet)
        assert isinstance(decoded, Soundings)
        assert (decoded.sender, decoded.sequence) == (7, trial)
        assert abs(decoded.time - stamps.max()) <= 1e-3
        assert np.abs(decoded.xy - xy).max() <= 0.25 + 1e-9
        assert np.abs(decoded.values - values).max() <= 0.05 + 1e-9
    assert not codec.refused and not codec.dropped


def test_channels_and_unmeasured_outputs_round_trip():
    config = EncodingConfig(value_resolutions=[0.1, 0.001], value_offsets=[-3000.0, 10.0])
    codec = PacketCodec(config)
    rng = np.random.default_rng(1)
    xy = rng.uniform(-1000, 1000, (50, 2))
    values = np.column_stack([rng.uniform(-6000, 0, 50), rng.uniform(-20, 40, 50)])
    values[::3, 1] = np.nan  # the channel not measured
    values[1::3, 0] = np.nan  # the depth not measured
    decoded = codec.decode(codec.encode(codec.quantise(xy, values, 5.0)))
    assert codec.sounding_bytes == 8
    assert np.array_equal(np.isnan(decoded.values), np.isnan(values))
    error = np.abs(decoded.values - values)[~np.isnan(values)]
    assert error.max() <= 0.05 + 1e-9
    assert np.nanmax(np.abs(decoded.values[:, 1] - values[:, 1])) <= 0.0005 + 1e-9


def test_a_plan_round_trips():
    codec = PacketCodec(EncodingConfig(xy_resolution=1.0), sender=2)
    waypoints = np.array([[10.2, -30.7], [9000.0, 4000.4], [-32767.0, 32767.0]])
    decoded = codec.decode(codec.encode_plan(waypoints, 100.25))
    assert isinstance(decoded, Plan)
    assert (decoded.sender, decoded.time) == (2, 100.25)
    assert np.abs(decoded.waypoints - waypoints).max() <= 0.5
    with pytest.raises(ValueError, match="outside"):
        codec.encode_plan([[40000.0, 0.0]], 0.0)


def test_values_outside_the_range_are_refused_and_counted():
    codec = PacketCodec(EncodingConfig())
    xy = np.array([[0.0, 0.0], [XY_RANGE + 1, 0.0], [0.0, 0.0], [np.nan, 0.0], [1.0, 1.0]])
    values = np.array([-100.0, -100.0, -DEPTH_RANGE - 1, -100.0, np.nan])
    kept = codec.quantise(xy, values, 0.0)
    assert len(kept) == 1 and kept.xy.tolist() == [[0, 0]]
    assert codec.refused == {en.XY_OUT_OF_RANGE: 1, en.VALUE_OUT_OF_RANGE: 1,
                             en.NON_FINITE: 2}


def packet(codec, n=10, seed=0):
    xy, values = soundings(np.random.default_rng(seed), n, scale=0.1)
    return codec.encode(codec.quantise(xy, values, 3.0))


def test_every_single_bit_flip_is_dropped_and_counted():
    codec = PacketCodec(EncodingConfig())
    good = packet(codec)
    for bit in range(8 * len(good)):
        corrupted = bytearray(good)
        corrupted[bit // 8] ^= 1 << (bit % 8)
        assert codec.decode(bytes(corrupted)) is None, f"bit {bit}"
    assert sum(codec.dropped.values()) == 8 * len(good)
    assert codec.dropped[en.BAD_CRC] > 0 and codec.dropped[en.BAD_MAGIC] == 16


def test_truncated_foreign_and_trailing_packets_are_dropped_by_reason():
    codec = PacketCodec(EncodingConfig())
    good = packet(codec)
    for length in range(len(good)):
        assert codec.decode(good[:length]) is None
    assert codec.dropped == {en.TRUNCATED: len(good)}
    codec.dropped.clear()
    assert codec.decode(b"XX" + good[2:]) is None
    assert codec.decode(good + b"\0") is None
    other = PacketCodec(EncodingConfig(xy_resolution=0.25))
    assert other.decode(good) is None  # quantised otherwise
    bad_version = bytearray(good)
    bad_version[2] = 9
    assert codec.decode(bytes(bad_version)) is None
    assert codec.dropped == {en.BAD_MAGIC: 1, en.TRAILING_BYTES: 1, en.BAD_VERSION: 1}
    assert other.dropped == {en.FORMAT_MISMATCH: 1}


def with_crc(body: bytes) -> bytes:
    import binascii
    return body + struct.pack(">H", binascii.crc_hqx(body, 0xFFFF))


def test_well_formed_nonsense_is_dropped_by_reason():
    codec = PacketCodec(EncodingConfig())
    header = en._HEADER
    empty = header.pack(en.MAGIC, en.VERSION, en.SOUNDINGS, codec.tag, 1, 0, 0, 0, 0)
    kind = header.pack(en.MAGIC, en.VERSION, 9, codec.tag, 1, 0, 0, 0, 0)
    time = header.pack(en.MAGIC, en.VERSION, en.PLAN, codec.tag, 1, 0, 0, 1000, 1) + bytes(4)
    for body in (empty, kind, time):
        assert codec.decode(with_crc(body)) is None
    assert codec.dropped == {en.EMPTY: 1, en.UNKNOWN_KIND: 1, en.BAD_TIME: 1}


def test_random_bytes_never_raise():
    codec = PacketCodec(EncodingConfig())
    rng = np.random.default_rng(3)
    good = packet(codec)
    for _ in range(2000):
        noise = rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8).tobytes()
        assert codec.decode(good[:2] + noise) is None
    assert sum(codec.dropped.values()) == 2000


def test_the_configuration_is_checked():
    with pytest.raises(ConfigError, match="same outputs"):
        EncodingConfig(value_resolutions=[0.1, 0.1])
    with pytest.raises(ConfigError, match="positive"):
        EncodingConfig(value_resolutions=[0.0])
    with pytest.raises(ConfigError, match="sender"):
        PacketCodec(EncodingConfig(), sender=256)


def test_no_soundings_quantise_to_none_and_a_wrong_shape_is_an_error():
    codec = PacketCodec(EncodingConfig())
    assert len(codec.quantise(np.empty((0, 2)), np.empty(0), 0.0)) == 0
    with pytest.raises(ValueError, match="output"):
        codec.quantise(np.zeros((3, 2)), np.zeros((3, 2)), 0.0)
