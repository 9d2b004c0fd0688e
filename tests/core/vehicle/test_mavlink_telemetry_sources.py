"""The bridge's other telemetry sources against the simulated autopilot over real UDP:
LOCAL_POSITION_NED through the EKF origin, SCALED_PRESSURE2's depth, HOME_POSITION's origin,
each compared with the simulator's truth (signs, units)."""

import math
import socket

from conftest import DEPTH
from pymavlink.dialects.v20 import ardupilotmega as dialect

from poam_ros.attitude import GRAVITY
from poam_ros.vehicle.telemetry import Depth, Odometry

ORIGIN = (5.0, -3.0)  # m: the autopilot's EKF origin in the map, within origin_tolerance
FLOAT32 = 1e-4  # m: LOCAL_POSITION_NED's float32 metres, tens of metres from the origin


def without(pair, *kinds: str):
    """The autopilot no longer sends messages of ``kinds`` (one that never streams them)."""
    send = pair.autopilot.link.send
    pair.autopilot.link.send = lambda message: (None if message.get_type() in kinds
                                                else send(message))


def _latest(records, kind):
    return [r for r in records if isinstance(r, kind)][-1]


def test_local_position_is_the_odometry_without_a_global_position(make_pair):
    pair = make_pair(origin_offset=ORIGIN)
    without(pair, "GLOBAL_POSITION_INT")
    pair.ready()
    bridge, simulator = pair.bridge, pair.autopilot.simulator
    assert bridge.start(pair.t) is None
    assert bridge.set_plan([[0.0, -20.0, -DEPTH]], pair.t, pair.t) is None  # due west
    pair.run(4.0)
    pair.records.clear()
    pair.run(0.5)
    odometry = _latest(pair.records, Odometry)
    x, y, yaw = simulator.pose  # the telemetry of the last step is the truth of that step
    assert math.hypot(odometry.x - x, odometry.y - y) < FLOAT32
    assert odometry.z == -DEPTH  # NED down → map up
    assert abs(math.remainder(odometry.yaw - yaw, math.tau)) < 1e-6
    assert odometry.vx < -0.3 and abs(odometry.vy) < 0.05  # west in ENU
    assert bridge.telemetry.accepted["LOCAL_POSITION_NED"] > 0
    assert "GLOBAL_POSITION_INT" not in bridge.telemetry.accepted


def test_the_global_position_wins_and_a_local_one_needs_the_origin(make_pair):
    both = make_pair(origin_offset=ORIGIN)
    both.ready()
    both.run(1.0)
    odometry = [r for r in both.records if isinstance(r, Odometry)]
    assert len(odometry) == both.bridge.telemetry.accepted["GLOBAL_POSITION_INT"]  # one stream
    assert both.bridge.telemetry.accepted["LOCAL_POSITION_NED"] == 0

    blind = make_pair(require_origin=False)  # never asks for the origin
    without(blind, "GLOBAL_POSITION_INT")
    blind.run(2.0)
    assert blind.bridge.origin is None
    assert not [r for r in blind.records if isinstance(r, Odometry)]
    assert blind.bridge.telemetry.dropped["no_origin"] >= 10  # 10 Hz for 2 s, counted


def test_the_depth_sensor_gives_the_depth_and_vfr_hud_stands_in(make_pair):
    low = 1000.0  # Pa: the bridge's surface pressure below the autopilot's
    sensor = make_pair(surface_pressure=101_325.0 - low)
    sensor.run(2.0)
    expected = DEPTH + low / (sensor.bridge.config.water_density * GRAVITY)
    depths = [r.depth for r in sensor.records if isinstance(r, Depth)]
    assert depths and all(abs(depth - expected) < 1e-5 for depth in depths[2:])  # positive down

    estimate = make_pair(surface_pressure=101_325.0 - low)
    without(estimate, "SCALED_PRESSURE2")
    estimate.run(2.0)
    assert _latest(estimate.records, Depth).depth == DEPTH  # −VFR_HUD alt


def test_home_position_gives_the_origin_when_gps_global_origin_does_not_come(make_pair):
    pair = make_pair(origin_offset=ORIGIN)
    without(pair, "GPS_GLOBAL_ORIGIN")
    pair.ready()
    origin, home = pair.bridge.origin, pair.autopilot.home
    assert origin.source == "HOME_POSITION" and home is not None
    assert abs(origin.offset - math.hypot(*ORIGIN)) < 0.02  # home moved back by its x, y
    assert (origin.latitude_e7, origin.longitude_e7) == pair.autopilot._origin_e7()
    assert origin.altitude_mm == 0  # home's altitude plus its depth below the origin
    assert pair.bridge.start(pair.t) is None

    far = make_pair(origin_offset=(50.0, 0.0))
    without(far, "GPS_GLOBAL_ORIGIN")
    far.ready()
    assert "EKF origin is 50.0 m" in far.bridge.start(far.t)  # the anchor check holds


def test_gps_global_origin_comes_first(make_pair):
    pair = make_pair(origin_offset=ORIGIN)
    pair.ready()
    pair.run(2.0)
    assert pair.bridge.origin.source == "GPS_GLOBAL_ORIGIN"


def test_bad_local_positions_pressures_and_homes_are_counted_and_dropped(make_pair):
    pair = make_pair()
    pair.ready()
    boot = pair.autopilot.boot_ms(pair.t)
    encoder = dialect.MAVLink(None, srcSystem=1, srcComponent=1)
    bad = [dialect.MAVLink_local_position_ned_message(boot, math.nan, 0.0, 30.0, 0, 0, 0),
           dialect.MAVLink_scaled_pressure2_message(boot, math.inf, 0.0, 2000),
           dialect.MAVLink_scaled_pressure2_message(boot, 2.0e6, 0.0, 2000),  # 19.9 km deep
           dialect.MAVLink_home_position_message(910_000_000, 80_000_000, 0, 0.0, 0.0, 0.0,
                                                 [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0)]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rogue:
        for message in bad:
            rogue.sendto(bytes(message.pack(encoder)), ("127.0.0.1", pair.port))
    before = len(pair.records)
    pair.run(2.0)
    assert pair.bridge.telemetry.dropped == {"not_finite": 2, "out_of_range": 2}
    depths = [r.depth for r in pair.records[before:] if isinstance(r, Depth)]
    assert depths and all(abs(depth - DEPTH) < 1e-5 for depth in depths)  # nothing else
    assert pair.bridge.origin.source == "GPS_GLOBAL_ORIGIN"
