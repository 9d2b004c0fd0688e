"""The sensor_ingest node over real DDS: lockstep batches equal SurveySimulator.follow, bad
input is counted in /diagnostics and never published, best-effort sensors via QoS overrides,
floods stay bounded, and the parameter file's sections are the nodes' declared parameters."""

from __future__ import annotations

import math
from pathlib import Path as FilePath

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import Quaternion  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import (  # noqa: E402
    FluidPressure,
    Imu,
    NavSatFix,
    NavSatStatus,
    PointCloud2,
    PointField,
    Range,
    Temperature,
)
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import IngestStatus  # noqa: E402
from poam_ros.geo import GeoReference  # noqa: E402
from poam_ros.ingest import reasons as ig  # noqa: E402
from poam_ros.params.files import load_node_parameters  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.sim.default_terrain import default_terrain  # noqa: E402
from poam_ros.sim.simulator import SurveySimulator  # noqa: E402

CONFIG = FilePath(__file__).resolve().parents[2] / "config" / "poam_ros.yaml"
START = [30.0, -30.0, math.pi]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
LIMITS = {"min_range": 1.0, "max_range": 2000.0, "field_of_view": 0.0}


class Tester:
    """Plays the other nodes: sends plans and sensor messages, keeps batches and diagnostics."""

    def __init__(self, make_node, sensor_qos=RELIABLE):
        self.node = make_node("tester")
        self.plan = self.node.create_publisher(Path, "plan", LATCHED)
        self.odom = self.node.create_publisher(Odometry, "odom", sensor_qos)
        self.range = self.node.create_publisher(Range, "sonar/range", sensor_qos)
        self.swath = self.node.create_publisher(PointCloud2, "sonar/swath", sensor_qos)
        self.fix = self.node.create_publisher(NavSatFix, "fix", sensor_qos)
        self.batches, self.diagnostics = [], []
        self.node.create_subscription(PointCloud2, "samples", self.batches.append,
                                      QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                      10)
        self.counts: IngestStatus | None = None  # the newest samples status
        self.levels: list[bytes] = []  # of every samples status received

    def _on_diagnostics(self, message):
        for status in message.status:
            record = msg.status_record(status)
            if isinstance(record, IngestStatus):
                self.counts = record
                self.levels.append(status.level)

    def count(self, name, entry=None):
        """The newest status's field ``name`` (its ``entry`` of a counter per reason,
        stream or channel); -1 before a status came."""
        if self.counts is None:
            return -1
        value = getattr(self.counts, name)
        return value if entry is None else value.get(entry, -1)

    def send_plan(self, waypoints, stamp=0.0):
        header = Header(frame_id="map", stamp=cv.seconds_to_time(stamp))
        self.plan.publish(cv.path_from_waypoints(header, np.asarray(waypoints, dtype=float)))

    def send_pose(self, t, x, y=0.0, frame_id="map", child="base_link"):
        header = Header(frame_id=frame_id, stamp=cv.seconds_to_time(t))
        self.odom.publish(cv.odometry_from_state(header, child, (x, y), 0.0, z=300.0))

    def send_fix(self, t, latitude, longitude, status=NavSatStatus.STATUS_FIX):
        header = Header(frame_id="usbl", stamp=cv.seconds_to_time(t))
        self.fix.publish(NavSatFix(header=header, status=NavSatStatus(status=status),
                                   latitude=latitude, longitude=longitude))

    def send_range(self, t, distance, frame_id="sonar_link"):
        header = Header(frame_id=frame_id, stamp=cv.seconds_to_time(t))
        self.range.publish(cv.range_from_reading(header, distance, **LIMITS))


