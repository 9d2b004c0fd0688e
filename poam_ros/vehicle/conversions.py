"""MAVLink fields ↔ the stack's ``map`` frame: pure functions, no sockets, no ROS.

Conventions (MAVLink common message set, mavlink.io/en/messages/common.html):

* Positions are WGS 84 degrees · 1e7 in int32 (``lat``, ``lon``, ``lat_int``, ``lon_int``);
  altitudes in millimetres (GLOBAL_POSITION_INT ``alt`` above mean sea level,
  ``relative_alt`` above home); velocities in cm/s, NED (``vx`` north, ``vy`` east, ``vz``
  down); ``hdg`` in centidegrees clockwise from north, UINT16_MAX when unknown.
* ATTITUDE is roll, pitch, yaw (rad) of the body frame FRD (forward, right, down) in NED:
  yaw is measured from north, clockwise. The stack is REP-103: ``base_link`` FLU in ``map``
  ENU, yaw from the map's x axis, counter-clockwise. So roll stays, pitch changes sign, and
  yaw_map = θ_north − yaw_ned, where θ_north is the map angle of true north at the vehicle:
  π/2 in a local transverse Mercator on its central meridian, off by the meridian
  convergence in a UTM map (up to about 3°). θ_north is measured, not assumed:
  :func:`north_angle` projects a point 1 m north.
* Positions go through :class:`GeoFrame`, the map's anchor (:class:`GeoReference`).
* Depth: ArduSub reports depth as negative altitude (GLOBAL_POSITION_INT ``relative_alt``
  and VFR_HUD ``alt`` below the surface are negative), with home at the surface. The map's
  z is up with 0 at the anchor's vertical reference; the bridge assumes the vehicle's depth
  reference (the surface) is that 0, so z = relative_alt / 1000 and depth = −z.
* LOCAL_POSITION_NED is metres north, east, down of the autopilot's EKF origin. ArduPilot
  turns its local position into latitude and longitude with ``Location::offset``
  (libraries/AP_Common/Location.cpp): a flat Earth of radius 6 378 100 m, the east offset
  divided by the cosine of the mid latitude. :func:`local_to_global` inverts that
  convention (and :func:`global_to_local` is ``Location::get_distance_NE``), so a local
  position lands where the same autopilot's GLOBAL_POSITION_INT puts it; from there it goes
  through the anchor like any latitude and longitude. Down is negative map z with the
  origin's altitude at the surface, as home's.
* SCALED_PRESSURE2 is ArduSub's second barometer, the external depth sensor (a Bar30 on a
  BlueROV2): ``press_abs`` in hPa, depth = (p − p_surface) / (ρ g) (:func:`depth_from_pressure`).
* GPS_RAW_INT ``fix_type`` (GPS_FIX_TYPE) → ``sensor_msgs/NavSatStatus`` status:
  0–1 no fix, 2–3 a fix, 4 (DGPS) an SBAS-augmented fix, 5–6 (RTK float/fixed) a
  ground-based-augmented fix, 7 (static) and 8 (PPP) a fix.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pyproj

from poam_ros.geo import GeoReference

DEGREES_E7 = 1e7
# ArduPilot's LOCATION_SCALING_FACTOR: m per 1e-7 degree of latitude on its sphere
# (RADIUS_OF_EARTH 6 378 100 m)
LOCATION_SCALING = 1e-7 * math.pi / 180.0 * 6_378_100.0
HECTOPASCAL = 100.0  # Pa: MAVLink's pressures are in hPa
UINT16_MAX = 65535
NORTH_PROBE = 1e-5  # deg of latitude (≈ 1.1 m) between the two points θ_north is measured from

# sensor_msgs/NavSatStatus
STATUS_NO_FIX, STATUS_FIX, STATUS_SBAS_FIX, STATUS_GBAS_FIX = -1, 0, 1, 2
_FIX_STATUS = {0: STATUS_NO_FIX, 1: STATUS_NO_FIX, 2: STATUS_FIX, 3: STATUS_FIX,
               4: STATUS_SBAS_FIX, 5: STATUS_GBAS_FIX, 6: STATUS_GBAS_FIX, 7: STATUS_FIX,
               8: STATUS_FIX}
# MAV_SENSOR_ORIENTATION of a rangefinder looking down (MAV_SENSOR_ROTATION_PITCH_270)
DOWNWARD = 25


class ConversionError(ValueError):
    """A field is not finite or out of its documented range; the message names it."""


def wrap(angle: float) -> float:
    """``angle`` wrapped to (-π, π] rad."""
    wrapped = math.remainder(angle, math.tau)
    return math.pi if wrapped == -math.pi else wrapped


def finite(name: str, *values: float) -> None:
    """Raise :class:`ConversionError` naming ``name`` if any value is NaN or infinite."""
    if not all(math.isfinite(v) for v in values):
        raise ConversionError(f"{name} is not finite: {values!r}")


def degrees(lat_e7: int, lon_e7: int) -> tuple[float, float]:
    """(lat, lon) degrees of 1e7-scaled integers; :class:`ConversionError` out of range."""
    lat, lon = lat_e7 / DEGREES_E7, lon_e7 / DEGREES_E7
    if not (abs(lat) <= 90.0 and abs(lon) <= 180.0):
        raise ConversionError(f"latitude {lat!r} / longitude {lon!r} out of range")
    return lat, lon


class GeoFrame:
    """The map's anchor with its two pyproj transformers built once: telemetry converts at
    tens of hertz, and building a transformer takes tens of milliseconds."""

    def __init__(self, georeference: GeoReference) -> None:
        self.georeference = georeference
        crs = georeference.crs
        self._forward = pyproj.Transformer.from_crs(4326, crs, always_xy=True)
        self._inverse = pyproj.Transformer.from_crs(crs, 4326, always_xy=True)
        self._origin = georeference.origin

    def to_map(self, lat: float, lon: float) -> tuple[float, float]:
        """Map (x, y) m of WGS 84 degrees; :class:`ConversionError` off the projection."""
        easting, northing = self._forward.transform(lon, lat)
        x, y = easting - self._origin[0], northing - self._origin[1]
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ConversionError(f"latitude {lat!r} / longitude {lon!r} is out of range "
                                  f"of the map's projection")
        return float(x), float(y)

    def to_latlon(self, x: float, y: float) -> tuple[float, float]:
        """WGS 84 (lat, lon) degrees of map (x, y) m."""
        finite("map point", x, y)
        lon, lat = self._inverse.transform(x + self._origin[0], y + self._origin[1])
        return float(lat), float(lon)


def north_angle(frame: GeoFrame, lat: float, lon: float) -> float:
    """θ_north: the map angle (rad, from x, counter-clockwise) of true north at (lat, lon)."""
    probe = lat - NORTH_PROBE if lat > 0 else lat + NORTH_PROBE
    sign = 1.0 if lat > 0 else -1.0  # the probe lies south (north) of the point
    x0, y0 = frame.to_map(lat, lon)
    x1, y1 = frame.to_map(probe, lon)
    return math.atan2(sign * (y0 - y1), sign * (x0 - x1))


class MapState(NamedTuple):
    """The vehicle in the map frame: position (m), ENU velocity (m/s)."""

    x: float
    y: float
    z: float
    ve: float
    vn: float
    vu: float


def global_position(frame: GeoFrame, lat_e7: int, lon_e7: int,
                    relative_alt_mm: int, vx_cms: int, vy_cms: int, vz_cms: int) -> MapState:
    """GLOBAL_POSITION_INT → map position and ENU velocity (vx north, vy east, vz down)."""
    lat, lon = degrees(lat_e7, lon_e7)
    x, y = frame.to_map(lat, lon)
    return MapState(x, y, relative_alt_mm / 1000.0, vy_cms / 100.0, vx_cms / 100.0,
                    -vz_cms / 100.0)


def local_to_global(origin_lat_e7: int, origin_lon_e7: int, north: float,
                    east: float) -> tuple[float, float]:
    """(lat, lon) degrees of a point ``north``, ``east`` metres from the EKF origin, as
    ArduPilot's ``Location::offset`` places it (module docstring)."""
    finite("local position", north, east)
    dlat = north / LOCATION_SCALING
    scale = max(math.cos(math.radians((origin_lat_e7 + 0.5 * dlat) / DEGREES_E7)), 0.01)
    lon_e7 = math.remainder(origin_lon_e7 + east / LOCATION_SCALING / scale, 360 * DEGREES_E7)
    return degrees(origin_lat_e7 + dlat, lon_e7)


