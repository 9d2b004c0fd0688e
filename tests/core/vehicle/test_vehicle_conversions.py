"""MAVLink ↔ map conversions, the boot-time clock and the safety gate, worked by hand."""

import math

import numpy as np
import pytest

from poam_ros.geo import GeoReference
from poam_ros.vehicle import AutopilotClock, SafetyGate, VehicleBridgeConfig
from poam_ros.vehicle import conversions as cv
from poam_ros.workspace import Workspace

LOCAL = cv.GeoFrame(GeoReference.local(47.0, 8.0))
UTM = cv.GeoFrame(GeoReference.at_lonlat("UTM 32N", 47.0, 11.5))  # 2.5° east of 9° E


def test_global_position_to_map_units_and_signs():
    lat, lon = LOCAL.to_latlon(30.0, -40.0)
    state = cv.global_position(LOCAL, round(lat * 1e7), round(lon * 1e7), -12_345, 150, -250,
                               40)
    assert state.x == pytest.approx(30.0, abs=0.012) and state.y == pytest.approx(-40.0,
                                                                                  abs=0.012)
    assert state.z == -12.345  # mm, negative below the surface (ArduSub)
    assert (state.ve, state.vn, state.vu) == (-2.5, 1.5, -0.4)  # NED cm/s → ENU m/s


def test_integer_degrees_round_trip_within_a_centimetre():
    for x, y in ((0.0, 0.0), (1234.5, -987.6), (-20_000.0, 15_000.0)):
        lat_e7, lon_e7 = cv.target_global_int(LOCAL, x, y)
        back = LOCAL.to_map(lat_e7 / 1e7, lon_e7 / 1e7)
        assert math.hypot(back[0] - x, back[1] - y) < 0.0075  # half of 1e-7° ≈ 0.56 cm


def test_yaw_is_measured_from_true_north_clockwise_in_ned():
    assert cv.north_angle(LOCAL, 47.0, 8.0) == pytest.approx(math.pi / 2, abs=1e-9)
    # facing east (NED yaw π/2) is map yaw 0; facing north-west (NED -π/4) is 3π/4
    assert cv.attitude_to_map(math.pi / 2, 0.1, 0.2, math.pi / 2) == pytest.approx(
        (0.1, -0.2, 0.0))
    assert cv.attitude_to_map(math.pi / 2, 0.0, 0.0, -math.pi / 4)[2] == pytest.approx(
        3 * math.pi / 4)
    assert cv.heading_to_map(math.pi / 2, 9000) == pytest.approx(0.0)
    assert cv.heading_to_map(math.pi / 2, cv.UINT16_MAX) is None
    assert cv.rates_to_map(0.1, 0.2, 0.3) == (0.1, -0.2, -0.3)


def test_utm_north_is_turned_by_the_meridian_convergence():
    theta = cv.north_angle(UTM, 47.0, 11.5)
    # east of the central meridian grid north lies east of true north: γ ≈ Δλ sin φ
    convergence = math.radians(2.5) * math.sin(math.radians(47.0))
    assert math.pi / 2 - theta == pytest.approx(-convergence, rel=0.01)
    north, east = cv.north_east(theta, *cv.map_velocity(theta, 1.0, 2.0))
    assert (east, north) == pytest.approx((1.0, 2.0))


@pytest.mark.parametrize("lat_e7, lon_e7", [(910_000_000, 0), (0, -1_800_000_001)])
def test_out_of_range_degrees_are_refused(lat_e7, lon_e7):
    with pytest.raises(cv.ConversionError, match="out of range"):
        cv.degrees(lat_e7, lon_e7)