@pytest.mark.parametrize("float64", [False, True])
def test_lockstep_batches_over_dds_are_what_follow_makes(start_node, make_node, spin_until,
                                                         float64):
    vehicle = start_node(SimulatedAuvNode, time_scale=25.0, seed=5, start_pose=START)
    ingest = start_node(IngestNode, float64_samples=float64)
    tester = Tester(make_node)
    # The third plan is where the vehicle already is: an empty batch, at once.
    plans = [[[15.0, -28.0], [12.0, -25.0]], [[12.0, -18.0]], [[12.0, -18.0]]]
    reference = SurveySimulator(default_terrain((-31, 31, -31, 31)), seed=5,
                                start_pose=START)
    for number, plan in enumerate(plans):
        log = reference.follow(plan)
        tester.send_plan(plan)
        assert spin_until(lambda: len(tester.batches) > number, vehicle, ingest, tester.node,
                          timeout=20.0)
        batch = tester.batches[number]
        points = msg.cloud_to_points(batch)
        assert batch.header.frame_id == "map"
        assert msg.time_to_seconds(batch.header.stamp) == pytest.approx(log.pose_times[-1],
                                                                       abs=1e-9)
        assert len(points) == len(log) and (number < 2 or len(points) == 0)
        # float32 samples round x, y by ~1e-6 m at 30 m and z by ~6e-5 m near -1500 m;
        # float64 ones round nothing. Range.range is float32 either way: ~1e-4 m at 1700 m.
        np.testing.assert_allclose(points[:, :2], log.positions, rtol=0,
                                   atol=1e-9 if float64 else 5e-6)
        np.testing.assert_allclose(points[:, 2], log.elevations, rtol=0, atol=2e-4)
    spin_until(lambda: False, vehicle, ingest, tester.node, timeout=0.3)
    assert len(tester.batches) == len(plans)
    assert not ingest.core.drops.counts and ingest.core.batcher.flushes_on_grace == 0


def test_a_batch_s_counts_go_out_with_it(start_node, make_node, spin_until, monkeypatch):
    """The status follows each batch at once, not at the next period: a mission's last batch
    can end it before then (the periodic status is put off here for an hour)."""
    from poam_ros.ros import ingest_node

    monkeypatch.setattr(ingest_node, "DIAGNOSTICS_PERIOD", 3600.0)
    vehicle = start_node(SimulatedAuvNode, time_scale=25.0, seed=5, start_pose=START)
    ingest = start_node(IngestNode)
    tester = Tester(make_node)
    tester.send_plan([[15.0, -28.0]])
    assert spin_until(lambda: tester.batches, vehicle, ingest, tester.node, timeout=20.0)
    published = len(msg.cloud_to_points(tester.batches[0]))
    assert spin_until(lambda: tester.count("samples_published") == published > 0, vehicle,
                      ingest, tester.node, timeout=5.0)


