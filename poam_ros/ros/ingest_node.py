"""ROS 2 node ``sensor_ingest``: sonar readings and odometry in, georeferenced sample batches out.

A thin adapter around :class:`poam_ros.ingest.Ingest`: callbacks convert messages and hand
the numbers to the core with the wall-clock time; batches the core cuts (at the end of
each plan, or on the size/age limits) are checked (swath filters, workspace, duplicates)
on a worker thread, so that filtering a large batch never stalls the subscriptions, and go
out on ``samples`` in order. A lock keeps the core's state consistent between the two
threads. Drops are counted per reason in ``/diagnostics`` and warned about at most every
few seconds per reason; so are clock resets (a stream's stamps jumped and stayed: sim time
restarted, a bag looped), per stream.

Topics (names relative, remappable):

* subscribes ``odom`` (nav_msgs/Odometry), ``sonar/range`` (sensor_msgs/Range),
  ``sonar/swath`` (sensor_msgs/PointCloud2) and ``fix`` (sensor_msgs/NavSatFix): reliable,
  depth 2000 by default. A robot whose drivers publish best-effort sets, per topic, e.g.
  ``qos_overrides./sonar/range.subscription.reliability: best_effort`` (also ``depth`` and
  ``history``); the names hold the fully resolved topic, so a namespace or remapping
  changes them. Odometry is in ``world_frame``, or in ``odom_frame`` placed by the static
  transform ``map_from_odom`` (a parameter: tf2 is not used; on a robot with tf2 the same
  transform is on ``/tf_static``, which this node does not read). A ``fix`` (GNSS at the
  surface, a USBL fix relayed by the vehicle) resets the horizontal position from its
  stamp on; it is not fused (robot_localization's job on a robot) and needs the map's
  geodetic anchor ``geo.*``; the antenna's or transponder's lever arm is not applied.
* subscribes each scalar channel of ``channels`` on its topic (``channel_topics``, default the
  channel's name) as its message type (``channel_types``: sensor_msgs/Temperature,
  sensor_msgs/FluidPressure or a one-point PointCloud2 with a field named like the
  channel; :mod:`poam_ros.ingest.channels`), with the sensor topics' QoS.
* subscribes ``imu`` (sensor_msgs/Imu) with ``imu_attitude`` and ``depth``
  (sensor_msgs/FluidPressure) with ``depth_from_pressure``, with the sensor topics' QoS:
  the vehicle's attitude and depth from them instead of the odometry's
  (:mod:`poam_ros.ingest.attitude_depth`).
* subscribes ``plan`` (nav_msgs/Path): reliable, transient local, depth 1.
* publishes ``samples`` (sensor_msgs/PointCloud2 in the world frame, float32 x, y, z with
  z the seafloor elevation; float64 with ``float64_samples``): reliable, depth 10, stamped
  with the time the batch runs up to. A decision point with no valid sample still
  publishes an empty cloud (width 0), so the mission loop goes on.
* publishes ``~/progress`` (diagnostic_msgs/DiagnosticStatus, :mod:`poam_ros.ros.progress`)
  while active: per sensor topic, the newest stamp taken off its queue; a lockstep
  simulator's clock stands while it has ``max_backlog`` messages of a topic still to take
  (:mod:`poam_ros.sim.pacing`).
* publishes ``/diagnostics`` (diagnostic_msgs/DiagnosticArray) once a second and after each
  batch: counts of samples accepted and published, batches, readings waiting, and
  ``dropped.<reason>`` for every reason of :mod:`poam_ros.ingest.reasons`, plus
  ``dropped.lost_in_transport``: sensor messages that never reached the callbacks (a
  subscription queue that overflowed, or best-effort transport), seen as gaps in each
  publisher's DDS sequence numbers; and
  ``clock_resets.<stream>`` (every stream, :mod:`poam_ros.ingest.streams`) with
  ``stamps_held``, the messages whose stamps are suspect until the next ones tell a glitch
  from a clock change, or held until a reset is resolved across the streams; ``fixes_applied``
  and ``last_fix_correction`` (m); per channel ``channel.<name>.received``, ``.placed`` and
  ``.dropped`` (readings). A drop or a reset in the last period makes the status WARN.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry, Path
from rclpy.clock import Clock, ClockType
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import FluidPressure, Imu, NavSatFix, PointCloud2, Range, Temperature
from std_msgs.msg import Header

from poam_ros.diagnostics import LOST_IN_TRANSPORT, IngestStatus
from poam_ros.geo import GeoConfig, GeoReference, resolve_workspace
from poam_ros.ingest import Ingest, IngestConfig, SequenceGaps
from poam_ros.ingest import feeders as fd
from poam_ros.ingest.channels import CHANNEL_TYPES
from poam_ros.ingest.reasons import NO_RETURN, OUTSIDE_WORKSPACE, REASONS
from poam_ros.params import ConfigError
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.parameters import add_config_callback, declare_config
from poam_ros.ros.progress import ProgressReport
from poam_ros.ros.run import run_node
from poam_ros.workspace import Workspace, WorkspaceConfig

# Drops that are the survey's nature, not a fault: logged as information.
EXPECTED_DROPS = {OUTSIDE_WORKSPACE: "expected where a leg crosses the workspace boundary",
                  NO_RETURN: "the sonar heard no seafloor (REP-117 +inf)"}

POLL_PERIOD = 0.05  # s, wall: grace periods and pending timeouts are checked this often
DIAGNOSTICS_PERIOD = 1.0  # s, wall
# the configured inputs' message types (poam_ros.ingest.feeders.input_feeders) -> classes
_MESSAGES = {CHANNEL_TYPES["temperature"]: Temperature,
             CHANNEL_TYPES["fluid_pressure"]: FluidPressure, CHANNEL_TYPES["cloud"]: PointCloud2,
             fd.IMU_TYPE: Imu}


class IngestNode(ManagedNode):
    """The sensor ingest, a managed node (:mod:`poam_ros.ros.managed`): configure builds the
    core, activate subscribes, deactivate stops listening and publishes the batches already
    cut, keeping the core (its poses, the readings waiting to be placed, the plan's
    progress). ``node_kwargs`` go to :class:`rclpy.node.Node`."""

    core: Ingest | None = None
    _worker: ThreadPoolExecutor | None = None

    def __init__(self, node_name: str = "sensor_ingest", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _configure(self) -> None:
        # channels fix the samples' columns, so they are set once
        config = declare_config(self, IngestConfig, read_only=[
            "filter_backend", "odom_frame", "map_from_odom", "channels", "channel_topics",
            "channel_types", "channel_frames", "imu_attitude", "depth_from_pressure"])
        georeference = GeoReference.from_config(declare_config(
            self, GeoConfig, "geo", read_only=[spec.name for spec in GeoConfig.specs()]))
        workspace_config = resolve_workspace(declare_config(
            self, WorkspaceConfig, "workspace",
            read_only=[spec.name for spec in WorkspaceConfig.specs()]), georeference)
        try:  # a self-intersecting workspace, or filter_backend open3d where it is missing
            self.core = Ingest(config, Workspace.from_config(workspace_config), georeference)
        except ValueError as error:
            raise ConfigError(str(error)) from error
        if georeference is None:
            self.get_logger().info("no geodetic anchor (geo.anchor none): fix messages will "
                                   "be dropped (fix_no_anchor)")
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest_batches")
        add_config_callback(self, IngestConfig, self._reconfigure)
        self._samples_pub = self.create_lifecycle_publisher(PointCloud2, "samples", qos.SAMPLES)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        self.lost_in_transport = 0  # messages, not samples
        self._seen_drops = dict(self.core.drops.counts)
        self._seen_resets = dict(self.core.streams.clock_resets)
        self._drops_at_last_report = 0
        self._resets_at_last_report = 0
        self._last_plan: Path | None = None
        self._replayed_plan: Path | None = None
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _activate(self) -> None:
        # The sensors' sequence numbers went on while nobody listened: not lost in transport.
        self._gaps = SequenceGaps()
        # The latched plan comes again to the new subscription: the same one is no new plan.
        self._replayed_plan = self._last_plan
        overridable = QoSOverridingOptions.with_default_policies()
        inputs = [(Odometry, "odom", fd.feed_odometry), (Range, "sonar/range", fd.feed_range),
                  (PointCloud2, "sonar/swath", fd.feed_swath), (NavSatFix, "fix", fd.feed_fix)]
        inputs += [(_MESSAGES[feeder.msgtype], feeder.topic, feeder.feed)
                   for feeder in fd.input_feeders(self.core.config)]
        resolved = {topic: self.resolve_topic_name(topic) for _, topic, _ in inputs}
        # a lockstep simulator's clock waits for it: out before the subscriptions match
        self._progress = ProgressReport(self, list(resolved.values()))
        for msg_type, topic, feed in inputs:
            self.create_subscription(msg_type, topic,
                                     partial(self._on_input, topic, feed, resolved[topic]),
                                     qos.overridable(qos.SENSOR_BACKLOG),
                                     qos_overriding_options=overridable)
        self.create_subscription(Path, "plan", self._on_plan, qos.LATCHED)
        self.create_timer(POLL_PERIOD, self._on_poll,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _deactivate(self) -> None:
        """The batches already cut go out before the samples publisher stops."""
        if self._worker is not None:
            self._worker.submit(lambda: None).result()

    def _cleanup(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        self.core = None

    # -------------------------------------------------------------------- callbacks

    def _reconfigure(self, config: IngestConfig) -> None:
        with self._lock:
            self.core.configure(config)

    def _on_input(self, topic: str, feed, resolved: str, message, info) -> None:
        """A sensor message: ``feed(core, message, now)`` (:mod:`poam_ros.ingest.feeders`)
        reads it and hands it over; taken off ``resolved``, it counts as progress."""
        lost = self._count_lost(topic, info)
        with self._lock:
            if lost and topic == "odom":  # waypoints may have been passed unseen
                self.core.batcher.odometry_lost()
            feed(self.core, message, time.monotonic())
        self._progress.take(resolved, message.header)
        self._after()

    def _on_plan(self, path: Path) -> None:
        replayed, self._replayed_plan = self._replayed_plan, None
        if replayed is not None and path == replayed:
            return
        self._last_plan = path
        with self._lock:
            fd.feed_plan(self.core, path, time.monotonic())
        self._after()

    def _on_poll(self) -> None:
        with self._lock:
            self.core.poll(time.monotonic())
        self._after()
        self._progress.poll()

    def _count_lost(self, topic: str, info) -> int:
        """Messages skipped in the publisher's numbering (overflowed or dropped in DDS),
        counted and returned."""
        skipped = self._gaps.saw((topic, bytes(info["publisher_gid"]["data"])),
                                 info.get("publication_sequence_number"))
        if skipped:
            self.lost_in_transport += skipped
            self.warn_throttled(LOST_IN_TRANSPORT,
                                f"{skipped} {topic} message(s) lost before the ingest took "
                                f"them (subscription queue overflow or best-effort "
                                f"transport) [{self.lost_in_transport} so far]")
        return skipped

    # --------------------------------------------------------------------- outputs

    def _after(self) -> None:
        """Hand cut batches to the worker; warn (throttled) about reasons whose count grew
        and about clock resets."""
        with self._lock:
            raw_batches = self.core.batcher.take_raw_batches()
            dropped = self.core.drops.counts
            grown = {reason: count for reason, count in dropped.items()
                     if count > self._seen_drops.get(reason, 0)}
            if grown:
                self._seen_drops = dict(dropped)
            details = {reason: self.core.drops.details.get(reason, "") for reason in grown}
            resets = self.core.streams.clock_resets
            reset = {stream: (count, self.core.streams.reset_details[stream])
                     for stream, count in resets.items()
                     if count > self._seen_resets.get(stream, 0)}
            if reset:
                self._seen_resets = dict(resets)
        for stream, (count, detail) in reset.items():
            self.warn_throttled(f"clock_reset.{stream}", f"{detail} [{count} so far]")
        for raw in raw_batches:
            self._worker.submit(self._finish_and_publish, raw)
        for reason, count in grown.items():
            if reason in EXPECTED_DROPS:
                self.warn_throttled(reason, f"not mapped ({reason}, {EXPECTED_DROPS[reason]}): "
                                            f"{details[reason]} [{count} so far]", expected=True)
            else:
                self.warn_throttled(reason,
                                    f"dropped ({reason}): {details[reason]} [{count} so far]")

    def _finish_and_publish(self, raw) -> None:
        """On the worker thread, one batch at a time, in the order they were cut."""
        batch = self.core.batcher.finish(raw)
        with self._lock:
            self.core.batcher.record(batch)
            config = self.core.config
        header = Header(frame_id=config.world_frame, stamp=cv.seconds_to_time(batch.stamp))
        self._samples_pub.publish(cv.points_to_cloud(header, batch.points,
                                                     float64=config.float64_samples,
                                                     channels=config.channels))
        self._publish_diagnostics()  # the counts with this batch: it may be the mission's last

    def _publish_diagnostics(self) -> None:
        with self._lock:
            self._publish_diagnostics_locked()

    def _publish_diagnostics_locked(self) -> None:
        core = self.core
        total = self.lost_in_transport + sum(count for reason, count in core.drops.counts.items()
                                             if reason not in EXPECTED_DROPS)
        resets = sum(core.streams.clock_resets.values())
        news = []
        if total > self._drops_at_last_report:  # the expected drops are no cause for a warning
            news.append(f"{total - self._drops_at_last_report} input(s) dropped")
        if resets > self._resets_at_last_report:
            news.append(f"{resets - self._resets_at_last_report} clock reset(s)")
        level = DiagnosticStatus.WARN if news else DiagnosticStatus.OK
        message = f"{' and '.join(news)} in the last period" if news else "ok"
        self._drops_at_last_report = total
        self._resets_at_last_report = resets
        batcher, streams, fixes = core.batcher, core.streams, core.position_fixes
        received, placed = core.channels.received, core.placement.channel_placed
        reached, waypoints = batcher.plan_progress
        channels = core.config.channels
        latest = core.odometry.poses.latest
        record = IngestStatus(
            samples_accepted=batcher.accepted, samples_published=batcher.published,
            batches_published=batcher.batches, batch_size=batcher.size,
            pending_readings=core.placement.pending, poses_kept=len(core.odometry.poses),
            latest_pose_time=latest[0] if latest else None,
            plan_waypoints_reached=reached, plan_waypoints=waypoints,
            flushes_on_grace=batcher.flushes_on_grace, stamps_held=streams.held,
            fixes_applied=fixes.applied, last_fix_correction=fixes.last_correction,
            dropped={LOST_IN_TRANSPORT: self.lost_in_transport,
                     **{reason: core.drops.counts.get(reason, 0) for reason in REASONS}},
            clock_resets={stream: streams.clock_resets.get(stream, 0)
                          for stream in streams.names},
            channel_received={name: received[name] for name in channels},
            channel_placed={name: placed[name] for name in channels},
            channel_dropped={name: received[name] - placed[name]
                             - core.channel_waiting(name) for name in channels},
            lifecycle_state=self.lifecycle_state)
        self._diagnostics_pub.publish(status_array(self, [node_status(self, level, message,
                                                                      record)]))


def main(args=None) -> None:
    run_node(IngestNode, "sensor_ingest", args)


if __name__ == "__main__":
    main()
