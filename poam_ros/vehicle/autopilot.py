"""A simulated autopilot that speaks MAVLink over UDP: the simulator's vehicle model behind
the messages ArduSub or ArduPilot Rover would send and accept. Off unless built; driven by
explicit time (:meth:`SimulatedAutopilot.step`).

It is what the bridge meets in the tests and in ``--vehicle mavlink`` runs, so it follows
the documented behaviour the bridge relies on and nothing more:

* HEARTBEAT at 1 Hz, MAV_TYPE_SUBMARINE for a vehicle in ``depth`` or ``altitude`` vertical
  mode (ArduSub's mode numbers), MAV_TYPE_SURFACE_BOAT otherwise (Rover's), with the custom
  mode and the armed flag (ardupilot.org/dev/docs/mavlink-get-set-flightmode.html).
* At ``telemetry_rate``: GLOBAL_POSITION_INT (depth as negative altitude, as ArduSub), ATTITUDE,
  VFR_HUD (``alt`` = −depth), DISTANCE_SENSOR looking down (the true altitude above the
  terrain, within the sonar's range limits), GPS_RAW_INT only at the surface (no GNSS
  under water), LOCAL_POSITION_NED from the EKF origin (ArduPilot's flat-Earth convention,
  :func:`~poam_ros.vehicle.conversions.global_to_local`) and, as a submarine, SCALED_PRESSURE2
  (its external depth sensor: :data:`SURFACE_PRESSURE` plus ρ g depth, ρ =
  :data:`WATER_DENSITY`). On MAV_CMD_REQUEST_MESSAGE: GPS_GLOBAL_ORIGIN, and HOME_POSITION
  with home where the vehicle was at the first request (ArduPilot sets it on arming or at
  its first fix) and its local position from the origin.
* COMMAND_LONG MAV_CMD_COMPONENT_ARM_DISARM and MAV_CMD_DO_SET_MODE (param1
  MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, param2 the mode), and SET_MODE, each answered with
  COMMAND_ACK where the command protocol asks for one; every command is recorded, so tests
  can prove what the bridge never sent.
* SET_POSITION_TARGET_GLOBAL_INT only in GUIDED: position bits must be set (x and y
  together, as ArduPilot requires); with a position, velocity, acceleration and yaw are
  ignored (ardupilot.org/dev/docs/mavlink-rover-commands.html). A target not refreshed
  for ``guided_timeout`` (3 s, ArduSub's GUIDED_POSVEL_TIMEOUT_MS) is dropped and the vehicle
  holds where it is: the stricter of ArduPilot's behaviours, so a bridge that stops
  re-sending is caught. The vehicle flies the target with its own go-to-goal controller;
  its height follows its vertical mode (the commanded altitude is recorded, not flown).
"""

from __future__ import annotations

import math
from collections import Counter

from poam_ros.attitude import pressure_at_depth
from poam_ros.geo import GeoReference
from poam_ros.sim.simulator import CLOCK_TOLERANCE, SurveySimulator
from poam_ros.vehicle import conversions as cv
from poam_ros.vehicle.link import MavlinkLink, mavlink

SURFACE_DEPTH = 0.5  # m: GNSS works this close to the surface
SURFACE_PRESSURE = 101_325.0  # Pa, the standard atmosphere at the surface
WATER_DENSITY = 1025.0  # kg/m³, sea water
# (guided, manual, abort) custom modes: ArduSub GUIDED 4, MANUAL 19, SURFACE 9;
# Rover GUIDED 15, MANUAL 0, HOLD 4.
MODES = {mavlink.MAV_TYPE_SUBMARINE: {"GUIDED": 4, "MANUAL": 19, "SURFACE": 9,
                                      "ALT_HOLD": 2, "POSHOLD": 16},
         mavlink.MAV_TYPE_SURFACE_BOAT: {"GUIDED": 15, "MANUAL": 0, "HOLD": 4, "RTL": 11}}
POSITION_FRAMES = (mavlink.MAV_FRAME_GLOBAL, mavlink.MAV_FRAME_GLOBAL_INT,
                   mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT,
                   mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
                   mavlink.MAV_FRAME_GLOBAL_TERRAIN_ALT, mavlink.MAV_FRAME_GLOBAL_TERRAIN_ALT_INT)
XY_IGNORED = (mavlink.POSITION_TARGET_TYPEMASK_X_IGNORE
              | mavlink.POSITION_TARGET_TYPEMASK_Y_IGNORE)