def test_bad_input_is_counted_and_never_published(start_node, make_node, spin_until):
    ingest = start_node(IngestNode, flush_grace=0.2, pending_timeout=0.5, **{
        "workspace.vertices": [-4.0, -30.0, 30.0, -30.0, 30.0, 30.0, -4.0, 30.0]})
    tester = Tester(make_node)
    assert spin_until(lambda: tester.odom.get_subscription_count() and
                      tester.range.get_subscription_count() and
                      tester.swath.get_subscription_count(), ingest, tester.node)
    tester.send_range(-5.0, 310.0)                      # stale: before every pose
    for i in range(21):                                 # 0..10 s along x from -5 to 5 m
        tester.send_pose(0.5 * i, -5.0 + 0.5 * i)
    tester.send_pose(10.2, 50.0)                        # a 45 m jump
    tester.send_pose(10.3, 5.3, frame_id="odom")        # wrong frame
    tester.send_pose(9.0, 4.0)                          # out of order
    tester.send_range(0.5, 310.0)                       # at x = -4.5: outside the workspace
    tester.send_range(1.0, 310.0)                       # good: (-4.0, 0, -10)
    tester.send_range(2.0, float("nan"))
    tester.send_range(2.2, float("inf"))                # no return (REP-117)
    tester.send_range(2.5, -1.0)
    tester.send_range(3.0, 0.5)                         # below the message's min_range
    tester.send_range(3.5, 310.0, frame_id="base_link")
    tester.send_range(4.0, 320.0)                       # good: (-1.0, 0, -20)
    tester.send_range(4.0, 320.0)                       # duplicate
    tester.send_range(3.9, 320.0)                       # out of order
    tester.send_range(12.0, 320.0)                      # ahead of every pose: none will come
    broken = cv.points_to_cloud(Header(frame_id="sonar_link", stamp=cv.seconds_to_time(5.0)),
                                np.zeros((4, 3)))
    broken.row_step = 7
    tester.swath.publish(broken)                        # malformed
    tester.swath.publish(cv.points_to_cloud(Header(frame_id="camera"), np.zeros((3, 3))))
    tester.send_plan([[5.0, 0.0]])                      # reached at t = 10 s
    assert spin_until(lambda: tester.batches, ingest, tester.node, timeout=10.0)
    points = msg.cloud_to_points(tester.batches[0])
    np.testing.assert_allclose(points, [[-4.0, 0.0, -10.0], [-1.0, 0.0, -20.0]])
    expected = {ig.STALE_STAMP: 1, ig.POSE_JUMP: 1, ig.POSE_WRONG_FRAME: 1,
                ig.POSE_OUT_OF_ORDER: 1, ig.OUTSIDE_WORKSPACE: 1, ig.NONFINITE_RANGE: 1,
                ig.NO_RETURN: 1, ig.NEGATIVE_RANGE: 1, ig.RANGE_OUT_OF_LIMITS: 1, ig.WRONG_FRAME: 4,
                ig.DUPLICATE: 1, ig.OUT_OF_ORDER: 1, ig.NO_POSE: 1, ig.MALFORMED: 1}
    assert spin_until(lambda: all(tester.count("dropped", reason) == count
                                  for reason, count in expected.items()),
                      ingest, tester.node, timeout=5.0), tester.counts
    assert tester.count("samples_published") == 2 and tester.count("batches_published") == 1
    assert ingest.core.drops.counts == expected


def test_odometry_in_odom_and_a_usbl_fix_place_the_samples_in_map(start_node, make_node,
                                                                   spin_until):
    """Odometry in ``odom`` (map <- odom: a quarter turn, then 100 m east and 50 m north) and
    a USBL fix at t = 5 s placing the vehicle 100 m east of its odometry: the sounding before
    the fix lies on the odometry's track in map, the one after 100 m east of it; no pose is
    dropped as a jump, and a NO_FIX message is counted."""
    anchor = GeoReference.local(59.0, 10.0)
    ingest = start_node(IngestNode, flush_grace=0.2, odom_frame="odom",
                        map_from_odom=[100.0, 50.0, 0.0, math.pi / 2], **{
                            "geo.anchor": "latlon", "geo.origin_latitude": 59.0,
                            "geo.origin_longitude": 10.0,
                            "workspace.vertices": [0.0, 0.0, 300.0, 0.0, 300.0, 100.0,
                                                   0.0, 100.0]})
    tester = Tester(make_node)
    assert spin_until(lambda: tester.odom.get_subscription_count() and
                      tester.fix.get_subscription_count(), ingest, tester.node)
    for i in range(12):                    # odom: x from -5 m at 1 m/s; map: (100, 45 + t)
        tester.send_pose(0.5 * i, -5.0 + 0.5 * i, frame_id="odom")
    lon, lat = anchor.to_lonlat(200.0, 50.0)  # at t = 5 s the odometry says (100, 50)
    tester.send_fix(4.0, 0.0, 0.0, status=NavSatStatus.STATUS_NO_FIX)
    tester.send_fix(5.0, float(lat), float(lon))
    assert spin_until(lambda: ingest.core.position_fixes.applied == 1, ingest, tester.node,
                      timeout=10.0)
    for i in range(12, 21):
        tester.send_pose(0.5 * i, -5.0 + 0.5 * i, frame_id="odom")
    tester.send_range(1.0, 310.0)
    tester.send_range(8.0, 310.0)
    tester.send_plan([[200.0, 55.0]])      # where the corrected track is at t = 10 s
    assert spin_until(lambda: tester.batches, ingest, tester.node, timeout=10.0)
    assert msg.time_to_seconds(tester.batches[0].header.stamp) == pytest.approx(10.0)
    np.testing.assert_allclose(msg.cloud_to_points(tester.batches[0]),
                               [[100.0, 46.0, -10.0], [200.0, 53.0, -10.0]], atol=1e-4)
    assert spin_until(lambda: tester.count("fixes_applied") == 1 and
                      tester.count("dropped", ig.FIX_NO_FIX) == 1, ingest, tester.node,
                      timeout=5.0), tester.counts
    assert tester.counts.last_fix_correction == pytest.approx(100.0, abs=1e-3)
    assert ingest.core.drops.counts == {ig.FIX_NO_FIX: 1}