def global_to_local(origin_lat_e7: int, origin_lon_e7: int, lat: float,
                    lon: float) -> tuple[float, float]:
    """(north, east) metres of (lat, lon) degrees from the EKF origin, as ArduPilot's
    ``Location::get_distance_NE`` measures it: the inverse of :func:`local_to_global`."""
    lat_e7, lon_e7 = lat * DEGREES_E7, lon * DEGREES_E7
    scale = max(math.cos(math.radians(0.5 * (origin_lat_e7 + lat_e7) / DEGREES_E7)), 0.01)
    return ((lat_e7 - origin_lat_e7) * LOCATION_SCALING,
            math.remainder(lon_e7 - origin_lon_e7, 360 * DEGREES_E7) * LOCATION_SCALING * scale)


def local_position(frame: GeoFrame, origin_lat_e7: int, origin_lon_e7: int, north: float,
                   east: float, down: float, vn: float, ve: float, vd: float) -> MapState:
    """LOCAL_POSITION_NED (m, m/s; NED from the EKF origin) → map position and ENU velocity."""
    finite("local position", north, east, down, vn, ve, vd)
    x, y = frame.to_map(*local_to_global(origin_lat_e7, origin_lon_e7, north, east))
    return MapState(x, y, -down, ve, vn, -vd)


