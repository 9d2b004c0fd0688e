"""Bad input from the vehicle side is counted by reason and dropped; the bridge runs on."""

import math
import socket

import pytest
from conftest import DEPTH
from pymavlink.dialects.v20 import ardupilotmega as dialect

from poam_ros.vehicle.bridge import ACTIVE, IDLE
from poam_ros.vehicle.telemetry import Depth, Odometry


@pytest.fixture
def flying(make_pair):
    """A pair flying a plan, and a socket that talks to the bridge as a rogue peer."""
    pair = make_pair()
    pair.ready()
    pair.bridge.start(pair.t)
    pair.bridge.set_plan([[-20.0, -20.0, -DEPTH]], pair.t, pair.t)
    pair.run(2.0)
    assert pair.bridge.state == ACTIVE
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rogue:
        yield pair, lambda data: rogue.sendto(bytes(data), ("127.0.0.1", pair.port))


def _packed(message, system: int = 1) -> bytes:
    encoder = dialect.MAVLink(None, srcSystem=system, srcComponent=1)
    return message.pack(encoder)


def _position(boot_ms: int, lat_e7: int = 470_000_000) -> dialect.MAVLink_message:
    return dialect.MAVLink_global_position_int_message(boot_ms, lat_e7, 80_000_000, -30_000,
                                                       -30_000, 0, 0, 0, 0)


def _still_flying(pair) -> None:
    """The bridge keeps decoding good telemetry and commanding after the bad input."""
    before, targets = len(pair.records), len(pair.autopilot.targets)
    pair.run(2.0)
    odometry = [r for r in pair.records[before:] if isinstance(r, Odometry)]
    assert len(odometry) >= 15 and pair.bridge.state == ACTIVE
    assert len(pair.autopilot.targets) > targets
    assert all(-30.0 <= r.x <= 30.0 and r.z == -DEPTH for r in odometry)


def test_garbage_bytes_and_a_bad_crc_are_counted_and_dropped(flying):
    pair, send = flying
    send(b"\x00\x13garbage, not MAVLink\xff" * 3)
    corrupt = bytearray(_packed(_position(pair.autopilot.boot_ms(pair.t))))
    corrupt[-1] ^= 0xFF  # the checksum's last byte
    send(corrupt)
    _still_flying(pair)
    bad = pair.bridge.link.bad
    assert bad["bad_crc"] == 1 and bad["bad_bytes"] >= 1
    assert pair.bridge.telemetry.dropped == {}


def test_out_of_range_and_non_finite_fields_are_counted_and_dropped(flying):
    pair, send = flying
    boot = pair.autopilot.boot_ms(pair.t)
    send(_packed(_position(boot, lat_e7=910_000_000)))  # latitude 91°
    send(_packed(dialect.MAVLink_vfr_hud_message(0.0, 0.0, 0, 0, -math.inf, 0.0)))  # depth +inf
    send(_packed(dialect.MAVLink_vfr_hud_message(0.0, 0.0, 0, 0, math.nan, 0.0)))
    send(_packed(dialect.MAVLink_attitude_message(boot, 0.0, 0.0, math.nan, 0.0, 0.0, 0.0)))
    _still_flying(pair)
    assert pair.bridge.telemetry.dropped == {"out_of_range": 1, "not_finite": 3}
    assert all(math.isfinite(r.depth) for r in pair.records if isinstance(r, Depth))


def test_a_second_autopilot_is_counted_and_ignored(flying):
    pair, send = flying
    boot = pair.autopilot.boot_ms(pair.t)
    send(_packed(dialect.MAVLink_heartbeat_message(12, 3, 0, 19, 3, 3), system=2))
    send(_packed(_position(boot, lat_e7=471_000_000), system=2))  # 11 km north
    _still_flying(pair)
    assert pair.bridge.telemetry.dropped == {"other_system": 2}
    assert pair.bridge.autopilot.custom_mode == 4  # still the first autopilot's GUIDED


def test_a_reboot_is_counted_and_stops_commanding_until_start(flying):
    pair, _ = flying
    bridge, autopilot = pair.bridge, pair.autopilot
    autopilot.reboot(pair.t)
    autopilot.operator_mode("GUIDED")
    autopilot.operator_arm()
    rebooted = pair.t
    pair.run(2.0)
    assert bridge.telemetry.dropped == {"reboot": 1} and bridge.events["reboots"] == 1
    assert bridge.state == IDLE and "rebooted" in bridge.reason
    assert [t for t, *_ in autopilot.targets if t > rebooted + 0.1] == []
    assert pair.run(3.0, lambda: bridge.origin is not None)  # asked for the origin again
    assert bridge.clock.offset == pytest.approx(rebooted, abs=0.06)
    assert bridge.start(pair.t) is None
    bridge.set_plan([[-20.0, -20.0, -DEPTH]], pair.t, pair.t)
    _still_flying(pair)