def test_a_single_future_stamped_pose_does_not_stop_the_samples(start_node, make_node,
                                                                spin_until):
    """One odometry message stamped far ahead (a GPS time glitch) among good ones is dropped
    as an outlier: the poses after it are kept and the plan's batch holds every sounding."""
    ingest = start_node(IngestNode, flush_grace=0.2)
    tester = Tester(make_node)
    assert spin_until(lambda: tester.odom.get_subscription_count() and
                      tester.range.get_subscription_count(), ingest, tester.node)
    tester.send_plan([[5.0, 0.0]])                      # reached at t = 10 s
    for i in range(21):                                 # 0..10 s along x from -5 to 5 m
        tester.send_pose(0.5 * i, -5.0 + 0.5 * i)
        if i == 10:
            tester.send_pose(5.0 + 1e6, 0.0)            # the same place, 11.6 days ahead
        if i < 20:
            tester.send_range(0.5 * i + 0.25, 310.0)
    assert spin_until(lambda: tester.batches, ingest, tester.node, timeout=10.0)
    points = msg.cloud_to_points(tester.batches[0])
    np.testing.assert_allclose(points[:, 0], np.arange(20) * 0.5 - 4.75, atol=1e-5)
    assert spin_until(lambda: tester.count("dropped", ig.POSE_STAMP_OUTLIER) == 1,
                      ingest, tester.node, timeout=5.0), tester.counts
    assert tester.count("clock_resets", "odom") == 0 and tester.count("stamps_held") == 0
    assert ingest.core.drops.counts == {ig.POSE_STAMP_OUTLIER: 1}


@pytest.mark.parametrize("sonar_lead", [2.0, -2.0])
def test_odometry_and_sonar_clocks_resetting_apart_lose_no_sounding(start_node, make_node,
                                                                     spin_until, sonar_lead):
    """Time restarts for both sensors at once, but the sonar's messages come 2 s ahead of
    the odometry's (or behind): every sounding of either clock is published, placed at its
    own stamp's pose, and each stream's reset is counted once."""
    ingest = start_node(IngestNode, flush_grace=0.2)
    tester = Tester(make_node)
    assert spin_until(lambda: tester.odom.get_subscription_count() and
                      tester.range.get_subscription_count(), ingest, tester.node)
    tester.send_plan([[5.5, 0.0]])  # reached at the last pose, on the new clock
    events = []  # (arrival order, kind, stamp, τ); the vehicle at x = τ - 5 m
    for k in range(22):
        tau = 0.5 * k
        clock = (lambda t: 100.0 + t) if tau <= 5.0 else (lambda t: t - 5.5)
        events.append((tau + max(0.0, sonar_lead), "pose", clock(tau), tau))
        if k < 21 and k != 10:  # none between the last pose of the old clock and the first
            events.append((tau + 0.25 + max(0.0, -sonar_lead), "range", clock(tau + 0.25),
                           tau + 0.25))
    for _, kind, t, tau in sorted(events):
        if kind == "pose":
            tester.send_pose(t, tau - 5.0)
        else:
            tester.send_range(t, 310.0)
    expected = sorted(tau - 5.0 for _, kind, _, tau in events if kind == "range")
    assert spin_until(lambda: sum(batch.width for batch in tester.batches) >= len(expected),
                      ingest, tester.node, timeout=10.0), ingest.core.drops.counts
    points = np.concatenate([msg.cloud_to_points(batch) for batch in tester.batches])
    np.testing.assert_allclose(sorted(points[:, 0]), expected, atol=1e-5)
    assert spin_until(lambda: tester.count("clock_resets", "odom") == 1 and
                      tester.count("clock_resets", "range") == 1, ingest, tester.node,
                      timeout=5.0), tester.counts
    assert not ingest.core.drops.counts


