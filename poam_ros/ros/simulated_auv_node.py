"""ROS 2 node ``simulated_auv``: the survey simulator on the ROS graph.

A thin adapter around :class:`~poam_ros.sim.simulated_auv.SimulatedAuv`: a wall-clock timer
advances it by ``time_scale`` simulated seconds per wall second and publishes what it
returns, each message stamped with its simulated time, and ``/clock``. Plans on ``plan``
replace the current one. In ``lockstep`` mode the clock stands still while the vehicle has
no plan, so that a mission over ROS makes exactly the ROS-free mission's poses and
soundings, and the held vehicle repeats its last odometry once a second (the arrival pose the
ingest and the planner wait for: one lost message must not stall the graph); in ``realtime``
mode it always runs. In lockstep the clock also holds until every node named in ``hold_for``
subscribes to the sensors (a name with a leading ``/`` is matched with its namespace), so none
misses the first reading, whoever else subscribed first, and stands while one of them that
reports its progress (the ingest's ``~/progress``; :mod:`poam_ros.sim.pacing`) has
``max_backlog`` messages of a topic still to take, so that none overflows its queue however
loaded the machine: the diagnostics say how long it stood for them.

The odometry carries the vehicle's height (``vehicle.vertical_mode``: plane, depth or
altitude) and its full attitude (roll and pitch with ``vehicle.roll_amplitude`` and
``pitch_amplitude``). ``geo.*``: the map's anchor, which a ``terrain.placement:
georeferenced`` raster is placed with (``poam-ros sim`` passes the mapper's).

With ``mavlink.connection`` set (:class:`~poam_ros.sim.mavlink_vehicle.MavlinkEndpointConfig`)
the vehicle is a simulated autopilot on that MAVLink link instead
(:class:`~poam_ros.sim.mavlink_vehicle.MavlinkVehicle`; needs ``geo.*``): it flies the guided
targets a bridge sends, not ``plan``, and its state goes out as MAVLink telemetry, not on
``odom``; lockstep then holds the clock while it has no live target. Simulation only, the
operator's part: ``mavlink.start_armed_guided`` arms it in GUIDED at the start and
``mavlink.start_bridge`` calls that bridge's ``~/start`` until it succeeds.

Topics (names relative, remappable): publishes ``odom`` (nav_msgs/Odometry),
``sonar/range`` (sensor_msgs/Range), ``sonar/swath`` (sensor_msgs/PointCloud2, with
``multibeam.enabled``), ``temperature`` (sensor_msgs/Temperature in ``base_frame``, variance
``temperature.noise_std``², NaN off the terrain; with ``temperature.enabled``),
``seabed_class`` (a one-point sensor_msgs/PointCloud2 in ``base_frame``, field
``seabed_class`` 0 or 1: the ingest's ``binary`` channel; with ``seabed_class.enabled``),
``/clock`` and ``/diagnostics``; subscribes ``plan`` (nav_msgs/Path, transient local); with
MAVLink neither ``odom`` nor ``plan``. Its timers run on the steady clock, never on
``use_sim_time``: the node is the clock.
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Path
from rclpy.clock import Clock, ClockType
from rosgraph_msgs.msg import Clock as ClockMsg
from std_srvs.srv import Trigger

from poam_ros import messages as msg
from poam_ros.diagnostics import SimulatorStatus
from poam_ros.geo.georeference import GeoConfig, GeoReference
from poam_ros.params import ConfigError
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.parameters import add_config_callback, declare_config
from poam_ros.ros.run import StartingNode, run_node
from poam_ros.ros.vehicle_topics import VehicleTopics
from poam_ros.setup.terrain import TerrainConfig, terrain_from_config
from poam_ros.sim.fleet import build_auv
from poam_ros.sim.mavlink_vehicle import MavlinkEndpointConfig, MavlinkVehicle
from poam_ros.sim.multibeam import MultibeamStreamConfig
from poam_ros.sim.seabed_class import SeabedClassConfig
from poam_ros.sim.simulated_auv import SimulatedAuvConfig
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import TerrainError
from poam_ros.sim.vehicle import VehicleConfig
from poam_ros.sim.water_temperature import WaterTemperatureConfig

DIAGNOSTICS_PERIOD = 1.0  # s, wall
OPERATOR_PERIOD = 1.0  # s, wall: the simulated operator's tries to start the bridge
# Parameters that cannot change once the simulator is built.
_FIXED = ("seed", "start_pose", "world_frame", "base_frame", "sonar_frame", "publish_rate",
          "hold_for")


class SimulatedAuvNode(StartingNode):
    """The simulated AUV; ``node_kwargs`` go to :class:`rclpy.node.Node` (context,
    parameter_overrides, ...)."""

    def __init__(self, node_name: str = "simulated_auv", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        self.config = declare_config(self, SimulatedAuvConfig, read_only=_FIXED)
        terrain_config = declare_config(self, TerrainConfig, "terrain",
                                        read_only=_all(TerrainConfig))
        vehicle = declare_config(self, VehicleConfig, "vehicle", read_only=_all(VehicleConfig))
        sonar = declare_config(self, SonarConfig, "sonar", read_only=_all(SonarConfig))
        swath = declare_config(self, MultibeamStreamConfig, "multibeam",
                               read_only=_all(MultibeamStreamConfig))
        geo = declare_config(self, GeoConfig, "geo", read_only=_all(GeoConfig))
        self.temperature_config = declare_config(self, WaterTemperatureConfig, "temperature",
                                                 read_only=_all(WaterTemperatureConfig))
        seabed = declare_config(self, SeabedClassConfig, "seabed_class",
                                read_only=_all(SeabedClassConfig))
        endpoint = declare_config(self, MavlinkEndpointConfig, "mavlink",
                                  read_only=_all(MavlinkEndpointConfig))
        add_config_callback(self, SimulatedAuvConfig, self._reconfigure)
        try:  # a terrain file that cannot be read, a start off the terrain, a sonar too short
            terrain = terrain_from_config(terrain_config, GeoReference.from_config(geo))
            self.auv = build_auv(terrain, vehicle, sonar, swath, self.temperature_config,
                                 self.config.seed, self.config.start_pose or None,
                                 self.config.mode, seabed)
        except ValueError as error:
            raise ConfigError(str(error)) from error
        multibeam = self.auv.multibeam
        self.vehicle = (self._mavlink_vehicle(endpoint, GeoReference.from_config(geo))
                        if endpoint.connection else self.auv)  # what the clock steps
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", qos.CLOCK)
        self.topics = VehicleTopics(self, "", self.config, sonar,
                                    self.temperature_config.noise_std
                                    if self.temperature_config.enabled else None,
                                    multibeam is not None, seabed.enabled,
                                    odom=self.vehicle is self.auv)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        if self.vehicle is self.auv:
            self.create_subscription(Path, "plan", self._on_plan, qos.LATCHED)

        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._last_tick = time.monotonic()
        self._target = self.auv.time
        self._published_clock: float | None = None
        self._last_clock_wall = -float("inf")
        self.plans_refused = 0
        self.waiting_for: list[str] = []
        self.create_timer(1.0 / self.config.publish_rate, self._tick, clock=steady)
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics, clock=steady)
        if endpoint.connection and endpoint.start_bridge:
            self._operator = (self.create_client(Trigger, f"{endpoint.start_bridge}/start"),
                              self.create_timer(OPERATOR_PERIOD, self._start_bridge,
                                                clock=steady))
            self._operator_call = None
        self.get_logger().info(
            f"simulated AUV ready: {self.config.mode} mode, time_scale "
            f"{self.config.time_scale:g}, start {tuple(round(v, 3) for v in self.auv.pose)}, "
            f"seed {self.config.seed}{', multibeam on' if multibeam else ''}"
            f"{', temperature on' if self.temperature_config.enabled else ''}"
            f"{', seabed class on' if seabed.enabled else ''}"
            f"{f', MAVLink on {endpoint.connection}' if endpoint.connection else ''}")

    def _mavlink_vehicle(self, endpoint: MavlinkEndpointConfig,
                         georeference: GeoReference | None) -> MavlinkVehicle:
        """The simulated autopilot on ``endpoint``'s link, flying the simulated AUV."""
        if georeference is None:
            raise ConfigError("mavlink.connection needs the map's geodetic anchor: set "
                              "geo.anchor to latlon or projected")
        from poam_ros.vehicle import SimulatedAutopilot  # pymavlink: only with the link

        autopilot = SimulatedAutopilot(self.auv.simulator, georeference, endpoint.connection,
                                       system_id=endpoint.system_id,
                                       component_id=endpoint.component_id,
                                       guided_timeout=endpoint.guided_timeout)
        if endpoint.start_armed_guided:
            autopilot.operator_mode("GUIDED")
            autopilot.operator_arm()
        return MavlinkVehicle(self.auv, autopilot, endpoint.settle_time, endpoint.send_delay)

    def destroy_node(self) -> None:
        vehicle = getattr(self, "vehicle", None)  # None: the start failed before it
        if isinstance(vehicle, MavlinkVehicle):
            vehicle.autopilot.link.close()
        super().destroy_node()

    # -------------------------------------------------------------------- callbacks

    def _reconfigure(self, config: SimulatedAuvConfig) -> None:
        self.config = config
        self.auv.mode = config.mode

    def _on_plan(self, path: Path) -> None:
        if path.header.frame_id != self.config.world_frame:
            return self._refuse(f"plan in frame {path.header.frame_id!r}, expected "
                                f"{self.config.world_frame!r}")
        waypoints = msg.path_to_waypoints(path)
        if not np.isfinite(waypoints).all():
            return self._refuse("plan has non-finite waypoints")
        try:
            self.auv.set_plan(waypoints)
        except TerrainError as error:
            return self._refuse(str(error))
        self.get_logger().info(f"new plan: {len(waypoints)} waypoint(s) at sim time "
                               f"{self.auv.time:.3f} s")

    def _start_bridge(self) -> None:
        """The operator starts the bridge: ``~/start`` once a second until it succeeds."""
        (client, timer), pending = self._operator, self._operator_call
        if pending is not None and not pending.done():
            return
        if pending is not None:
            response = pending.result()
            if response is not None and response.success:
                self.get_logger().info(f"the operator started {client.srv_name}")
                timer.cancel()
                return
            self.warn_throttled("operator", f"{client.srv_name}: "
                                f"{response.message if response else 'no answer'}",
                                expected=True)
        self._operator_call = (client.call_async(Trigger.Request())
                               if client.service_is_ready() else None)

    def _refuse(self, reason: str) -> None:
        self.plans_refused += 1
        self.warn_throttled("plan", f"plan refused, the vehicle keeps its current one: {reason}")

    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        config, auv, vehicle = self.config, self.auv, self.vehicle
        self.waiting_for = (self.topics.subscribers_missing(config.hold_for)
                            if config.lockstep and config.hold_for else [])
        if self.waiting_for:
            self._target = auv.time
        elif config.time_scale > 0:
            self._target += config.time_scale * elapsed
        else:
            self._target = float("inf")
        steps = (self.topics.pace(config.max_steps_per_tick, config.max_backlog, elapsed)
                 if config.lockstep else config.max_steps_per_tick)
        events = [] if self.waiting_for or not steps else vehicle.advance(self._target, steps)
        # Never build up a debt: a held clock, or ticks slower than asked for, do not make
        # the next ones burst.
        self._target = min(self._target, auv.time + auv.simulator.vehicle.dt)
        held = vehicle.holding and config.lockstep
        if held:
            self._target = auv.time
        for event in events:
            self.topics.publish(event)
        if held:  # its arrival pose again, once a second: one lost must not stall the graph
            self.topics.repeat_odometry(now)
        if auv.last_failure:
            self.warn_throttled("failure", f"plan abandoned: {auv.last_failure}")
            auv.last_failure = None
        # The clock once a tick, at the newest event's time (not once per event: every node
        # with use_sim_time takes each /clock message); while it stands, once a second for
        # nodes that join late (the same time again: nothing new happens).
        if auv.time != self._published_clock or now - self._last_clock_wall >= 1.0:
            self._clock_pub.publish(cv.clock_from_seconds(auv.time))
            self._published_clock, self._last_clock_wall = auv.time, now

    def _publish_diagnostics(self) -> None:
        auv = self.auv
        reached, total = auv.progress
        x, y, yaw = auv.pose
        holding = auv.holding
        level = DiagnosticStatus.OK
        message = "holding, waiting for a plan" if holding else "following a plan"
        if self.waiting_for:
            message = (f"holding the clock until {', '.join(self.config.hold_for)} "
                       f"subscribe to {', '.join(self.waiting_for)}")
        if self.topics.pacing.holding:
            message = f"{message}; clock held for {', '.join(self.topics.pacing.holding)}"
        if self.plans_refused:
            level = DiagnosticStatus.WARN
            message = f"{message}; {self.plans_refused} plan(s) refused"
        record = SimulatorStatus(sim_time=auv.time, mode=self.config.mode, x=x, y=y, yaw=yaw,
                                 waypoints_reached=reached, waypoints=total, holding=holding,
                                 plans_refused=self.plans_refused,
                                 pings_off_terrain=auv.pings_off_terrain,
                                 clock_held_for_consumers=self.topics.pacing.held_for)
        # stamped with the simulation's time: this node's clock is the /clock it publishes
        self._diagnostics_pub.publish(status_array(self, [node_status(self, level, message,
                                                                      record)], auv.time))


def _all(config_cls) -> list[str]:
    return [spec.name for spec in config_cls.specs()]


def main(args=None) -> None:
    run_node(SimulatedAuvNode, "simulated_auv", args)


if __name__ == "__main__":
    main()
