"""The vehicle bridge's parameters: the link, the commanding rules and the safety limits."""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.params import ConfigError, Params, param

VERTICAL_SETPOINTS = ("depth", "altitude", "surface")


@dataclass
class VehicleBridgeConfig(Params):
    """How the bridge talks to the autopilot and what it may command (docs/vehicle.md)."""

    connection: str = param("udpin:0.0.0.0:14550",
                            "pymavlink connection string: udpin:HOST:PORT (listen), "
                            "udpout:HOST:PORT (send to), tcp:HOST:PORT, or a serial device "
                            "such as /dev/ttyACM0 (with baud)")
    baud: int = param(115200, "serial baud rate (serial devices only)", low=1200)
    system_id: int = param(1, "the bridge's MAVLink system id (a companion computer shares "
                              "its vehicle's)", low=1, high=255)
    component_id: int = param(191, "the bridge's MAVLink component id "
                                   "(191: MAV_COMP_ID_ONBOARD_COMPUTER)", low=1, high=255)
    target_system: int = param(1, "the autopilot's system id; messages from any other "
                                  "system are dropped and counted", low=1, high=255)
    target_component: int = param(1, "the autopilot's component id (1: MAV_COMP_ID_AUTOPILOT1)",
                                  low=0, high=255)
    link_timeout: float = param(5.0, "no autopilot HEARTBEAT for this long: the link is lost "
                                     "and the bridge stops commanding (heartbeats come at "
                                     "1 Hz)", unit="s", low=1.5, high=60.0)
    command_period: float = param(0.5, "period of the guided position target, re-sent while "
                                       "flying (ArduSub's guided position-velocity "
                                       "controller times out after 3 s)", unit="s", low=0.02,
                                  high=2.5)
    goal_radius: float = param(1.0, "horizontal distance at which a plan pose counts as "
                                    "reached and the next one is commanded", unit="m",
                               low=0.01)
    plan_timeout: float = param(10.0, "a plan stamped longer ago than this when it arrives "
                                      "or when flying starts is refused (stale)", unit="s",
                                low=0.1)
    vertical: str = param("depth", "what a plan pose's z is: depth (map height, negative "
                                   "below the surface, sent relative to home at the "
                                   "surface), altitude (height above the seabed, sent "
                                   "above terrain), surface (ignored: a boat)",
                          choices=VERTICAL_SETPOINTS)
    max_depth: float = param(100.0, "no target deeper than this below the surface",
                             unit="m", low=0.0)
    min_altitude: float = param(1.0, "no target closer to the seabed than this (needs the "
                                     "seabed's elevation there)", unit="m", low=0.0)
    allow_mode_change: bool = param(False, "let the bridge switch the autopilot to GUIDED "
                                           "on start and to its SURFACE/HOLD mode on abort; "
                                           "false: the operator switches modes")
    require_origin: bool = param(True, "command only once the autopilot's EKF origin "
                                       "(GPS_GLOBAL_ORIGIN) is known and within "
                                       "origin_tolerance of the map anchor")
    origin_tolerance: float = param(10.0, "largest distance between the autopilot's EKF "
                                          "origin and the map origin", unit="m", low=0.0)
    surface_pressure: float = param(101_325.0, "absolute pressure at the water surface, "
                                              "which SCALED_PRESSURE2 depth is measured from "
                                              "(ArduSub calibrates its own at boot)", unit="Pa",
                                    low=50_000.0, high=120_000.0)
    water_density: float = param(1025.0, "density turning pressure into depth "
                                          "(SCALED_PRESSURE2) and depth into the gauge "
                                          "pressure published on depth (the ingest's "
                                          "depth_from_pressure inverts it)", unit="kg/m^3",
                                 low=900.0, high=1100.0)
    clock_window: float = param(30.0, "window of the boot-time offset estimate", unit="s",
                                low=1.0)
    reboot_tolerance: float = param(1.0, "boot time going back by more than this is a "
                                         "reboot", unit="s", low=0.0)

    def validate(self) -> None:
        if not self.connection.strip():
            raise ConfigError("VehicleBridgeConfig.connection must name a link, e.g. "
                              "'udpin:0.0.0.0:14550'")
        if self.command_period * 2 > self.link_timeout:
            raise ConfigError(f"VehicleBridgeConfig.command_period ({self.command_period:g} "
                              f"s) must be at most half link_timeout ({self.link_timeout:g} s)")


@dataclass
class VehicleNodeConfig(Params):
    """The ``vehicle_bridge`` node's own settings: frames and its timer."""

    world_frame: str = param("map", "frame of plans and odometry (REP-105)")
    base_frame: str = param("base_link", "vehicle body frame, odometry child_frame_id")
    altimeter_frame: str = param("altimeter_link", "frame of the downward Range")
    gps_frame: str = param("gps_link", "frame of the NavSatFix")
    depth_frame: str = param("base_link", "frame of the depth (FluidPressure)")
    tick_rate: float = param(50.0, "rate of the bridge's read-and-command timer", unit="Hz",
                             low=1.0, high=1000.0)