def test_soundings_outside_the_workspace_are_information_not_a_warning(start_node, make_node,
                                                                      spin_until):
    """Legs that cross the workspace boundary drop soundings by design: counted, but the
    diagnostics stay OK (a fault, such as a NaN range, turns them WARN)."""
    ingest = start_node(IngestNode, **{
        "workspace.vertices": [-4.0, -30.0, 30.0, -30.0, 30.0, 30.0, -4.0, 30.0]})
    tester = Tester(make_node)
    assert spin_until(lambda: tester.odom.get_subscription_count() and
                      tester.range.get_subscription_count(), ingest, tester.node)
    for i in range(5):                                  # 0..2 s along x from -5 to -3 m
        tester.send_pose(0.5 * i, -5.0 + 0.5 * i)
    tester.send_range(0.5, 310.0)                       # at x = -4.5: outside
    tester.send_range(1.5, 310.0)                       # at x = -3.5: inside
    tester.send_plan([[-3.0, 0.0]])                     # reached at t = 2 s
    assert spin_until(lambda: tester.count("dropped", ig.OUTSIDE_WORKSPACE) == 1, ingest,
                      tester.node, timeout=10.0), tester.counts
    assert set(tester.levels) == {DiagnosticStatus.OK}
    tester.send_pose(2.5, -2.75)
    tester.send_range(2.4, float("nan"))
    assert spin_until(lambda: DiagnosticStatus.WARN in tester.levels, ingest, tester.node,
                      timeout=10.0), tester.counts


def test_channel_topics_are_read_and_bad_channel_messages_counted(start_node, make_node,
                                                                  spin_until):
    """Each channel from its own topic and message type; a NaN, a wrong frame and a cloud
    without the channel's field are counted drops, per reason and per channel."""
    ingest = start_node(IngestNode, channels=["temperature", "pressure", "methane"],
                        channel_topics=["ctd/temperature", "ctd/pressure", "sniffer"],
                        channel_types=["temperature", "fluid_pressure", "cloud"])
    tester = Tester(make_node)
    temperature = tester.node.create_publisher(Temperature, "ctd/temperature", RELIABLE)
    pressure = tester.node.create_publisher(FluidPressure, "ctd/pressure", RELIABLE)
    sniffer = tester.node.create_publisher(PointCloud2, "sniffer", RELIABLE)
    assert spin_until(lambda: all(p.get_subscription_count() for p in (
        temperature, pressure, sniffer, tester.odom)), ingest, tester.node)

    def header(t, frame="base_link"):
        return Header(frame_id=frame, stamp=cv.seconds_to_time(t))

    for i in range(5):
        tester.send_pose(float(i), float(i))
    temperature.publish(Temperature(header=header(0.5), temperature=7.5))
    temperature.publish(Temperature(header=header(1.0), temperature=math.nan))
    temperature.publish(Temperature(header=header(1.5, "sonar_link"), temperature=7.0))
    pressure.publish(FluidPressure(header=header(2.0), fluid_pressure=2.0e5))
    sniffer.publish(cv.fields_to_cloud(header(2.5), {"salinity": np.ones(1)}, required=()))
    sniffer.publish(cv.fields_to_cloud(header(3.0), {"methane": np.array([0.25])},
                                       required=(), datatype=PointField.FLOAT64))
    tester.send_plan([[4.0, 0.0]])
    assert spin_until(lambda: tester.batches, ingest, tester.node, timeout=10.0)
    points = msg.cloud_to_points(tester.batches[0], ["temperature", "pressure", "methane"])
    nan = math.nan
    np.testing.assert_array_equal(points, [[0.5, 0.0, nan, 7.5, nan, nan],
                                           [2.0, 0.0, nan, nan, 2.0e5, nan],
                                           [3.0, 0.0, nan, nan, nan, 0.25]])
    expected = {ig.NONFINITE_POINT: 1, ig.WRONG_FRAME: 1, ig.MALFORMED: 1}
    channels = {("channel_received", "temperature"): 3, ("channel_placed", "temperature"): 1,
                ("channel_dropped", "temperature"): 2, ("channel_dropped", "pressure"): 0,
                ("channel_received", "methane"): 1, ("channel_placed", "methane"): 1}
    assert spin_until(lambda: all(tester.count(*key) == count
                                  for key, count in channels.items())
                      and all(tester.count("dropped", reason) == count
                              for reason, count in expected.items()),
                      ingest, tester.node, timeout=5.0), tester.counts
    assert ingest.core.drops.counts == expected