class SimulatedAutopilot:
    """The simulated vehicle as a MAVLink endpoint (module docstring).

    Args:
        simulator: the vehicle model and terrain; the autopilot steps it.
        georeference: where the map lies on the Earth.
        connection: a pymavlink connection string, e.g. ``udpout:127.0.0.1:14550``.
        origin_offset: where its EKF origin lies in the map (m); (0, 0) is the map origin.
    """

    def __init__(self, simulator: SurveySimulator, georeference: GeoReference,
                 connection: str, *, system_id: int = 1, component_id: int = 1,
                 telemetry_rate: float = 10.0, guided_timeout: float = 3.0,
                 origin_offset=(0.0, 0.0)) -> None:
        self.simulator = simulator
        self.frame = cv.GeoFrame(georeference)
        self.link = MavlinkLink(connection, system_id, component_id)
        self.system_id = system_id
        self.vehicle_type = (mavlink.MAV_TYPE_SUBMARINE
                             if simulator.vehicle.config.vertical_mode in ("depth", "altitude")
                             else mavlink.MAV_TYPE_SURFACE_BOAT)
        self.modes = MODES[self.vehicle_type]
        self.custom_mode = self.modes["MANUAL"]
        self.armed = False
        self.telemetry_period = 1.0 / telemetry_rate
        self.guided_timeout = guided_timeout
        self.origin_offset = tuple(float(v) for v in origin_offset)
        self.silent = False  # True: sends nothing (a cut link)
        self.home: tuple[float, float, float] | None = None  # map x, y, z, at the first request
        self.target: tuple[float, float, float] | None = None  # x, y, commanded alt
        self.received: Counter[str] = Counter()  # messages heard, by type
        self.ignored: Counter[str] = Counter()  # targets not taken, by reason
        self.commands: list[tuple[int, tuple]] = []  # (MAV_CMD or SET_MODE 11, params)
        self.targets: list[tuple[float, float, float, float]] = []  # (now, x, y, alt)
        self.peer_time = -math.inf  # s: the newest time_boot_ms of the targets, the sender's
        self._target_time = -math.inf
        self._boot: float | None = None
        self._start: float | None = None
        self._rates = (0.0, 0.0, 0.0)  # vx, vy (map, m/s), yaw rate (rad/s) of the last step
        self._last_heartbeat = self._last_telemetry = -math.inf
        self._last_heartbeat_wall = -math.inf

    # -- the operator's side: RC or a ground station, not the bridge ------------------------
    def operator_arm(self, armed: bool = True) -> None:
        self.armed = armed

    def operator_mode(self, name: str) -> None:
        self.custom_mode = self.modes[name]

    def reboot(self, now: float) -> None:
        """Restart: the boot clock from zero, disarmed, MANUAL, no target."""
        self._boot = now
        self.armed, self.custom_mode, self.target = False, self.modes["MANUAL"], None

    # -- the loop ---------------------------------------------------------------------------
    def step(self, now: float) -> None:
        """Take the bridge's messages, fly the model up to ``now``, send what is due: the
        autopilot alone, on one clock (:class:`~poam_ros.vehicle.sim_vehicle.MavlinkVehicle`
        steps it beside the simulated AUV instead)."""
        self.receive(now)
        self._fly(now)
        self.send_heartbeat(now)
        if now - self._last_telemetry >= self.telemetry_period - 1e-9:
            self.send_state(now)

    def receive(self, now: float) -> None:
        """Take the bridge's messages at ``now``, then drop a target older than
        ``guided_timeout``."""
        if self._boot is None:
            self._boot = self._start = now
        for message in self.link.receive():
            self._handle(message, now)
        self.expire(now)

    def expire(self, now: float) -> None:
        """Drop the target when it was not refreshed within ``guided_timeout`` of ``now``."""
        if now - self._target_time > self.guided_timeout:
            self.target = None

    @property
    def goal(self) -> tuple[float, float] | None:
        """Where the vehicle flies: the live target's (x, y) in the map while armed in
        GUIDED, else None (it holds)."""
        guided = self.armed and self.custom_mode == self.modes["GUIDED"]
        return self.target[:2] if guided and self.target is not None else None

    def moved(self, before) -> None:
        """Take the rates the telemetry reports from the control step that began at the pose
        ``before`` (x, y, yaw) and ended at the simulator's."""
        simulator, dt = self.simulator, self.simulator.vehicle.dt
        (x0, y0, yaw0), (x1, y1, yaw1) = before, simulator.pose
        self._rates = ((x1 - x0) / dt, (y1 - y0) / dt, cv.wrap(yaw1 - yaw0) / dt)

    def send_heartbeat(self, now: float, wall: float | None = None) -> None:
        """HEARTBEAT when one is due at 1 Hz of ``now`` or, given, of the wall clock ``wall``
        (so that it goes on while a simulation clock stands still)."""
        if self.silent:
            return
        if now - self._last_heartbeat >= 1.0 or (
                wall is not None and wall - self._last_heartbeat_wall >= 1.0):
            self._last_heartbeat = now
            self._last_heartbeat_wall = -math.inf if wall is None else wall
            self._send_heartbeat()

    def send_state(self, now: float) -> None:
        """The state messages (position, attitude, depth, range, GNSS at the surface) for the
        simulator's state at ``now``."""
        if self.silent:
            return
        self._last_telemetry = now
        self._send_telemetry(now)

    def boot_ms(self, now: float) -> int:
        return int(round((now - self._boot) * 1000.0))

    def _fly(self, now: float) -> None:
        simulator, dt = self.simulator, self.simulator.vehicle.dt
        while simulator.time + dt <= now - self._start + CLOCK_TOLERANCE:
            before = simulator.pose
            simulator.step(self.goal)
            self.moved(before)

    # -- receiving ----------------------------------------------------------------------------
    def _handle(self, message, now: float) -> None:
        kind = message.get_type()
        self.received[kind] += 1
        if kind == "COMMAND_LONG" and message.target_system in (0, self.system_id):
            self._command(message)
        elif kind == "SET_MODE" and message.target_system == self.system_id:
            self.commands.append((mavlink.MAVLINK_MSG_ID_SET_MODE,
                                  (message.base_mode, message.custom_mode)))
            if message.custom_mode in self.modes.values():
                self.custom_mode = message.custom_mode
        elif kind == "SET_POSITION_TARGET_GLOBAL_INT":
            self.peer_time = max(self.peer_time, message.time_boot_ms / 1000.0)
            self._position_target(message, now)

    def _command(self, message) -> None:
        params = (message.param1, message.param2, message.param3, message.param4,
                  message.param5, message.param6, message.param7)
        self.commands.append((message.command, params))
        result = mavlink.MAV_RESULT_UNSUPPORTED
        if message.command == mavlink.MAV_CMD_COMPONENT_ARM_DISARM:
            self.armed, result = params[0] == 1.0, mavlink.MAV_RESULT_ACCEPTED
        elif message.command == mavlink.MAV_CMD_DO_SET_MODE:
            mode = int(params[1])
            result = mavlink.MAV_RESULT_DENIED
            if int(params[0]) & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED and \
                    mode in self.modes.values():
                self.custom_mode, result = mode, mavlink.MAV_RESULT_ACCEPTED
        elif message.command == mavlink.MAV_CMD_REQUEST_MESSAGE and \
                int(params[0]) == mavlink.MAVLINK_MSG_ID_GPS_GLOBAL_ORIGIN:
            self._send_origin()
            result = mavlink.MAV_RESULT_ACCEPTED
        elif message.command == mavlink.MAV_CMD_REQUEST_MESSAGE and \
                int(params[0]) == mavlink.MAVLINK_MSG_ID_HOME_POSITION:
            self._send_home()
            result = mavlink.MAV_RESULT_ACCEPTED
        if not self.silent:
            self.link.send(self.link.mav.command_ack_encode(message.command, result))

    def _position_target(self, message, now: float) -> None:
        if not (self.armed and self.custom_mode == self.modes["GUIDED"]):
            self.ignored["not_guided"] += 1
        elif message.type_mask & XY_IGNORED:
            self.ignored["no_position"] += 1
        elif message.coordinate_frame not in POSITION_FRAMES:
            self.ignored["frame"] += 1
        else:
            lat, lon = cv.degrees(message.lat_int, message.lon_int)
            x, y = self.frame.to_map(lat, lon)
            if not self.simulator.terrain.contains([[x, y]])[0]:
                self.ignored["off_terrain"] += 1
                return
            self.target, self._target_time = (x, y, float(message.alt)), now
            self.targets.append((now, x, y, float(message.alt)))

    # -- sending ------------------------------------------------------------------------------
    def _send_heartbeat(self) -> None:
        base = mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | (
            mavlink.MAV_MODE_FLAG_SAFETY_ARMED if self.armed else 0)
        self.link.send(self.link.mav.heartbeat_encode(
            self.vehicle_type, mavlink.MAV_AUTOPILOT_ARDUPILOTMEGA, base, self.custom_mode,
            mavlink.MAV_STATE_ACTIVE if self.armed else mavlink.MAV_STATE_STANDBY))

    def _send_telemetry(self, now: float) -> None:
        simulator, mav, boot = self.simulator, self.link.mav, self.boot_ms(now)
        x, y, yaw = simulator.pose
        z = simulator.z
        lat, lon = self.frame.to_latlon(x, y)
        theta = cv.north_angle(self.frame, lat, lon)
        vx, vy, yaw_rate = self._rates
        north, east = cv.north_east(theta, vx, vy)
        roll, pitch, yaw_ned = cv.attitude_from_map(theta, *simulator.vehicle.roll_pitch(
            simulator.time)[:2], yaw)
        lat_e7, lon_e7 = round(lat * cv.DEGREES_E7), round(lon * cv.DEGREES_E7)
        heading = round(math.degrees(yaw_ned) * 100.0) % 36000
        self.link.send(mav.global_position_int_encode(
            boot, lat_e7, lon_e7, round(z * 1000), round(z * 1000), round(north * 100),
            round(east * 100), 0, heading))
        self.link.send(mav.attitude_encode(boot, roll, pitch, yaw_ned, 0.0, 0.0, -yaw_rate))
        self.link.send(mav.vfr_hud_encode(0.0, math.hypot(vx, vy), heading // 100, 0, z, 0.0))
        sonar = simulator.sonar.config  # limits in cm, within uint16
        low, high = (min(round(v * 100.0), cv.UINT16_MAX - 1)
                     for v in (sonar.min_range, sonar.max_range))
        altitude = z - float(simulator.terrain.elevation([[x, y]])[0]) \
            if simulator.terrain.contains([[x, y]])[0] else math.inf
        distance = min(max(altitude * 100.0, 0.0), float(high))
        self.link.send(mav.distance_sensor_encode(
            boot, low, high, round(distance), mavlink.MAV_DISTANCE_SENSOR_ULTRASOUND, 0,
            cv.DOWNWARD, 255))
        if z >= -SURFACE_DEPTH:
            self.link.send(mav.gps_raw_int_encode(
                boot * 1000, mavlink.GPS_FIX_TYPE_3D_FIX, lat_e7, lon_e7, round(z * 1000),
                100, 150, round(math.hypot(vx, vy) * 100), heading, 12))
        self._send_local_position(boot, lat, lon, z, north, east)
        self._send_pressure(boot, z)

    def _send_origin(self) -> None:
        self.link.send(self.link.mav.gps_global_origin_encode(*self._origin_e7(), 0, 0))

    def _origin_e7(self) -> tuple[int, int]:
        """The EKF origin as GPS_GLOBAL_ORIGIN sends it (degrees · 1e7)."""
        lat, lon = self.frame.to_latlon(*self.origin_offset)
        return round(lat * cv.DEGREES_E7), round(lon * cv.DEGREES_E7)

    def _send_local_position(self, boot: int, lat: float, lon: float, z: float, north: float,
                             east: float) -> None:
        """LOCAL_POSITION_NED: the vehicle from the EKF origin (m, NED), its velocity (m/s)."""
        x, y = cv.global_to_local(*self._origin_e7(), lat, lon)
        self.link.send(self.link.mav.local_position_ned_encode(boot, x, y, -z, north, east,
                                                               0.0))

    def _send_pressure(self, boot: int, z: float) -> None:
        """SCALED_PRESSURE2 of a submarine's depth sensor (hPa; 20 °C)."""
        if self.vehicle_type != mavlink.MAV_TYPE_SUBMARINE:
            return
        pressure = pressure_at_depth(max(-z, 0.0), WATER_DENSITY, SURFACE_PRESSURE)
        self.link.send(self.link.mav.scaled_pressure2_encode(boot, pressure / cv.HECTOPASCAL, 0.0,
                                                             2000))

    def _send_home(self) -> None:
        """HOME_POSITION: where the vehicle was at the first request, globally and from the
        EKF origin (x north, y east, z down, m)."""
        if self.home is None:
            self.home = (*self.simulator.pose[:2], self.simulator.z)
        x, y, z = self.home
        lat, lon = self.frame.to_latlon(x, y)
        north, east = cv.global_to_local(*self._origin_e7(), lat, lon)
        self.link.send(self.link.mav.home_position_encode(
            round(lat * cv.DEGREES_E7), round(lon * cv.DEGREES_E7), round(z * 1000.0), north,
            east, -z, [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0))
