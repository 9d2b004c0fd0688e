"""What the autopilot reports, decoded into map-frame records; anything bad dropped and
counted by reason.

Accepted, from the autopilot (``target_system``/``target_component``) only:

* HEARTBEAT → :class:`AutopilotStatus` (vehicle type, autopilot, mode, armed); it keeps the
  link alive (the MAVLink heartbeat protocol, mavlink.io/en/services/heartbeat.html);
* GLOBAL_POSITION_INT with the latest ATTITUDE → :class:`Odometry` (an ATTITUDE older than
  ``attitude_timeout`` is not used: the pose then carries the heading ``hdg``);
* LOCAL_POSITION_NED → :class:`Odometry` through the EKF origin, only while no
  GLOBAL_POSITION_INT came within ``position_timeout`` (an autopilot without a global
  position, e.g. one never given an origin it reports; one odometry stream, not two);
  without a known origin it is dropped (``no_origin``);
* GPS_RAW_INT → :class:`Fix`; DISTANCE_SENSOR looking down → :class:`Range`;
* depth → :class:`Depth`: SCALED_PRESSURE2 (ArduSub's external depth sensor), through
  ``surface_pressure`` and ``water_density``, when one came within ``position_timeout``;
  VFR_HUD ``alt`` otherwise (ArduSub: depth = −alt, its estimate). The sensor wins because
  it is the measurement the estimate is made from, at its own rate; GLOBAL_POSITION_INT's
  ``relative_alt`` stays the odometry's z;
* GPS_GLOBAL_ORIGIN → :class:`Origin`; HOME_POSITION → the origin it implies (home's
  latitude and longitude moved back by its local ``x``, ``y``) while no GPS_GLOBAL_ORIGIN
  came (an autopilot that answers only the home request). :attr:`Telemetry.origin` is the
  one known; :meth:`Telemetry.forget_origin` drops it (a reboot).

Stamps: ``time_boot_ms`` through :class:`~poam_ros.vehicle.clock.AutopilotClock`; messages
without a boot time (GPS_RAW_INT's ``time_usec`` is GPS time on ArduPilot, VFR_HUD has
none) take the newest boot-time stamp.

Drop reasons (:attr:`Telemetry.dropped`): ``other_system`` (another system id: a second
autopilot, a ground station), ``other_component``, ``not_finite`` (NaN, ±inf),
``out_of_range`` (latitude beyond ±90°, a depth beyond ``max_depth_report``),
``reboot`` (boot time going back), ``no_clock`` (no boot time seen yet),
``not_downward`` (a rangefinder looking elsewhere), ``no_origin`` (a local position before
the origin). A source set aside while another wins is still checked, so bad data is counted
whether or not it would be used. Garbage bytes and bad CRCs never become messages
(:class:`~poam_ros.vehicle.link.MavlinkLink` counts them).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import NamedTuple

from poam_ros.attitude import depth_from_pressure
from poam_ros.geo import GeoReference
from poam_ros.vehicle import conversions as cv
from poam_ros.vehicle.clock import AutopilotClock

MAV_MODE_FLAG_SAFETY_ARMED = 128
MAX_DEPTH_REPORT = 11_000.0  # m, deeper than any ocean: a larger depth is corrupt


class AutopilotStatus(NamedTuple):
    """The autopilot's last HEARTBEAT: MAV_TYPE, MAV_AUTOPILOT, custom mode, armed; ``t`` is
    the stack time it arrived."""

    t: float
    vehicle_type: int
    autopilot: int
    custom_mode: int
    armed: bool


class Odometry(NamedTuple):
    """Pose (m, rad) and velocity (m/s map axes; rad/s body FLU) at stack time ``t``."""

    t: float
    x: float
    y: float
    z: float
    roll: float
    pitch: float
    yaw: float
    vx: float
    vy: float
    vz: float
    roll_rate: float
    pitch_rate: float
    yaw_rate: float


class Fix(NamedTuple):
    """A GNSS fix: WGS 84 degrees, altitude (m above mean sea level), NavSatStatus status,
    horizontal variance (m², None when unknown), satellites."""

    t: float
    latitude: float
    longitude: float
    altitude: float
    status: int
    variance: float | None
    satellites: int


class Depth(NamedTuple):
    """Depth below the surface (m, positive down)."""

    t: float
    depth: float


class Range(NamedTuple):
    """Downward range to the seabed (m; −inf too close, +inf no return) and its limits."""

    t: float
    range: float
    min_range: float
    max_range: float


class Origin(NamedTuple):
    """The autopilot's EKF origin (degrees · 1e7, mm), its distance from the map origin (m)
    and the message it came from (GPS_GLOBAL_ORIGIN or HOME_POSITION)."""

    t: float
    latitude_e7: int
    longitude_e7: int
    altitude_mm: int
    offset: float
    source: str = "GPS_GLOBAL_ORIGIN"


Record = AutopilotStatus | Odometry | Fix | Depth | Range | Origin


class Telemetry:
    """Decodes one autopilot's messages (module docstring)."""

    def __init__(self, georeference: GeoReference, target_system: int, target_component: int,
                 clock: AutopilotClock, attitude_timeout: float = 1.0,
                 position_timeout: float = 1.0, surface_pressure: float = 101_325.0,
                 water_density: float = 1025.0) -> None:
        self.frame = cv.GeoFrame(georeference)
        self.target_system = target_system
        self.target_component = target_component
        self.clock = clock
        self.attitude_timeout = attitude_timeout
        self.position_timeout = position_timeout  # s: how long a preferred stream holds
        self.surface_pressure = surface_pressure  # Pa
        self.water_density = water_density  # kg/m³
        self.dropped: Counter[str] = Counter()
        self.accepted: Counter[str] = Counter()
        self.origin: Origin | None = None
        self._attitude = None  # (stamp, roll, pitch, yaw, rates) in the map frame
        self._last_lat_lon: tuple[float, float] | None = None  # where θ_north is taken
        # stamps of the newest GLOBAL_POSITION_INT and SCALED_PRESSURE2 (they take precedence)
        self._newest = {"GLOBAL_POSITION_INT": -math.inf, "SCALED_PRESSURE2": -math.inf}
        self._handlers = {"HEARTBEAT": self._heartbeat,
                          "GLOBAL_POSITION_INT": self._global_position,
                          "LOCAL_POSITION_NED": self._local_position,
                          "ATTITUDE": self._attitude_message, "GPS_RAW_INT": self._gps,
                          "VFR_HUD": self._vfr_depth, "SCALED_PRESSURE2": self._pressure_depth,
                          "DISTANCE_SENSOR": self._range, "GPS_GLOBAL_ORIGIN": self._origin,
                          "HOME_POSITION": self._home}

    def accept(self, message, received: float) -> Record | None:
        """The record ``message`` (received at stack time ``received``) gives, or None (a
        message the bridge does not use, or one dropped and counted)."""
        kind = message.get_type()
        handler = self._handlers.get(kind)
        if handler is None:
            return None
        if message.get_srcSystem() != self.target_system:
            return self._drop("other_system")
        if self.target_component and message.get_srcComponent() != self.target_component:
            return self._drop("other_component")
        boot = getattr(message, "time_boot_ms", None)
        if boot is not None and not self.clock.observe(boot / 1000.0, received):
            return self._drop("reboot")
        stamp = self.clock.stamp(boot / 1000.0) if boot is not None else self.clock.latest
        if stamp is None and kind != "HEARTBEAT":
            return self._drop("no_clock")
        try:
            record = handler(message, received if kind == "HEARTBEAT" else stamp)
        except cv.ConversionError as exc:
            return self._drop("not_finite" if "finite" in str(exc) else "out_of_range")
        if record is not None:
            self.accepted[kind] += 1
            if kind in self._newest:
                self._newest[kind] = stamp
            if isinstance(record, Origin):
                self.origin = record
        return record

    def forget_origin(self) -> None:
        """Drop the origin (the autopilot rebooted: ask again)."""
        self.origin = None

    def _fresh(self, kind: str, t: float) -> bool:
        """Whether a ``kind`` message came within ``position_timeout`` of ``t``."""
        return abs(t - self._newest[kind]) <= self.position_timeout

    def _drop(self, reason: str) -> None:
        self.dropped[reason] += 1
        return None

    @staticmethod
    def _heartbeat(message, t: float) -> AutopilotStatus:
        return AutopilotStatus(t, int(message.type), int(message.autopilot),
                               int(message.custom_mode),
                               bool(message.base_mode & MAV_MODE_FLAG_SAFETY_ARMED))

    def _attitude_message(self, message, t: float) -> None:
        lat_lon = self._last_lat_lon
        theta = cv.north_angle(self.frame, *lat_lon) if lat_lon else 0.5 * math.pi
        angles = cv.attitude_to_map(theta, message.roll, message.pitch, message.yaw)
        rates = cv.rates_to_map(message.rollspeed, message.pitchspeed, message.yawspeed)
        self._attitude = (t, *angles, rates)
        return None

    def _global_position(self, message, t: float) -> Odometry:
        lat, lon = cv.degrees(message.lat, message.lon)
        state = cv.global_position(self.frame, message.lat, message.lon,
                                   message.relative_alt, message.vx, message.vy, message.vz)
        return self._odometry(t, lat, lon, state, message.hdg)

    def _local_position(self, message, t: float) -> Odometry | None:
        cv.finite("local position", message.x, message.y, message.z, message.vx, message.vy,
                  message.vz)  # bad data is counted whether or not it is used
        if self._fresh("GLOBAL_POSITION_INT", t):
            return None  # the global position is the odometry
        origin = self.origin
        if origin is None:
            return self._drop("no_origin")
        state = cv.local_position(self.frame, origin.latitude_e7, origin.longitude_e7,
                                  message.x, message.y, message.z, message.vx, message.vy,
                                  message.vz)
        lat, lon = cv.local_to_global(origin.latitude_e7, origin.longitude_e7, message.x,
                                      message.y)
        return self._odometry(t, lat, lon, state, cv.UINT16_MAX)

    def _odometry(self, t: float, lat: float, lon: float, state: cv.MapState,
                  hdg: int) -> Odometry:
        """The pose at (lat, lon) with the latest ATTITUDE, else the heading ``hdg``."""
        self._last_lat_lon = (lat, lon)
        theta = cv.north_angle(self.frame, lat, lon)
        vx, vy = cv.map_velocity(theta, state.ve, state.vn)
        attitude = self._attitude
        if attitude is not None and abs(t - attitude[0]) <= self.attitude_timeout:
            _, roll, pitch, yaw, rates = attitude
        else:
            yaw = cv.heading_to_map(theta, hdg)
            if yaw is None:
                raise cv.ConversionError("heading not finite (unknown, no ATTITUDE)")
            roll, pitch, rates = 0.0, 0.0, (0.0, 0.0, 0.0)
        return Odometry(t, state.x, state.y, state.z, roll, pitch, yaw, vx, vy, state.vu,
                        *rates)

    @staticmethod
    def _gps(message, t: float) -> Fix:
        lat, lon = cv.degrees(message.lat, message.lon)
        return Fix(t, lat, lon, message.alt / 1000.0, cv.fix_status(message.fix_type),
                   cv.horizontal_variance(message.eph), int(message.satellites_visible))

    def _vfr_depth(self, message, t: float) -> Depth | None:
        depth = _depth(t, cv.depth_from_altitude(message.alt))  # bad data counted, used or not
        return None if self._fresh("SCALED_PRESSURE2", t) else depth  # the sensor comes first

    def _pressure_depth(self, message, t: float) -> Depth:
        return _depth(t, depth_from_pressure(cv.pressure_from_hpa(message.press_abs),
                                             self.water_density, self.surface_pressure))

    def _range(self, message, t: float) -> Range | None:
        if message.orientation != cv.DOWNWARD:
            return self._drop("not_downward")
        return Range(t, cv.rangefinder(message.current_distance, message.min_distance,
                                       message.max_distance),
                     message.min_distance / 100.0, message.max_distance / 100.0)

    def _origin(self, message, t: float) -> Origin:
        offset = cv.origin_offset(self.frame, message.latitude, message.longitude)
        return Origin(t, int(message.latitude), int(message.longitude), int(message.altitude),
                      offset)

    def _home(self, message, t: float) -> Origin | None:
        """The EKF origin HOME_POSITION implies: home moved back by its local x (north) and
        y (east), in ArduPilot's convention (:func:`~.conversions.local_to_global`)."""
        cv.degrees(message.latitude, message.longitude)  # home itself in range
        cv.finite("home's local position", message.x, message.y, message.z)
        if self.origin is not None and self.origin.source != "HOME_POSITION":
            return None  # GPS_GLOBAL_ORIGIN says it directly
        lat, lon = cv.local_to_global(message.latitude, message.longitude, -message.x,
                                      -message.y)
        lat_e7, lon_e7 = round(lat * cv.DEGREES_E7), round(lon * cv.DEGREES_E7)
        return Origin(t, lat_e7, lon_e7, int(message.altitude + round(message.z * 1000.0)),
                      cv.origin_offset(self.frame, lat_e7, lon_e7), "HOME_POSITION")


def _depth(t: float, depth: float) -> Depth:
    if abs(depth) > MAX_DEPTH_REPORT:
        raise cv.ConversionError(f"depth {depth!r} m out of range")
    return Depth(t, depth)
