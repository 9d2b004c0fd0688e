"""ArduPilot's local frame and the depth sensor's pressure, worked by hand."""

import math

import pytest

from poam_ros.attitude import depth_from_pressure, pressure_at_depth
from poam_ros.geo import GeoReference
from poam_ros.vehicle import conversions as cv

LOCAL = cv.GeoFrame(GeoReference.local(47.0, 8.0))
ORIGIN = (470_000_000, 80_000_000)  # 47° N, 8° E in degrees · 1e7


def test_local_offsets_follow_ardupilots_sphere():
    # 1e-7° of latitude is 6 378 100 m · π / 180 · 1e-7 = 1.113 cm on ArduPilot's sphere
    lat, lon = cv.local_to_global(*ORIGIN, 111.31884502145034, 0.0)
    assert lat == pytest.approx(47.001, abs=1e-12) and lon == 8.0
    # east: divided by the cosine of the mid latitude (here the origin's)
    lat, lon = cv.local_to_global(*ORIGIN, 0.0, 111.31884502145034 * math.cos(math.radians(47)))
    assert lat == 47.0 and lon == pytest.approx(8.001, abs=1e-12)


@pytest.mark.parametrize("north, east", [(0.0, 0.0), (25.0, -40.0), (-1500.0, 800.0)])
def test_local_and_global_are_inverse(north, east):
    lat, lon = cv.local_to_global(*ORIGIN, north, east)
    assert cv.global_to_local(*ORIGIN, lat, lon) == pytest.approx((north, east), abs=1e-6)


def test_local_position_to_map_units_and_signs():
    state = cv.local_position(LOCAL, *ORIGIN, 30.0, -20.0, 12.5, 1.5, -2.5, 0.4)
    # the map origin is the EKF origin: north is +y, east +x, down −z (0.1 % of ArduPilot's
    # sphere against the ellipsoid at 47°)
    assert state.x == pytest.approx(-20.0, rel=2e-3) and state.y == pytest.approx(30.0, rel=2e-3)
    assert state.z == -12.5
    assert (state.ve, state.vn, state.vu) == (-2.5, 1.5, -0.4)
    with pytest.raises(cv.ConversionError, match="finite"):
        cv.local_position(LOCAL, *ORIGIN, math.nan, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_depth_from_the_sensors_pressure():
    # 10 m of sea water: 1025 kg/m³ · 9.80665 m/s² · 10 m = 100 518.2 Pa above the surface's
    press_abs = (101_325.0 + 1025.0 * 9.80665 * 10.0) / 100.0  # hPa
    pressure = cv.pressure_from_hpa(press_abs)
    assert depth_from_pressure(pressure, 1025.0, 101_325.0) == pytest.approx(10.0)
    assert pressure_at_depth(10.0, 1025.0, 101_325.0) == pytest.approx(pressure)
    assert depth_from_pressure(cv.pressure_from_hpa(1013.25), 1025.0, 101_325.0) == 0.0
    with pytest.raises(cv.ConversionError):
        cv.pressure_from_hpa(math.inf)
