"""The planner node: the pilot survey, then the paper's informative planner, over ROS.

It builds the workspace, the random stream and the planner exactly as
:class:`poam_ros.mission.Mission` does, publishes the pilot survey as the first ``plan`` when
the mission starts (at once with ``autostart_mission``, else on ``~/start``), and plans the
next goal each time the vehicle has reached the end of its plan, until a budget ends the
mission (:mod:`poam_ros.ros.mission_services`: the services ``~/start``, ``~/pause``,
``~/abort``, ``~/return_home``, the ``mission/state`` topic, budgets ``mission.*``):

* ``lockstep`` mode waits, after the goal is reached, for a ``map`` newer than that moment
  (the map that holds the samples of the leg just driven): one handled after the odometry
  that reached the goal, or one that came during the plan stamped (with the newest samples
  it holds) no earlier than that odometry - a map can overtake a burst of odometry. So a
  lockstep graph replays the ROS-free mission decision for decision;
* ``realtime`` mode plans at once with the map at hand (it waits only for a first map).

The max-entropy planner scores its candidates with the mapper's exact predictive std (on a
multi-channel map the channels' covariance, scored as ``max_entropy.acquisition`` says): the
planner's ``predict_std`` publishes the candidates on ``uncertainty/query`` and waits for the
mapper's ``uncertainty/response`` with the same stamp. Planning runs on a worker thread owned
by the node, so that the wait never blocks the executor whatever kind it is; if no usable
answer comes, the random stream is rewound and planning is tried again later, so a retry
draws the same candidates.

Topics (names relative, remappable), their types and QoS: docs/nodes.md ("planner"). In a
fleet the planner announces its plan on ``fleet/plan`` and hears its teammates'
(:mod:`poam_ros.ros.fleet_coordination`, docs/fleet.md).

Every input is checked before it changes anything (:mod:`poam_ros.planners.input_check`):
odometry in another frame than ``map_frame``, with a non-finite position or orientation or an
orientation that is not a rotation (``odometry.orientation_tolerance``), a map in another
frame and an unreadable uncertainty answer are dropped and counted by reason in /diagnostics
(``dropped.<reason>``); a bad pose among good ones costs only itself. Odometry stamps follow
the ingest's clock rule (``odometry.stamp_jump_threshold``, ``odometry.stamp_reset_count``):
a glitched stamp is dropped (``pose_stamp_outlier``), a clock change is counted
(``clock_resets``) and makes lockstep wait for a map handled after the goal is reached.

Each plan pose's z is the vertical setpoint: ``vertical_mode`` ``depth``: z = -``depth`` in
``map_frame``; ``altitude``: z = ``altitude`` above the seabed, the pose in
``<map_frame>_altitude``. Paused, held (``mission.on_budget: hold``) or aborted, the plan is
empty: the vehicle stops where it is.

Parameters: ``mission.*``, ``planning.*``, ``workspace.*`` (a ``workspace.geojson`` file is
placed with the anchor ``geo.*``), ``pilot.*``, ``max_entropy.*``, ``lawnmower.*``, ``geo.*``,
``fleet.*``, ``coordination.*``, ``seed``, ``map_frame``, ``diagnostics_period``,
``autostart_mission``, ``mapper_name`` are read-only (they fix the mission and its random
stream); ``mode``, ``goal_radius`` (from the next plan), ``query_timeout``, ``odometry.*``, the
vertical setpoint and ``skip_pilot`` (a restart on a restored map) can change while it runs.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.diagnostics import PlannerStatus
from poam_ros.geo import GeoConfig
from poam_ros.params import ConfigError
from poam_ros.params.node_settings import REALTIME, PlannerSettings
from poam_ros.planners import (
    LawnmowerConfig,
    MaxEntropyConfig,
    PilotSurveyConfig,
    PlanProgress,
    make_planner,
    pilot_survey,
)
from poam_ros.planners.input_check import (
    REASONS,
    RESPONSE_MALFORMED,
    InputCheck,
    InputCheckConfig,
)
from poam_ros.planners.mission_control import (
    ABORTED,
    DONE,
    IDLE,
    MOVING,
    PAUSED,
    RETURNING,
    RUNNING,
    MissionControlConfig,
    std_statistic,
)
from poam_ros.planners.progress import remaining_plan
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.fleet_coordination import FleetCoordination
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.mission_services import MissionServices
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.parameters import add_config_callback, declare_config
from poam_ros.ros.run import run_node
from poam_ros.ros.uncertainty_queries import UncertaintyQueries
from poam_ros.setup.mission_setup import MissionSetup, PlanningConfig
from poam_ros.workspace import Workspace, WorkspaceConfig

PILOT = "pilot"
WAITING = "waiting for map"
PLANNING = "planning"
DRIVING = "driving"
HOMING = "driving home"
HOLDING = "holding"  # no plan: not started, paused, held or aborted

RETRY_PERIOD = 1.0  # s between planning attempts after one failed


class PlannerNode(ManagedNode):
    """Pilot survey and informative planning; see the module docstring for its interface.

    A managed node (:mod:`poam_ros.ros.managed`): configure builds the planner and draws the
    pilot survey, activate subscribes and publishes the plan (the pilot at the first
    activation, else a plan made while inactive), deactivate stops listening and planning
    (a query under way fails and its draws are rewound), keeping the plan and its progress.
    """

    _worker: threading.Thread | None = None

    def __init__(self, node_name: str = "planner", **kwargs) -> None:
        super().__init__(node_name, **kwargs)

    def _configure(self) -> None:
        configs = {prefix: declare_config(self, cls, prefix,
                                          read_only=[spec.name for spec in cls.specs()])
                   for prefix, cls in (("planning", PlanningConfig),
                                       ("workspace", WorkspaceConfig),
                                       ("pilot", PilotSurveyConfig),
                                       ("max_entropy", MaxEntropyConfig),
                                       ("lawnmower", LawnmowerConfig),
                                       ("geo", GeoConfig))}
        self._settings = declare_config(self, PlannerSettings,
                                        read_only=("seed", "map_frame", "diagnostics_period",
                                                   "autostart_mission", "mapper_name"))
        mission = declare_config(self, MissionControlConfig, "mission",
                                 read_only=[spec.name for spec in MissionControlConfig.specs()])
        add_config_callback(self, PlannerSettings, self._apply_settings)
        self._inputs = InputCheck(self._settings.map_frame,
                                  declare_config(self, InputCheckConfig, "odometry"))
        add_config_callback(self, InputCheckConfig, self._apply_input_check, "odometry")
        setup = MissionSetup(**configs)
        # As Mission.__init__ and Mission.run: one generator, the planner built on it, then
        # the pilot survey drawn from it.
        try:
            self._workspace = Workspace.from_config(setup.workspace)
            self._rng = np.random.default_rng(self._settings.seed)
            self._planner = make_planner(setup.planning.planner, self._workspace, self._rng,
                                         setup.planner_config())
            pilot = pilot_survey(self._workspace, self._rng, setup.pilot)
        except ValueError as error:
            raise ConfigError(f"planner: {error}") from error
        self._fleet = FleetCoordination(self, self._planner, self._settings.map_frame)
        pilot = self._fleet.pilot(pilot)
        self._planner_name = setup.planning.planner

        self._lock = threading.Condition()  # reentrant: MissionServices calls back under it
        self._state = HOLDING
        self._paused_state = HOLDING  # the state a pause left
        self._pilot = pilot
        self._stopping = False
        self._active = False  # plans are published and made only while active
        self._path: Path | None = None  # the plan, sent while active, else at activation
        self._path_sent = False
        self._replayed_map: Header | None = None  # the last map's, at activation
        self._position: np.ndarray | None = None
        self._heading: float | None = None  # rad, the vehicle's yaw with _position
        self._progress: PlanProgress | None = None
        self._waypoints = pilot
        # When the goal was reached and maps arrived: callback events are numbered in the
        # order they were handled; stamps are the data times (ns) of the odometry and of
        # the newest samples in a map.
        self._events = 0
        self._reached_event: int | None = None
        self._reached_stamp: int | None = None
        self._map_event: int | None = None
        self._plan_map_stamp: int | None = None  # newest map stamp since the plan was issued
        self._maps = 0
        self._not_before = 0.0
        self._goals = 0
        self._failures, self._last_failure, self._failed = 0, "", False
        self._last_plan_time = float("nan")
        self._drops_at_last_report = 0

        self._last_map: Header | None = None
        self._plan_pub = self.create_lifecycle_publisher(Path, "plan", qos.LATCHED)
        self._goal_pub = self.create_lifecycle_publisher(PoseStamped, "goal", qos.LATCHED)
        self._queries = UncertaintyQueries(self)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        self.create_timer(self._settings.diagnostics_period, self._publish_diagnostics)
        # Mission control: its services, topic and the mapper's counts, made at configure
        # (the base destroys them at cleanup); the pilot is issued when the mission starts.
        self._mission = MissionServices(self, mission, self._lock, self._settings.mapper_name,
                                        self._on_mission_change, self._map_counted)
        self._std_statistic = mission.std_statistic if mission.std_threshold else None
        if self._settings.autostart_mission:
            self._mission.start()
        self._worker = threading.Thread(target=self._work, name=f"{self.get_name()}_worker",
                                        daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"{self._settings.mode} {self._planner_name} planning in {self._workspace!r}; "
            f"pilot survey of {len(pilot)} waypoints; mission {self._mission.control.state}")

    def _activate(self) -> None:
        # A robot's odometry may be best-effort: qos_overrides./<odom>.subscription.* (as the
        # ingest's sensors).
        self.create_subscription(Odometry, "odom", self._on_odom, qos.overridable(qos.ODOMETRY),
                                 qos_overriding_options=QoSOverridingOptions
                                 .with_default_policies())
        self.create_subscription(PointCloud2, "map", self._on_map, qos.LATCHED)
        self.create_subscription(PointCloud2, "uncertainty/response", self._on_response,
                                 qos.QUERY)
        self._fleet.activate()
        with self._lock:
            self._active = True
            # The latched map comes again to the new subscription: the same one is no news.
            self._replayed_map = self._last_map
            if self._path is not None and not self._path_sent:
                self._send_plan()
            self._lock.notify_all()

    def _deactivate(self) -> None:
        with self._lock:
            self._active = False
            self._queries.fail("deactivated")
            self._lock.notify_all()

    def _cleanup(self) -> None:
        if self._worker is not None:
            with self._lock:
                self._stopping = True
                self._queries.fail("shutting down")
                self._lock.notify_all()
            self._worker.join(timeout=1.0)
            self._worker = None

    # ---------------------------------------------------------------- parameters
    def _apply_settings(self, settings: PlannerSettings) -> None:
        with self._lock:
            self._settings = settings
            self._lock.notify_all()

    def _apply_input_check(self, config: InputCheckConfig) -> None:
        with self._lock:
            self._inputs.config = config

    # ---------------------------------------------------------------- callbacks
    def _on_odom(self, message: Odometry) -> None:
        t, x, y, z, yaw = msg.odometry_to_pose(message)
        with self._lock:
            inputs = self._inputs
            drops, resets = inputs.total, inputs.clock_resets
            position = inputs.position(message.header.frame_id, (x, y, z),
                                       msg.odometry_to_orientation(message), t,
                                       time.monotonic())
            if inputs.total != drops:
                self._warn_dropped()
            if inputs.clock_resets != resets:  # the old clock's map stamps mean nothing now
                self._plan_map_stamp = None
                self.get_logger().warning(f"odometry clock reset to {t:.6f} s "
                                          f"[{inputs.clock_resets} so far]")
            if position is None:
                return
            if self._position is None:  # a map counted before any pose may wait for this
                self._lock.notify_all()
            self._position, self._heading = position, yaw
            self._fleet.observe(position)
            self._mission.advance(lambda: self._mission.control.observe_pose(t, (x, y, z)))
            if self._state in (PILOT, DRIVING, HOMING) and \
                    self._progress.update(self._position):
                self._events += 1
                self._state, self._reached_event = WAITING, self._events
                self._reached_stamp = msg.time_to_nanoseconds(message.header.stamp)
                self._lock.notify_all()

    def _on_map(self, message: PointCloud2) -> None:
        if message.width * message.height == 0:  # the mapper was reset: no map
            return
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        with self._lock:
            replayed, self._replayed_map = self._replayed_map, None
            if replayed is not None and message.header == replayed:
                return
            self._last_map = message.header
            if not self._inputs.map_frame(message.header.frame_id):
                self._warn_dropped()
                return
            std = math.nan if self._std_statistic is None else std_statistic(
                msg.cloud_to_arrays(message)["std"], self._std_statistic)
            self._mission.map_received(stamp, std)

    def _map_counted(self, stamp: int) -> None:
        """A map (stamped ``stamp`` ns) the mission has counted; call with the lock."""
        self._events += 1
        self._map_event = self._events
        self._maps += 1
        self._plan_map_stamp = max(stamp, self._plan_map_stamp or 0)
        if self._state == PILOT and self._settings.skip_pilot:  # restarted: plan on this map
            self._state, self._reached_event, self._reached_stamp = WAITING, self._events, 0
        self._lock.notify_all()

    def _on_response(self, message: PointCloud2) -> None:
        unreadable = self._queries.on_response(message)
        if unreadable is not None:
            with self._lock:
                self._inputs.refuse(RESPONSE_MALFORMED, unreadable)
                self._warn_dropped()

    def _warn_dropped(self) -> None:
        """Warn (throttled per reason) about the input just refused; call with the lock."""
        reason = self._inputs.last
        self.warn_throttled(reason, f"dropped ({reason}): {self._inputs.details[reason]} "
                                    f"[{self._inputs.dropped[reason]} so far]")

    # ---------------------------------------------------------------- planning
    def _ready(self) -> bool:
        """Whether to plan now (call with the lock held).

        Lockstep needs a map newer than the moment the goal was reached: one handled after
        the odometry that reached it, or, since a map can overtake a burst of odometry, one
        that arrived during this plan and holds samples at least as new as that odometry.
        """
        if (not self._active or self._state != WAITING or self._position is None
                or self._map_event is None or self._mission.control.state not in MOVING):
            return False
        if time.monotonic() < self._not_before:
            return False
        if self._settings.mode == REALTIME or self._map_event > self._reached_event:
            return True
        return self._plan_map_stamp is not None and self._plan_map_stamp >= self._reached_stamp

    def _work(self) -> None:
        while True:
            with self._lock:
                while not (self._stopping or self._ready()):
                    wait = self._not_before - time.monotonic()
                    self._lock.wait(timeout=wait if wait > 0 else None)
                if self._stopping:
                    return
                if self._mission.control.state == RETURNING:  # the map of the leg home is in
                    self._state = HOLDING
                    self._mission.advance(self._mission.control.home_reached)
                    continue
                self._state = PLANNING
                position, heading = self._position.copy(), self._heading
            start = time.perf_counter()
            state = self._rng.bit_generator.state
            try:
                waypoints = self._fleet.plan(position, self._predict_std, heading)
                self._workspace.check(waypoints, "planned waypoint")
            except Exception as error:  # noqa: BLE001 - any failure: rewind, report, retry
                # The next attempt draws the same candidates, as the ROS-free mission would.
                self._rng.bit_generator.state = state
                with self._lock:
                    if self._stopping:
                        return
                    self._state = WAITING
                    if not self._active:  # deactivated: plan again once active
                        continue
                    self._not_before = time.monotonic() + RETRY_PERIOD
                    self._failures += 1
                    self._failed, self._last_failure = True, str(error)
                self.warn_throttled("planning", f"planning failed, retrying: {error}")
                continue
            with self._lock:
                self._last_plan_time = time.perf_counter() - start
                self._failed = False
                if self._mission.control.state not in RUNNING:  # paused or ended meanwhile
                    continue
                self._mission.advance(self._mission.control.planning_started)
                self._issue(waypoints, position, DRIVING)

    def _predict_std(self, points: np.ndarray, planned: np.ndarray | None) -> np.ndarray:
        """The mapper's predictive std (of a new measurement) at ``points`` (N, 2), given
        the teammates' samples at ``planned`` (T, 2)."""
        with self._lock:
            timeout, frame = self._settings.query_timeout, self._settings.map_frame
        return self._queries.ask(points, timeout, frame, planned)

    def _issue(self, waypoints: np.ndarray, position: np.ndarray | None, state: str) -> None:
        """Publish ``waypoints`` (K, 2) as the plan and its last pose as the goal (while
        inactive: at the next activation)."""
        yaws = None if position is None else cv.arrival_headings(position, waypoints)
        # Under the lock, so that progress is measured against the plan from its first
        # odometry on, and nothing is published once the node is deactivated or cleaned up.
        with self._lock:
            if self._stopping:
                return
            frame, radius = self._settings.map_frame, self._settings.goal_radius
            self._waypoints, self._progress = waypoints, PlanProgress(waypoints, radius)
            self._state, self._plan_map_stamp = state, None
            if state == DRIVING:
                self._goals += 1
            header = Header(stamp=self.get_clock().now().to_msg(), frame_id=frame)
            self._path = cv.path_from_waypoints(header, waypoints, yaws,
                                                *self._settings.vertical)
            self._path_sent = False
            if self._active:
                self._send_plan()
        self._fleet.issued(waypoints)
        self._publish_diagnostics()

    def _send_plan(self) -> None:
        """Publish the plan and its goal (an empty plan, a hold: no goal; call with the lock,
        while active)."""
        self._plan_pub.publish(self._path)
        if self._path.poses:
            self._goal_pub.publish(self._path.poses[-1])
        self._path_sent = True

    # ---------------------------------------------------------------- mission
    def _on_mission_change(self, previous: str) -> None:
        """Turn a change of the mission's state into a plan; called with the lock held."""
        control = self._mission.control
        if previous == IDLE and control.state not in (IDLE, ABORTED):
            self._issue(self._pilot, None, PILOT)
        elif control.state == RETURNING:
            position = None if self._position is None else self._position.copy()
            self._issue(control.home[None, :], position, HOMING)
        elif previous == PAUSED and control.state in MOVING:
            self._resume()
        elif control.state in (PAUSED, ABORTED) or (control.state == DONE
                                                    and previous != RETURNING):
            if control.state == PAUSED:
                self._paused_state = self._state
            self._hold()

    def _hold(self) -> None:
        """An empty plan: the vehicle stops where it is (pause, hold, abort)."""
        with self._lock:
            if self._stopping:
                return
            self._state, self._progress = HOLDING, None
            self._path = Path(header=Header(stamp=self.get_clock().now().to_msg(),
                                            frame_id=self._settings.map_frame))
            self._path_sent = False
            if self._active:
                self._send_plan()
        self._fleet.issued(np.empty((0, 2)))
        self._publish_diagnostics()

    def _resume(self) -> None:
        """Back to the state a pause left: the rest of its plan from where the vehicle is,
        or (between plans) the next plan when it is due."""
        state, self._state = self._paused_state, WAITING
        if state in (PILOT, DRIVING, HOMING) and self._position is not None:
            position = self._position.copy()
            self._issue(remaining_plan(self._waypoints, position), position, state)
        self._lock.notify_all()

    # ---------------------------------------------------------------- diagnostics
    def _publish_diagnostics(self) -> None:
        with self._lock:
            if self._stopping:
                return
            goal = self._waypoints[-1]
            record = PlannerStatus(
                state=self._state, mode=self._settings.mode, planner=self._planner_name,
                goals_issued=self._goals, plan_waypoints=len(self._waypoints),
                goal=(goal[0], goal[1]),
                position=None if self._position is None else tuple(self._position[:2]),
                maps_received=self._maps, failures=self._failures,
                clock_resets=self._inputs.clock_resets, last_failure=self._last_failure,
                last_plan_time=self._last_plan_time,
                dropped={reason: self._inputs.dropped[reason] for reason in REASONS},
                lifecycle_state=self.lifecycle_state,
                mission_state=self._mission.control.state,
                mission_reason=self._mission.control.reason)
            new_drops = self._inputs.total - self._drops_at_last_report
            self._drops_at_last_report = self._inputs.total
            if self._failed:
                level, text = DiagnosticStatus.WARN, f"planning failed: {self._last_failure}"
            elif new_drops:
                level, text = DiagnosticStatus.WARN, (f"{self._state}; {new_drops} input(s) "
                                                      f"dropped since the last report")
            elif self._position is None:
                level, text = DiagnosticStatus.OK, f"{self._state} (no odometry yet)"
            else:
                level, text = DiagnosticStatus.OK, self._state
            self._diagnostics_pub.publish(status_array(self, [node_status(self, level, text,
                                                                          record)]))
            self._mission.publish()


def main(args=None) -> None:  # every callback is short (planning runs on its own thread)
    run_node(PlannerNode, "planner", args)


if __name__ == "__main__":
    main()