def test_attitude_from_imu_and_depth_from_pressure(start_node, make_node, spin_until):
    """With imu_attitude and depth_from_pressure the ingest subscribes imu and depth: a
    sounding lands at z = -d - range whatever the odometry's z; a bad IMU message is a
    counted drop."""
    ingest = start_node(IngestNode, imu_attitude=True, depth_from_pressure=True,
                        atmospheric_pressure=0.0, water_density=1000.0)
    tester = Tester(make_node)
    imu = tester.node.create_publisher(Imu, "imu", RELIABLE)
    depth = tester.node.create_publisher(FluidPressure, "depth", RELIABLE)
    assert spin_until(lambda: imu.get_subscription_count() and depth.get_subscription_count()
                      and tester.range.get_subscription_count(), ingest, tester.node)
    for t in range(3):
        header = Header(frame_id="base_link", stamp=cv.seconds_to_time(float(t)))
        tester.send_pose(float(t), float(t))  # at z = 300 m
        imu.publish(Imu(header=header, orientation=cv.yaw_to_quaternion(0.0)))
        depth.publish(FluidPressure(header=header, fluid_pressure=1000.0 * 9.80665 * 40.0))
    imu.publish(Imu(header=Header(frame_id="base_link", stamp=cv.seconds_to_time(3.0)),
                    orientation=Quaternion(w=0.0)))  # not a rotation
    tester.send_range(1.5, 10.0)
    tester.send_plan([[2.0, 0.0]])
    assert spin_until(lambda: tester.batches, ingest, tester.node, timeout=10.0)
    np.testing.assert_allclose(msg.cloud_to_points(tester.batches[0]), [[1.5, 0.0, -50.0]],
                               atol=1e-4)
    assert spin_until(lambda: ingest.core.drops.counts == {ig.IMU_INVALID: 1}, ingest, tester.node)


def test_best_effort_sensors_through_qos_overrides(start_node, make_node, spin_until):
    ingest = start_node(IngestNode, **{
        "qos_overrides./odom.subscription.reliability": "best_effort",
        "qos_overrides./sonar/range.subscription.reliability": "best_effort"})
    tester = Tester(make_node, sensor_qos=BEST_EFFORT)
    sent = [0]

    def stream():
        t = 0.1 * sent[0]
        tester.send_pose(t, 0.0)
        tester.send_range(t, 310.0)
        sent[0] += 1
        return ingest.core.batcher.accepted >= 5

    assert spin_until(stream, ingest, tester.node, timeout=10.0)
    assert ingest.get_parameter("qos_overrides./odom.subscription.reliability").value \
        == "best_effort"


def test_one_topic_s_qos_override_leaves_the_other_topics_and_nodes_alone(start_node):
    """rclpy writes an override into the profile it is given: the shared one must not be."""
    ingest = start_node(IngestNode, **{"qos_overrides./odom.subscription.depth": 8})
    depths = {sub.topic_name: sub.qos_profile.depth for sub in ingest.subscriptions}
    assert depths["/odom"] == 8
    assert depths["/sonar/range"] == depths["/sonar/swath"] == depths["/fix"] == 2000
    assert qos.SENSOR_BACKLOG.depth == 2000


