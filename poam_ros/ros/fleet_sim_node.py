"""ROS 2 node ``fleet_sim``: several simulated AUVs on one terrain, one ``/clock``.

A thin adapter around :class:`~poam_ros.sim.fleet.FleetSim`: vehicle k lives under
``/<fleet.namespace_prefix><k>`` (``/auv0``, ``/auv1``, ...) and publishes there what the
``simulated_auv`` node publishes (``odom``, ``sonar/range``, with ``multibeam.enabled``
``sonar/swath``, with ``temperature.enabled`` ``temperature``), takes its ``plan``, and hears
its planner's ``mission/state`` (a vehicle whose mission is ``done`` or ``aborted`` no longer
holds the lockstep clock). A vehicle whose planner was matched on its ``plan`` topic and has
had no publisher there for ``fleet.leave_timeout`` s of wall time has left the fleet (its
stack's processes are gone): it holds position on the fleet's clock, holds neither the clock
nor, for its ``hold_for`` nodes, the others; a publisher on its ``plan`` again brings it back
(:meth:`~poam_ros.sim.fleet.FleetSim.set_left`). Both are logged once and said in its status.
The graph tells it, not the age of ``mission/state``: DDS drops a dead process's endpoints by
itself, whatever the planner's own diagnostics period. One node hosts them all so that one
clock steps them all: in ``lockstep`` the clock holds while a vehicle that is not done (and
has not left) waits for a plan, and until each node of ``hold_for`` subscribes to every
vehicle's sensors (a plain name, such as ``sensor_ingest``, in the vehicle's namespace: each
vehicle waits for its own ingest), and stands while a vehicle's reporting consumer has
``max_backlog`` messages of a topic still to take (:mod:`poam_ros.sim.pacing`). A vehicle
without a plan repeats its last odometry once a second, as ``simulated_auv`` does.

Parameters: those of ``simulated_auv`` (``mode``, ``time_scale``, ``seed``: the fleet's, each
vehicle's noise seeded from it by :func:`~poam_ros.sim.fleet.vehicle_seeds`; frames, rates,
``hold_for``; ``start_pose`` must stay empty), ``fleet.*`` (:class:`FleetConfig`: the number
of vehicles, their namespaces and start poses), and ``terrain.*``, ``vehicle.*``,
``sonar.*``, ``multibeam.*``, ``temperature.*``, ``geo.*``, the same for every vehicle.
Publishes ``/clock`` and, once a second, one ``/diagnostics`` status per vehicle
(``fleet_sim/auv1: simulator``). Its timers run on the steady clock: the node is the clock.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Path
from rclpy.clock import Clock, ClockType
from rosgraph_msgs.msg import Clock as ClockMsg

from poam_ros import messages as msg
from poam_ros.diagnostics import SimulatorStatus
from poam_ros.geo.georeference import GeoConfig, GeoReference
from poam_ros.params import ConfigError
from poam_ros.planners.fleet_state import LEFT
from poam_ros.planners.mission_control import ABORTED, DONE
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.node_status import HOST, status_node_name
from poam_ros.ros.parameters import add_config_callback, declare_config
from poam_ros.ros.run import StartingNode, run_node
from poam_ros.ros.vehicle_topics import VehicleTopics
from poam_ros.setup.terrain import TerrainConfig, terrain_from_config
from poam_ros.sim.fleet import FleetConfig, FleetSim, build_auv, fleet_start_poses, vehicle_seeds
from poam_ros.sim.multibeam import MultibeamStreamConfig
from poam_ros.sim.simulated_auv import SimulatedAuvConfig
from poam_ros.sim.simulator import SimulationError
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import TerrainError
from poam_ros.sim.vehicle import VehicleConfig
from poam_ros.sim.water_temperature import WaterTemperatureConfig

DIAGNOSTICS_PERIOD = 1.0  # s, wall; also how often it looks for planners gone or back


class FleetSimNode(StartingNode):
    """The simulated fleet; ``node_kwargs`` go to :class:`rclpy.node.Node`."""

    def __init__(self, node_name: str = "fleet_sim", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        fixed = [spec.name for spec in SimulatedAuvConfig.specs()
                 if spec.name not in ("mode", "time_scale")]
        self.config = declare_config(self, SimulatedAuvConfig, read_only=fixed)
        configs = {prefix: declare_config(self, cls, prefix,
                                          read_only=[spec.name for spec in cls.specs()])
                   for prefix, cls in (("fleet", FleetConfig), ("terrain", TerrainConfig),
                                       ("vehicle", VehicleConfig), ("sonar", SonarConfig),
                                       ("multibeam", MultibeamStreamConfig),
                                       ("geo", GeoConfig),
                                       ("temperature", WaterTemperatureConfig))}
        add_config_callback(self, SimulatedAuvConfig, self._reconfigure)  # mode, time_scale
        fleet: FleetConfig = configs["fleet"]
        if self.config.start_pose:
            raise ConfigError("fleet_sim: start_pose is the single vehicle's; give each "
                              "vehicle's in fleet.start_poses")
        try:  # a terrain file that cannot be read, a start off the terrain, a sonar too short
            terrain = terrain_from_config(configs["terrain"],
                                          GeoReference.from_config(configs["geo"]))
            poses = fleet.poses() or fleet_start_poses(terrain.extent, fleet.vehicles,
                                                       self.config.seed, terrain.contains)
            self.fleet = FleetSim([
                build_auv(terrain, configs["vehicle"], configs["sonar"], configs["multibeam"],
                          configs["temperature"], seed, pose, self.config.mode)
                for seed, pose in zip(vehicle_seeds(self.config.seed, fleet.vehicles), poses)],
                self.config.mode)
        except ValueError as error:
            raise ConfigError(str(error)) from error
        self.namespaces = fleet.namespaces()
        temperature = configs["temperature"]
        self.topics = [VehicleTopics(self, f"{namespace}/", self.config, configs["sonar"],
                                     temperature.noise_std if temperature.enabled else None,
                                     configs["multibeam"].enabled)
                       for namespace in self.namespaces]
        self.plans_refused = [0] * fleet.vehicles
        self.leave_timeout = fleet.leave_timeout
        self._planner_seen = [False] * fleet.vehicles  # a publisher was matched on its plan
        self._planner_gone: list[float | None] = [None] * fleet.vehicles  # since, monotonic
        self._plan_subs = []
        for k, namespace in enumerate(self.namespaces):
            self._plan_subs.append(self.create_subscription(
                Path, f"{namespace}/plan", partial(self._on_plan, k), qos.LATCHED))
            self.create_subscription(DiagnosticStatus, f"{namespace}/mission/state",
                                     partial(self._on_mission, k), qos.LATCHED)
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", qos.CLOCK)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._last_tick = time.monotonic()
        self._target = 0.0
        self._published_clock: float | None = None
        self._last_clock_wall = -float("inf")
        self.waiting_for: list[str] = []
        self.create_timer(1.0 / self.config.publish_rate, self._tick, clock=steady)
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics, clock=steady)
        self.get_logger().info(
            f"simulated fleet ready: {fleet.vehicles} vehicles ({', '.join(self.namespaces)}), "
            f"{self.config.mode} mode, time_scale {self.config.time_scale:g}, starts "
            + "; ".join(f"{tuple(round(v, 1) for v in auv.pose)}" for auv in self.fleet.auvs))

    def _reconfigure(self, config: SimulatedAuvConfig) -> None:
        self.config = config  # the next tick takes its mode and time scale

    def _watch_planners(self) -> None:
        """Who left the fleet and who came back, from the publishers on each ``plan``."""
        now = time.monotonic()
        for k, subscription in enumerate(self._plan_subs):
            if subscription.get_publisher_count() > 0:
                self._planner_seen[k], self._planner_gone[k] = True, None
                if self.fleet.left[k]:
                    self._set_left(k, False, "its planner is back on its plan topic")
            elif self._planner_seen[k] and self.leave_timeout > 0:
                since = self._planner_gone[k] = self._planner_gone[k] or now
                if not self.fleet.left[k] and now - since >= self.leave_timeout:
                    self._set_left(k, True, f"no planner on its plan topic for "
                                            f"{now - since:.0f} s")

    def _set_left(self, k: int, left: bool, why: str) -> None:
        self.fleet.set_left(k, left)
        what = ("left the fleet: it holds position and no longer holds the clock" if left
                else "rejoined the fleet: it flies its next plan")
        self.get_logger().warning(f"{self.namespaces[k]} {what} ({why}) at sim time "
                                  f"{self.fleet.time:.3f} s")

    def _on_plan(self, k: int, path: Path) -> None:
        if self.fleet.left[k]:
            self._set_left(k, False, "a new plan came")
        if path.header.frame_id != self.config.world_frame:
            return self._refuse(k, f"plan in frame {path.header.frame_id!r}, expected "
                                   f"{self.config.world_frame!r}")
        waypoints = msg.path_to_waypoints(path)
        if not np.isfinite(waypoints).all():
            return self._refuse(k, "plan has non-finite waypoints")
        try:
            self.fleet.set_plan(k, waypoints)
        except (TerrainError, SimulationError) as error:
            return self._refuse(k, str(error))
        self.get_logger().info(f"{self.namespaces[k]}: new plan, {len(waypoints)} waypoint(s) "
                               f"at sim time {self.fleet.time:.3f} s")

    def _refuse(self, k: int, reason: str) -> None:
        self.plans_refused[k] += 1
        self.warn_throttled(f"plan{k}", f"{self.namespaces[k]}: plan refused, the vehicle "
                                        f"keeps its current one: {reason}")

    def _on_mission(self, k: int, message: DiagnosticStatus) -> None:
        self.fleet.done[k] = message.message in (DONE, ABORTED)

    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        config, fleet = self.config, self.fleet
        fleet.mode = config.mode
        self.waiting_for = ([topic for k, topics in enumerate(self.topics) if not fleet.left[k]
                             for topic in topics.subscribers_missing(config.hold_for)]
                            if config.lockstep and config.hold_for else [])
        if self.waiting_for or fleet.holding:
            self._target = fleet.time
        elif config.time_scale > 0:
            self._target += config.time_scale * elapsed
        else:
            self._target = float("inf")
        steps = config.max_steps_per_tick
        if config.lockstep:  # no more than every vehicle's consumers can take
            steps = min([topics.pace(steps, config.max_backlog, elapsed)
                         for k, topics in enumerate(self.topics) if not fleet.left[k]],
                        default=steps)
        events = ([] if self.waiting_for or not steps else fleet.advance(self._target, steps))
        self._target = min(self._target, fleet.time + fleet.dt)  # never build up a debt
        for topics, vehicle in zip(self.topics, events):
            for event in vehicle:
                topics.publish(event)
        for topics, auv in zip(self.topics, fleet.auvs):
            if auv.holding and config.lockstep:  # a lost arrival pose, heard again
                topics.repeat_odometry(now)
        for k, auv in enumerate(fleet.auvs):
            if auv.last_failure:
                self.warn_throttled(f"failure{k}", f"{self.namespaces[k]}: plan abandoned: "
                                                   f"{auv.last_failure}")
                auv.last_failure = None
        if fleet.time != self._published_clock or now - self._last_clock_wall >= 1.0:
            self._clock_pub.publish(cv.clock_from_seconds(fleet.time))
            self._published_clock, self._last_clock_wall = fleet.time, now

    def _publish_diagnostics(self) -> None:
        self._watch_planners()
        statuses = []
        for k, (namespace, auv) in enumerate(zip(self.namespaces, self.fleet.auvs)):
            reached, total = auv.progress
            x, y, yaw = auv.pose
            message = ("done" if self.fleet.done[k] else
                       f"{LEFT}: holding position" if self.fleet.left[k] else
                       "holding, waiting for a plan" if auv.holding else "following a plan")
            level = (DiagnosticStatus.WARN if self.plans_refused[k] or self.fleet.left[k]
                     else DiagnosticStatus.OK)
            if self.waiting_for and not self.fleet.left[k]:
                message = f"holding the clock until {', '.join(self.config.hold_for)} " \
                          f"subscribe to {', '.join(self.waiting_for)}"
            pacing = self.topics[k].pacing
            if pacing.holding:
                message = f"{message}; clock held for {', '.join(pacing.holding)}"
            record = SimulatorStatus(sim_time=self.fleet.time, mode=self.config.mode, x=x,
                                     y=y, yaw=yaw, waypoints_reached=reached, waypoints=total,
                                     holding=auv.holding,
                                     plans_refused=self.plans_refused[k],
                                     pings_off_terrain=auv.pings_off_terrain,
                                     clock_held_for_consumers=pacing.held_for)
            statuses.append(cv.diagnostic_status(
                f"{status_node_name(self)}{namespace}", level, message, record,
                hardware_id=HOST))
        self._diagnostics_pub.publish(cv.diagnostic_array(self.fleet.time, statuses))


def main(args=None) -> None:
    run_node(FleetSimNode, "fleet_sim", args)


if __name__ == "__main__":
    main()