def test_fix_types_depth_and_rangefinder_conventions():
    assert [cv.fix_status(t) for t in range(9)] == [-1, -1, 0, 0, 1, 2, 2, 0, 0]
    assert cv.fix_status(42) == -1
    assert cv.horizontal_variance(150) == 2.25 and cv.horizontal_variance(65535) is None
    assert cv.depth_from_altitude(-12.5) == 12.5
    with pytest.raises(cv.ConversionError, match="finite"):
        cv.depth_from_altitude(-math.inf)
    assert cv.rangefinder(1234, 20, 5000) == 12.34
    assert cv.rangefinder(10, 20, 5000) == -math.inf  # REP-117: too close
    assert cv.rangefinder(5000, 20, 5000) == math.inf  # no return


def test_origin_offset_is_the_distance_to_the_map_origin():
    lat, lon = LOCAL.to_latlon(30.0, 40.0)
    assert cv.origin_offset(LOCAL, round(lat * 1e7), round(lon * 1e7)) == pytest.approx(
        50.0, abs=0.01)


def test_clock_offset_is_the_smallest_delay_and_stamps_never_lead_arrival():
    clock = AutopilotClock(window=5.0)
    delays = [0.3, 0.05, 0.2, 0.02, 0.4, 0.1]
    for k, delay in enumerate(delays):
        assert clock.observe(k * 0.1, 100.0 + k * 0.1 + delay)
        assert clock.stamp(k * 0.1) <= 100.0 + k * 0.1 + delay
    assert clock.offset == pytest.approx(100.02)
    for k in range(6, 200):  # the 0.02 s delay leaves the 5 s window: 0.05 s is the floor
        clock.observe(k * 0.1, 100.0 + k * 0.1 + 0.05)
    assert clock.offset == pytest.approx(100.05)


def test_clock_tells_a_reboot_from_messages_out_of_order():
    clock = AutopilotClock(reboot_tolerance=1.0)
    clock.observe(50.0, 1000.0)
    assert clock.observe(49.5, 1000.1)  # stamped earlier in the autopilot's loop: kept
    assert clock.latest == pytest.approx(1000.0)
    assert not clock.observe(2.0, 1001.0) and clock.reboots == 1 and clock.offset is None
    assert clock.observe(2.1, 1001.1) and clock.offset == pytest.approx(999.0)


def _gate(vertical: str, seabed=None) -> SafetyGate:
    config = VehicleBridgeConfig(vertical=vertical, max_depth=50.0, min_altitude=2.0)
    workspace = Workspace.from_vertices([0, 0, 100, 0, 100, 100, 0, 100],
                                        [[40, 40, 60, 40, 60, 60, 40, 60]])
    return SafetyGate(config, workspace, seabed)


def test_the_gate_refuses_by_reason_and_counts():
    flat = _gate("depth", seabed=lambda xy: np.full(len(xy), -30.0))
    assert flat.reason(10, 10, -10) is None
    assert flat.reason(-1, 10, -10) == "outside_workspace"
    assert flat.reason(50, 50, -10) == "outside_workspace"  # a no-go zone
    assert flat.reason(10, 10, 0.5) == "above_surface"
    assert flat.reason(10, 10, -29.0) == "too_close_to_seabed"
    assert flat.reason(10, 10, math.nan) == "not_finite"
    assert _gate("depth").reason(10, 10, -51.0) == "below_max_depth"
    assert _gate("depth").reason(10, 10, -29.0) is None  # no seabed known: depth limits only
    altitude = _gate("altitude", seabed=lambda xy: np.where(xy[:, 0] > 70.0, -70.0, -40.0))
    assert altitude.reason(10, 10, 1.0) == "too_close_to_seabed"
    assert altitude.reason(80, 10, 10.0) == "below_max_depth"  # 60 m deep
    assert altitude.reason(10, 10, 41.0) == "above_surface"
    assert altitude.reason(10, 10, 30.0) is None
    assert _gate("surface").reason(10, 10, math.nan) is None  # z ignored on a boat
    assert flat.check([[10, 10, -10], [10, 10, 1.0], [-5, 0, -10]]) == "above_surface"
    assert flat.refused == {"above_surface": 1}