def map_velocity(theta_north: float, ve: float, vn: float) -> tuple[float, float]:
    """A (east, north) velocity rotated into map axes (vx, vy) by θ_north."""
    east = theta_north - 0.5 * math.pi
    return (ve * math.cos(east) + vn * math.cos(theta_north),
            ve * math.sin(east) + vn * math.sin(theta_north))


def north_east(theta_north: float, vx: float, vy: float) -> tuple[float, float]:
    """A map-axes velocity (vx, vy) as (north, east) components; inverse of
    :func:`map_velocity`."""
    east = theta_north - 0.5 * math.pi
    return (vx * math.cos(theta_north) + vy * math.sin(theta_north),
            vx * math.cos(east) + vy * math.sin(east))


def attitude_to_map(theta_north: float, roll: float, pitch: float,
                    yaw: float) -> tuple[float, float, float]:
    """ATTITUDE (FRD in NED, rad) → (roll, pitch, yaw) of FLU in the map frame."""
    finite("attitude", roll, pitch, yaw)
    return roll, -pitch, wrap(theta_north - yaw)


def attitude_from_map(theta_north: float, roll: float, pitch: float,
                      yaw: float) -> tuple[float, float, float]:
    """The map frame's (roll, pitch, yaw) as ATTITUDE's FRD-in-NED angles (inverse)."""
    return roll, -pitch, wrap(theta_north - yaw)


def rates_to_map(rollspeed: float, pitchspeed: float, yawspeed: float) -> tuple[float, ...]:
    """ATTITUDE body rates (FRD, rad/s) → FLU body rates (rad/s)."""
    finite("attitude rates", rollspeed, pitchspeed, yawspeed)
    return rollspeed, -pitchspeed, -yawspeed


def heading_to_map(theta_north: float, hdg_cdeg: int) -> float | None:
    """GLOBAL_POSITION_INT ``hdg`` → map yaw (rad); None when unknown (UINT16_MAX)."""
    if hdg_cdeg == UINT16_MAX:
        return None
    return wrap(theta_north - math.radians(hdg_cdeg / 100.0))


def target_global_int(frame: GeoFrame, x: float, y: float) -> tuple[int, int]:
    """(lat_int, lon_int) of map (x, y) for SET_POSITION_TARGET_GLOBAL_INT: degrees · 1e7,
    rounded (1e-7° is 1.1 cm of latitude)."""
    lat, lon = frame.to_latlon(x, y)
    return round(lat * DEGREES_E7), round(lon * DEGREES_E7)


def fix_status(fix_type: int) -> int:
    """GPS_FIX_TYPE → NavSatStatus status (module docstring); unknown types: no fix."""
    return _FIX_STATUS.get(int(fix_type), STATUS_NO_FIX)


def horizontal_variance(eph: int) -> float | None:
    """GPS_RAW_INT ``eph`` (HDOP · 100) → a horizontal variance (m²) taking the HDOP as
    metres (a user range error of 1 m: an approximation, as NavSatFix's
    COVARIANCE_TYPE_APPROXIMATED says); None when unknown (UINT16_MAX)."""
    return None if eph == UINT16_MAX else (eph / 100.0) ** 2


def depth_from_altitude(altitude: float) -> float:
    """Depth (m, positive down) of an ArduSub altitude (negative below the surface)."""
    finite("altitude", altitude)
    return -altitude


def pressure_from_hpa(press_abs_hpa: float) -> float:
    """An absolute pressure in Pa of SCALED_PRESSURE2's ``press_abs`` (hPa)."""
    finite("pressure", press_abs_hpa)
    return press_abs_hpa * HECTOPASCAL


def rangefinder(current_cm: int, min_cm: int, max_cm: int) -> float:
    """DISTANCE_SENSOR distance → range (m) with REP-117's out-of-range values: −inf below
    ``min_distance`` (too close), +inf at or beyond ``max_distance`` (no return)."""
    if current_cm < min_cm:
        return -math.inf
    if current_cm >= max_cm:
        return math.inf
    return current_cm / 100.0


def origin_offset(frame: GeoFrame, lat_e7: int, lon_e7: int) -> float:
    """Horizontal distance (m) from the map origin to the autopilot's EKF origin
    (GPS_GLOBAL_ORIGIN ``latitude``, ``longitude``)."""
    x, y = frame.to_map(*degrees(lat_e7, lon_e7))
    return float(np.hypot(x, y))
