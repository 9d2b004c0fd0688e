"""The vehicle bridge: the plan in, guided position targets out, the vehicle's state back;
ROS-free and driven by explicit time (:meth:`VehicleBridge.tick`).

Each step follows documented MAVLink and ArduPilot behaviour:

* **Heartbeat** (mavlink.io/en/services/heartbeat.html): the bridge sends HEARTBEAT at 1 Hz
  as an onboard controller and tracks the autopilot's (type, autopilot, mode, armed). No
  autopilot heartbeat for ``link_timeout`` (the protocol counts a peer gone after a few
  missed 1 Hz beats): the link is lost, the bridge stops commanding and says so in
  :attr:`VehicleBridge.reason`; when heartbeats return it waits for an explicit
  :meth:`~VehicleBridge.start`, never resuming by itself.
* **EKF origin**: with ``require_origin`` the bridge asks for GPS_GLOBAL_ORIGIN and
  HOME_POSITION (which implies the origin, :mod:`~poam_ros.vehicle.telemetry`) with
  MAV_CMD_REQUEST_MESSAGE (mavlink.io/en/messages/common.html#MAV_CMD_REQUEST_MESSAGE) until
  it has one, and refuses to command while it lies farther than ``origin_tolerance`` from
  the map origin (a wrong survey file or a wrong vehicle).
* **Guided targets** (ardupilot.org/dev/docs/mavlink-rover-commands.html; ArduSub's guided
  mode takes the same message): each plan pose becomes SET_POSITION_TARGET_GLOBAL_INT with
  lat/lon from the map's anchor and a type mask that uses position only (x, y, and z unless
  ``vertical`` is ``surface``; velocity, acceleration, yaw and yaw rate ignored, which
  ArduPilot also does whenever a position is given). z goes in the frame
  MAV_FRAME_GLOBAL_RELATIVE_ALT (depth: negative altitude relative to home at the surface)
  or MAV_FRAME_GLOBAL_TERRAIN_ALT (altitude above the seabed). The target is re-sent every
  ``command_period``: ArduSub's guided position-velocity controller stops after 3 s without
  an update (ArduSub/mode_guided.cpp, GUIDED_POSVEL_TIMEOUT_MS). The next pose is commanded
  once the vehicle is within ``goal_radius`` of the current one.
* **Modes** (ardupilot.org/dev/docs/mavlink-get-set-flightmode.html): the mode is read from
  HEARTBEAT ``custom_mode``; targets are sent only in GUIDED and while armed. Only with
  ``allow_mode_change`` does the bridge send MAV_CMD_DO_SET_MODE (param1
  MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, param2 the mode number: ArduSub GUIDED 4, SURFACE 9;
  Rover GUIDED 15, HOLD 4). It never sends MAV_CMD_COMPONENT_ARM_DISARM
  (ardupilot.org/dev/docs/mavlink-arming-and-disarming.html): arming is the operator's.
* **Safety**: every plan passes :class:`~poam_ros.vehicle.safety.SafetyGate`; a plan with
  one refused pose, or stamped more than ``plan_timeout`` ago, is refused whole, counted,
  and nothing of it is sent (the plan being flown, already checked, goes on).
  :meth:`~VehicleBridge.abort` holds the vehicle where it is (a position target at its
  current position, re-sent every period; with ``allow_mode_change``, the vehicle's own
  SURFACE or HOLD mode) at once, and the bridge then waits for :meth:`~VehicleBridge.start`.
  A hold at the current position (its height relative to home, whatever ``vertical``) is
  not gated: it moves the vehicle nowhere.
* **Reboot**: the autopilot's boot time going back (:mod:`~poam_ros.vehicle.clock`) drops the
  guided state and the origin; the bridge waits for an explicit start.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from poam_ros.diagnostics import BridgeStatus
from poam_ros.geo import GeoReference
from poam_ros.vehicle import conversions as cv
from poam_ros.vehicle.clock import AutopilotClock
from poam_ros.vehicle.config import VehicleBridgeConfig
from poam_ros.vehicle.link import MavlinkLink, mavlink
from poam_ros.vehicle.safety import SafetyGate, Seabed
from poam_ros.vehicle.telemetry import AutopilotStatus, Odometry, Origin, Record, Telemetry
from poam_ros.workspace import Workspace

IDLE, ACTIVE, HOLDING, LINK_LOST = "idle", "active", "holding", "link_lost"
HEARTBEAT_PERIOD = 1.0  # s, the heartbeat protocol's rate
ORIGIN_REQUEST_PERIOD = 1.0  # s
GPS_GLOBAL_ORIGIN_ID, HOME_POSITION_ID = 49, 242
# Custom mode numbers by MAV_TYPE: ArduSub (submarine) and Rover (boat, ground rover).
GUIDED_MODE = {mavlink.MAV_TYPE_SUBMARINE: 4, mavlink.MAV_TYPE_SURFACE_BOAT: 15,
               mavlink.MAV_TYPE_GROUND_ROVER: 15}
ABORT_MODE = {mavlink.MAV_TYPE_SUBMARINE: 9, mavlink.MAV_TYPE_SURFACE_BOAT: 4,
              mavlink.MAV_TYPE_GROUND_ROVER: 4}
# POSITION_TARGET_TYPEMASK: ignore velocity, acceleration, yaw and yaw rate (bits 3-8, 10, 11)
POSITION_ONLY = 0x0DF8
IGNORE_Z = mavlink.POSITION_TARGET_TYPEMASK_Z_IGNORE
FRAMES = {"depth": mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT,
          "altitude": mavlink.MAV_FRAME_GLOBAL_TERRAIN_ALT,
          "surface": mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT}


class VehicleBridge:
    """The bridge's state and rules (module docstring).

    Args:
        config: link, rates and limits.
        georeference: the map frame's anchor on the Earth.
        workspace: the free area targets must lie in.
        seabed: optional seabed elevation at (N, 2) map points, for ``min_altitude``.
        link: an open :class:`~poam_ros.vehicle.link.MavlinkLink`; default: one opened on
            ``config.connection``.
    """

    def __init__(self, config: VehicleBridgeConfig, georeference: GeoReference,
                 workspace: Workspace, seabed: Seabed | None = None,
                 link: MavlinkLink | None = None) -> None:
        self.config = config
        self.georeference = georeference
        self.link = link or MavlinkLink(config.connection, config.system_id,
                                        config.component_id, config.baud)
        self.clock = AutopilotClock(config.clock_window, config.reboot_tolerance)
        self.telemetry = Telemetry(georeference, config.target_system,
                                   config.target_component, self.clock,
                                   surface_pressure=config.surface_pressure,
                                   water_density=config.water_density)
        self.gate = SafetyGate(config, workspace, seabed)
        self.state = IDLE
        self.reason = "no autopilot heartbeat yet"
        self.autopilot: AutopilotStatus | None = None
        self.odometry: Odometry | None = None
        self.events: Counter[str] = Counter()  # link losses, reboots, plans, aborts
        self.plan: np.ndarray | None = None  # (K, 3) map poses being flown
        self.plan_stamp = 0.0
        self.goal_index = 0
        self.target: tuple[float, float, float] | None = None  # last one sent, map frame
        self._hold: tuple[float, float, float] | None = None
        self._epoch: float | None = None  # stack time of the bridge's own "boot"
        self._reboots = 0
        self._last = {"heartbeat": -math.inf, "command": -math.inf, "origin": -math.inf}

    # -- inputs -------------------------------------------------------------------------------
    def tick(self, now: float) -> list[Record]:
        """Read what the autopilot sent, keep the link, command; returns the new records."""
        if self._epoch is None:
            self._epoch = now
        records = []
        for message in self.link.receive():
            record = self.telemetry.accept(message, now)
            if record is not None:
                self._note(record)
                records.append(record)
        if self.clock.reboots != self._reboots:
            self._reboots = self.clock.reboots
            self._on_reboot()
        if now - self._last["heartbeat"] >= HEARTBEAT_PERIOD:
            self._last["heartbeat"] = now
            self.link.send(self.link.mav.heartbeat_encode(
                mavlink.MAV_TYPE_ONBOARD_CONTROLLER, mavlink.MAV_AUTOPILOT_INVALID, 0, 0,
                mavlink.MAV_STATE_ACTIVE))
        self._check_link(now)
        self._request_origin(now)
        self._command(now)
        return records

    def set_plan(self, poses, stamp: float, now: float) -> str | None:
        """Fly ``poses`` ((K, 3) x, y, z in the map; (K, 2) with ``vertical: surface``),
        stamped ``stamp``; K = 0 clears the plan. Returns why it was refused, or None."""
        poses = np.asarray(poses, dtype=float)
        if poses.ndim == 2 and poses.shape[1] == 2 and self.config.vertical == "surface":
            poses = np.column_stack((poses, np.zeros(len(poses))))
        if poses.size == 0:
            self.plan = None
            return None
        if poses.ndim != 2 or poses.shape[1] != 3:
            return self._refuse("bad_shape")
        if now - stamp > self.config.plan_timeout:
            return self._refuse("stale_plan")
        reason = self.gate.check(poses)
        if reason is not None:
            self.events["refused_plans"] += 1
            return reason
        self.plan, self.plan_stamp, self.goal_index = poses, stamp, 0
        self.events["plans_accepted"] += 1
        self._last["command"] = -math.inf  # the new first pose goes out at the next tick
        return None

    def start(self, now: float) -> str | None:
        """Begin (or resume) commanding; returns why not, or None."""
        if not self.link_up(now):
            return "no link to the autopilot"
        if self.config.require_origin and not self.origin_ok:
            return self._origin_problem()
        if self.plan is not None and now - self.plan_stamp > self.config.plan_timeout:
            self.plan = None
            self._refuse("stale_plan")
        self.state, self.reason, self._hold = ACTIVE, "started", None
        self._last["command"] = -math.inf
        return None

    def abort(self, now: float, why: str = "aborted") -> None:
        """Hold the vehicle where it is, at once; commanding resumes only on :meth:`start`.
        Without commanding (idle, link lost) there is nothing to stop: only counted.
        ``why`` heads the reason (``aborted: holding``)."""
        self.events["aborts"] += 1
        if self.state not in (ACTIVE, HOLDING):
            return
        self.state, self.reason = HOLDING, f"{why}: holding"
        odometry = self.odometry
        self._hold = None if odometry is None else (odometry.x, odometry.y, odometry.z)
        self._last["command"] = -math.inf
        self._command(now)

    # -- state --------------------------------------------------------------------------------
    def link_up(self, now: float) -> bool:
        """Whether an autopilot heartbeat came within ``link_timeout``."""
        return self.autopilot is not None and now - self.autopilot.t <= self.config.link_timeout

    @property
    def origin(self) -> Origin | None:
        """The autopilot's EKF origin as the telemetry knows it (None: not yet)."""
        return self.telemetry.origin

    @property
    def origin_ok(self) -> bool:
        return self.origin is not None and self.origin.offset <= self.config.origin_tolerance

    def status(self, now: float) -> BridgeStatus:
        """What diagnostics report: state, reason, link, counts by reason."""
        autopilot = self.autopilot
        return BridgeStatus(
            state=self.state, reason=self.reason, link_up=self.link_up(now),
            heartbeat_age=None if autopilot is None else now - autopilot.t,
            mode=None if autopilot is None else autopilot.custom_mode,
            armed=None if autopilot is None else autopilot.armed,
            goal=(self.goal_index, 0 if self.plan is None else len(self.plan)),
            origin_offset=None if self.origin is None else self.origin.offset,
            clock_offset=self.clock.offset, dropped=dict(self.telemetry.dropped),
            bad_data=dict(self.link.bad), refused=dict(self.gate.refused),
            sent=dict(self.link.sent), events=dict(self.events))

    def close(self) -> None:
        self.link.close()

    # -- internals ----------------------------------------------------------------------------
    def _note(self, record: Record) -> None:
        if isinstance(record, AutopilotStatus):
            first, self.autopilot = self.autopilot is None, record
            if first and self.state == IDLE:
                self.reason = "waiting for start"
            if self.state == LINK_LOST:
                self.state, self.reason = IDLE, "link back: waiting for start"
        elif isinstance(record, Odometry):
            self.odometry = record
        elif isinstance(record, Origin):
            if not self.origin_ok and self.config.require_origin and self.state != LINK_LOST:
                self.state, self.reason = IDLE, self._origin_problem()

    def _refuse(self, reason: str) -> str:
        self.gate.refused[reason] += 1
        self.events["refused_plans"] += 1
        return reason

    def _origin_problem(self) -> str:
        if self.origin is None:
            return "the autopilot's EKF origin is not known yet"
        return (f"the autopilot's EKF origin is {self.origin.offset:.1f} m from the map "
                f"origin (tolerance {self.config.origin_tolerance:g} m)")

    def _on_reboot(self) -> None:
        self.events["reboots"] += 1
        self.telemetry.forget_origin()
        if self.state in (ACTIVE, HOLDING):
            self.state = IDLE
        self.reason = "autopilot rebooted: waiting for start"

    def _check_link(self, now: float) -> None:
        if self.autopilot is not None and not self.link_up(now) and self.state != LINK_LOST:
            self.state = LINK_LOST
            self.reason = (f"link lost: no heartbeat for {now - self.autopilot.t:.1f} s; "
                           f"waiting for the link and a start")
            self.events["link_lost"] += 1

    def _request_origin(self, now: float) -> None:
        if (not self.config.require_origin or self.origin is not None
                or not self.link_up(now) or now - self._last["origin"] < ORIGIN_REQUEST_PERIOD):
            return
        self._last["origin"] = now
        for message_id in (GPS_GLOBAL_ORIGIN_ID, HOME_POSITION_ID):
            self._send_command(mavlink.MAV_CMD_REQUEST_MESSAGE, message_id)

    def _command(self, now: float) -> None:
        if self.state not in (ACTIVE, HOLDING) or not self.link_up(now):
            return
        if self.state == ACTIVE and not self._advance():
            return
        if now - self._last["command"] < self.config.command_period:
            return
        self._last["command"] = now
        vehicle_type = self.autopilot.vehicle_type
        if self.state == HOLDING:
            if self.config.allow_mode_change and vehicle_type in ABORT_MODE:
                if self.autopilot.custom_mode != ABORT_MODE[vehicle_type]:
                    self._send_command(mavlink.MAV_CMD_DO_SET_MODE,
                                       mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                                       ABORT_MODE[vehicle_type])
            elif self._hold is not None:
                self._send_target(*self._hold, now, frame=FRAMES["depth"])
            return
        if self.autopilot.custom_mode != GUIDED_MODE.get(vehicle_type):
            if self.config.allow_mode_change and vehicle_type in GUIDED_MODE:
                self.reason = "switching the autopilot to GUIDED"
                self._send_command(mavlink.MAV_CMD_DO_SET_MODE,
                                   mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                                   GUIDED_MODE[vehicle_type])
            else:
                self.reason = "waiting for the operator to switch to GUIDED"
            return
        if not self.autopilot.armed:
            self.reason = "waiting for the operator to arm"
            return
        self.reason = f"flying to plan pose {self.goal_index}"
        self._send_target(*self.plan[self.goal_index], now)

    def _advance(self) -> bool:
        """Skip the plan poses within the goal radius; False when there is nothing to fly."""
        if self.config.require_origin and not self.origin_ok:
            self.reason = self._origin_problem()
            return False
        if self.plan is None or self.odometry is None:
            self.reason = "no plan" if self.plan is None else "no vehicle position yet"
            return False
        x, y = self.odometry.x, self.odometry.y
        start = self.goal_index
        while (self.goal_index < len(self.plan) and math.hypot(
                *(self.plan[self.goal_index, :2] - (x, y))) <= self.config.goal_radius):
            self.goal_index += 1
        if self.goal_index == len(self.plan):
            self.plan, self.reason = None, "plan done"
            self.events["plans_done"] += 1
            return False
        if self.goal_index != start:
            self._last["command"] = -math.inf  # the next pose at once
        return True

    def _send_target(self, x: float, y: float, z: float, now: float,
                     frame: int | None = None) -> None:
        """A position target; ``frame`` None: the plan's (``vertical``), a hold passes the
        relative-altitude frame with the vehicle's own height."""
        lat, lon = cv.target_global_int(self.telemetry.frame, x, y)
        surface = self.config.vertical == "surface"
        mask = POSITION_ONLY | (IGNORE_Z if surface else 0)
        boot_ms = int((now - self._epoch) * 1000) & 0xFFFFFFFF
        frame = FRAMES[self.config.vertical] if frame is None else frame
        self.link.send(self.link.mav.set_position_target_global_int_encode(
            boot_ms, self.config.target_system, self.config.target_component, frame, mask,
            lat, lon, 0.0 if surface else float(z), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        self.target = (x, y, z)

    def _send_command(self, command: int, *params: float) -> None:
        values = (list(params) + [0.0] * 7)[:7]
        self.link.send(self.link.mav.command_long_encode(
            self.config.target_system, self.config.target_component, command, 0, *values))