def test_a_flood_is_bounded_counted_and_survived(start_node, make_node, spin_until):
    ingest = start_node(IngestNode, max_pending=50, pending_timeout=60.0)
    tester = Tester(make_node)
    assert spin_until(lambda: tester.range.get_subscription_count(), ingest, tester.node)
    for i in range(300):  # no pose at all: every reading waits
        tester.send_range(0.01 * i, 310.0)
        if i % 40 == 0:
            spin_until(lambda: False, ingest, tester.node, timeout=0.02)
    # Every reading is accounted for: waiting, overflowed from the ingest's own queue, or
    # lost from the subscription's (DDS) queue before the callback took it.
    done = spin_until(lambda: ingest.core.drops.counts[ig.QUEUE_OVERFLOW]
                      + ingest.lost_in_transport + ingest.core.placement.pending == 300
                      and tester.count("dropped", ig.QUEUE_OVERFLOW) > 0,
                      ingest, tester.node, timeout=10.0)
    assert done, (ingest.core.drops.counts, ingest.lost_in_transport, ingest.core.placement.pending)
    assert ingest.core.placement.pending == 50
    tester.send_pose(0.0, 0.0)
    tester.send_pose(3.0, 0.0)
    assert spin_until(lambda: ingest.core.placement.pending == 0, ingest, tester.node)
    assert ingest.core.batcher.accepted == 0  # the poses are 3 s apart: pose_gap, not placed
    assert ingest.core.drops.counts[ig.POSE_GAP] == 50


@pytest.mark.parametrize("node_cls, name", [(SimulatedAuvNode, "simulated_auv"),
                                            (IngestNode, "sensor_ingest")])
def test_parameter_file_sections_are_declared_parameters(ros_domain_id, node_cls, name):
    expected = load_node_parameters(CONFIG, name)
    assert expected
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_id,
               args=["--ros-args", "--params-file", str(CONFIG)])
    try:
        node = node_cls(context=context)
        for key, value in expected.items():
            assert node.has_parameter(key), f"{name}: {key} is not a declared parameter"
            assert node.get_parameter(key).value == value, key
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_parameters_are_vetted_when_set(start_node):
    ingest = start_node(IngestNode)
    assert ingest.describe_parameter("max_batch_size").integer_range[0].from_value == 0
    assert "decision points" in ingest.describe_parameter("max_batch_size").description
    assert not ingest.set_parameters([Parameter("max_batch_size", value=-5)])[0].successful
    assert not ingest.set_parameters([Parameter("outlier_neighbors", value=1)])[0].successful
    assert not ingest.set_parameters([Parameter("filter_backend", value="numpy")])[0].successful
    assert ingest.set_parameters([Parameter("max_batch_age", value=30.0)])[0].successful
    assert ingest.core.config.max_batch_age == 30.0 and ingest.core.config.outlier_neighbors == 20


def test_a_geojson_workspace_is_placed_with_the_anchor_or_refused_without(start_node,
                                                                          ros_context,
                                                                          tmp_path):
    from poam_ros.params import ConfigError

    area = tmp_path / "area.geojson"
    area.write_text('{"type": "Polygon", "coordinates": [[[10.0, 59.0], [10.01, 59.0], '
                    '[10.01, 59.01], [10.0, 59.01], [10.0, 59.0]]]}')
    ingest = start_node(IngestNode, **{"workspace.geojson": str(area), "geo.anchor": "latlon",
                                       "geo.origin_latitude": 59.0,
                                       "geo.origin_longitude": 10.0})
    xmin, xmax, ymin, ymax = ingest.core.batcher.workspace.bounds
    assert (xmin, ymin) == pytest.approx((0.0, 0.0), abs=1e-6)
    assert (xmax, ymax) == pytest.approx((573.0, 1112.0), abs=2.0)  # 0.01° at 59° N
    assert ingest.core.position_fixes.georeference is not None
    with pytest.raises(ConfigError, match="area.geojson' is in latitude/longitude: set"):
        IngestNode(context=ros_context, parameter_overrides=[
            Parameter("workspace.geojson", value=str(area))])
