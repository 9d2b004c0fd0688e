"""A short soak of the sensor_ingest node over real DDS: an independent publisher node feeds
every stream (odometry, range, fix, Imu, depth, a temperature channel) a fixed, seeded mix
of valid and faulty messages for a bounded count and time, and the ingest accounts for each
one: kept (a pose, a fix applied, an attitude, a depth, a sample published, placed or
waiting) or dropped under a reason, the counts read from /diagnostics; each plausibility
limit's faults are counted under its own reason."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Quaternion  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import (  # noqa: E402
    FluidPressure,
    Imu,
    NavSatFix,
    NavSatStatus,
    Range,
    Temperature,
)
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.attitude import GRAVITY, quaternion_from_rpy  # noqa: E402
from poam_ros.diagnostics import IngestStatus  # noqa: E402
from poam_ros.geo import GeoReference  # noqa: E402
from poam_ros.ingest import reasons as ig  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402

RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
ANCHOR = GeoReference.local(59.0, 10.0)
STEPS = 200            # 20 s of stamps at 10 Hz; the first and last 10 steps all valid
FAULT_RATE = 0.25
LIMITS = {"min_range": 1.0, "max_range": 2000.0, "field_of_view": 0.0}
PRESSURE = 1025.0 * GRAVITY * 50.0 + 101325.0  # 50 m down

# Each stream's faults: name -> the reason it is counted under (None: not asserted exactly,
# as a fault of the odometry's own order may drop or keep what follows).
FAULTS = {
    "odom": {"wrong_frame": ig.POSE_WRONG_FRAME, "nan": ig.POSE_NONFINITE,
             "zero_quaternion": ig.POSE_INVALID_ORIENTATION, "jump": ig.POSE_JUMP},
    "range": {"nan": ig.NONFINITE_RANGE, "negative": ig.NEGATIVE_RANGE,
              "below_min": ig.RANGE_OUT_OF_LIMITS, "inf": ig.NO_RETURN,
              "wrong_frame": ig.WRONG_FRAME},
    "imu": {"zero_quaternion": ig.IMU_INVALID, "unknown": ig.IMU_INVALID,
            "flipped": ig.IMU_RATE_OUT_OF_LIMITS, "wrong_frame": ig.WRONG_FRAME},
    "depth": {"nan": ig.PRESSURE_INVALID, "negative": ig.DEPTH_OUT_OF_LIMITS,
              "absurd": ig.DEPTH_OUT_OF_LIMITS, "wrong_frame": ig.WRONG_FRAME},
    "temperature": {"nan": ig.NONFINITE_POINT, "boiling": ig.VALUE_OUT_OF_LIMITS,
                    "frozen": ig.VALUE_OUT_OF_LIMITS, "wrong_frame": ig.WRONG_FRAME},
    "fix": {"no_fix": ig.FIX_NO_FIX, "nan": ig.FIX_NONFINITE, "latitude": ig.FIX_OUT_OF_RANGE,
            "covariance": ig.FIX_IMPLAUSIBLE_COVARIANCE, "wild": ig.FIX_OUTLIER},
}


def pattern(seed=31):
    """(step, stream, fault or None) for every message to send, in sending order: the
    odometry, Imu and depth every step, a range every step, the temperature every second
    step, a fix every tenth. The first steps are valid: a first pose that jumped would be
    the reference every later pose is judged a jump from."""
    rng = random.Random(seed)
    plan = []
    for step in range(STEPS):
        streams = ["odom", "imu", "depth", "range"] + ["temperature"] * (step % 2 == 0) + \
            ["fix"] * (step % 10 == 5)
        for stream in streams:
            faulty = 10 <= step < STEPS - 10 and rng.random() < FAULT_RATE
            plan.append((step, stream, rng.choice(sorted(FAULTS[stream])) if faulty else None))
    return plan


class Feeder:
    """The independent publisher: one node, one publisher per stream."""

    def __init__(self, make_node):
        self.node = make_node("soak_feeder")
        self.publishers = {
            "odom": self.node.create_publisher(Odometry, "odom", RELIABLE),
            "range": self.node.create_publisher(Range, "sonar/range", RELIABLE),
            "imu": self.node.create_publisher(Imu, "imu", RELIABLE),
            "depth": self.node.create_publisher(FluidPressure, "depth", RELIABLE),
            "temperature": self.node.create_publisher(Temperature, "temperature", RELIABLE),
            "fix": self.node.create_publisher(NavSatFix, "fix", RELIABLE)}
        self.status: IngestStatus | None = None
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)

    def _on_diagnostics(self, message):
        for status in message.status:
            record = msg.status_record(status)
            if isinstance(record, IngestStatus):
                self.status = record

    def connected(self):
        return all(p.get_subscription_count() for p in self.publishers.values())

    def send(self, step, stream, fault):
        t = 0.1 * step
        x = -10.0 + t
        frame = "camera" if fault == "wrong_frame" else "base_link"
        header = Header(frame_id=frame, stamp=cv.seconds_to_time(t))
        self.publishers[stream].publish(getattr(self, stream)(header, t, x, fault))

    @staticmethod
    def odom(header, t, x, fault):
        header.frame_id = "camera" if fault == "wrong_frame" else "map"
        x = {"nan": math.nan, "jump": x + 1000.0}.get(fault, x)
        odometry = cv.odometry_from_state(header, "base_link", (x, 0.0), 0.0, z=300.0)
        if fault == "zero_quaternion":
            odometry.pose.pose.orientation = Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)
        return odometry

    @staticmethod
    def range(header, t, x, fault):
        header.frame_id = "camera" if fault == "wrong_frame" else "sonar_link"
        distance = {"nan": math.nan, "negative": -3.0, "below_min": 0.5,
                    "inf": math.inf}.get(fault, 40.0)
        return cv.range_from_reading(header, distance, **LIMITS)

    @staticmethod
    def imu(header, t, x, fault):
        roll = math.pi if fault == "flipped" else 0.05 * math.sin(t)
        q = (0.0, 0.0, 0.0, 0.0) if fault == "zero_quaternion" else \
            quaternion_from_rpy(roll, 0.0, 0.0)
        message = Imu(header=header, orientation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))
        if fault == "unknown":
            message.orientation_covariance[0] = -1.0
        return message

    @staticmethod
    def depth(header, t, x, fault):
        pressure = {"nan": math.nan, "negative": -5000.0, "absurd": 1e13}.get(fault, PRESSURE)
        return FluidPressure(header=header, fluid_pressure=pressure)

    @staticmethod
    def temperature(header, t, x, fault):
        value = {"nan": math.nan, "boiling": 100.0, "frozen": -40.0}.get(fault, 8.0 + 0.1 * t)
        return Temperature(header=header, temperature=value)

    @staticmethod
    def fix(header, t, x, fault):
        header.frame_id = "usbl"
        offset = 500e3 if fault == "wild" else 3.0  # a valid fix: 3 m east of the odometry
        lon, lat = ANCHOR.to_lonlat(x + offset, 0.0)
        latitude = {"nan": math.nan, "latitude": 95.0}.get(fault, float(lat))
        message = NavSatFix(header=header, latitude=latitude, longitude=float(lon),
                            status=NavSatStatus(status=NavSatStatus.STATUS_NO_FIX
                                                if fault == "no_fix" else 0))
        if fault == "covariance":
            message.position_covariance[0] = -4.0
            message.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        return message


def accounted(status, core):
    """Messages the ingest kept or dropped (a range or a reading is one sample)."""
    kept = (status.poses_kept + status.fixes_applied + status.samples_published
            + status.batch_size + status.pending_readings + status.stamps_held
            + len(core.attitude_depth.attitude)
            + len(core.attitude_depth.depth))
    return kept + sum(status.dropped.values())


def test_a_seeded_mix_of_valid_and_faulty_messages_is_all_accounted_for(
        start_node, make_node, spin_until):
    ingest = start_node(IngestNode, imu_attitude=True, depth_from_pressure=True,
                        channels=["temperature"], sonar_rate=0.0, pending_timeout=5.0, **{
                            "geo.anchor": "latlon", "geo.origin_latitude": 59.0,
                            "geo.origin_longitude": 10.0})
    feeder = Feeder(make_node)
    assert spin_until(feeder.connected, ingest, feeder.node, timeout=10.0)
    plan = pattern()
    for number, (step, stream, fault) in enumerate(plan):
        feeder.send(step, stream, fault)
        if number % 10 == 9:  # let the ingest keep up (a reliable history of 200)
            spin_until(lambda: False, ingest, feeder.node, timeout=0.01)
    sent = len(plan)
    assert sent < 1500
    core = ingest.core
    assert spin_until(lambda: feeder.status is not None
                      and accounted(feeder.status, core) == sent
                      and feeder.status.pending_readings == 0,
                      ingest, feeder.node, timeout=15.0), (sent, feeder.status)
    # Each plausibility fault is counted under its own reason, exactly.
    faults = Counter(FAULTS[stream][fault] for _, stream, fault in plan if fault)
    for reason in (ig.DEPTH_OUT_OF_LIMITS, ig.VALUE_OUT_OF_LIMITS, ig.IMU_RATE_OUT_OF_LIMITS,
                   ig.PRESSURE_INVALID, ig.IMU_INVALID, ig.FIX_OUTLIER,
                   ig.FIX_IMPLAUSIBLE_COVARIANCE, ig.FIX_NONFINITE, ig.FIX_OUT_OF_RANGE,
                   ig.FIX_NO_FIX):
        assert feeder.status.dropped[reason] == faults[reason], reason
    assert faults[ig.FIX_OUTLIER] and faults[ig.DEPTH_OUT_OF_LIMITS] and \
        faults[ig.VALUE_OUT_OF_LIMITS] and faults[ig.IMU_RATE_OUT_OF_LIMITS]
    assert feeder.status.fixes_applied > 0 and feeder.status.poses_kept > 100
    assert core.position_fixes.last_correction < 10.0  # the wild fixes moved nothing
