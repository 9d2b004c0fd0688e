"""Every input stream of the ingest runs the same gauntlet, through its feeder, with message
objects: a non-finite value, one out of the declared limits, a wrong frame, a single wild
stamp, out of order, a duplicate (another reading at the newest's stamp; each dropped under
its named reason, nothing else lost),
and a clock reset of every stream with the stream under test leading (nothing lost).

The world: a vehicle at 1 m/s along +x at 40 m depth, level; every stream sends once per
0.1 s tick (the fixes once per second), each message stamped at the tick, so every reading
lies on a pose, an attitude and a depth and is placed once they have come.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.attitude import GRAVITY
from poam_ros.bags.sim_survey import T, header
from poam_ros.geo.georeference import GeoReference
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import feeders as fd
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.attitude_depth import DEPTH, IMU
from poam_ros.ingest.channels import CHANNEL
from poam_ros.ingest.streams import FIX, ODOM, RANGE, SWATH

ANCHOR = GeoReference.local(59.0, 10.0)
CONFIG = IngestConfig(channels=["temperature", "pressure", "methane"],
                      channel_types=["temperature", "fluid_pressure", "cloud"],
                      imu_attitude=True, depth_from_pressure=True)
TEMPERATURE, PRESSURE, METHANE = (CHANNEL + name for name in CONFIG.channels)
DEPTH_M = 40.0
LEVEL = (0.0, 0.0, 0.0, 1.0)
BEAMS = np.array([[0.0, 0.0, -10.0], [0.0, 3.0, -10.0], [0.0, -3.0, -10.0]])  # m, sonar frame
TICK, FIX_EVERY = 0.1, 10  # s; ticks


def x_at(tau):
    return -5.0 + tau


def vector():
    return T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)


def odometry(stamp, tau, value=None, frame="map"):
    """``value``: the x [m] sent in place of the vehicle's."""
    x = x_at(tau) if value is None else value
    pose = T["geometry_msgs/msg/Pose"](
        position=T["geometry_msgs/msg/Point"](x=x, y=0.0, z=-DEPTH_M),
        orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0))
    twist = T["geometry_msgs/msg/Twist"](linear=vector(), angular=vector())
    return T["nav_msgs/msg/Odometry"](
        header=header(stamp, frame), child_frame_id="base_link",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=np.zeros(36)))


def sounding(stamp, tau, value=10.0, frame="sonar_link"):
    return T["sensor_msgs/msg/Range"](header=header(stamp, frame), radiation_type=1,
                                      field_of_view=0.1, min_range=1.0, max_range=200.0,
                                      range=value, variance=0.0)


def cloud(stamp, fields, frame):
    """A float64 PointCloud2 of the columns ``fields`` {name: (N,) values}."""
    names = list(fields)
    data = np.column_stack([fields[name] for name in names]).astype("<f8")
    field = T["sensor_msgs/msg/PointField"]
    return T["sensor_msgs/msg/PointCloud2"](
        header=header(stamp, frame), height=1, width=len(data),
        fields=[field(name=name, offset=8 * i, datatype=8, count=1)
                for i, name in enumerate(names)],
        is_bigendian=False, point_step=8 * len(names), row_step=8 * len(names) * len(data),
        data=data.reshape(-1).view(np.uint8), is_dense=True)


def swath(stamp, tau, value=BEAMS, frame="sonar_link"):
    return cloud(stamp, dict(zip("xyz", np.asarray(value, dtype=float).T)), frame)


def fix(stamp, tau, value=None, frame="usbl"):
    """A fix on the track; ``value``: the latitude [deg] sent in its place."""
    lon, lat = ANCHOR.to_lonlat(x_at(tau), 0.0)
    return T["sensor_msgs/msg/NavSatFix"](
        header=header(stamp, frame), status=T["sensor_msgs/msg/NavSatStatus"](status=0,
                                                                                service=1),
        latitude=float(lat) if value is None else value, longitude=float(lon),
        altitude=math.nan, position_covariance=np.zeros(9), position_covariance_type=0)


def imu(stamp, tau, value=LEVEL, frame="base_link"):
    q = T["geometry_msgs/msg/Quaternion"](x=value[0], y=value[1], z=value[2], w=value[3])
    return T["sensor_msgs/msg/Imu"](
        header=header(stamp, frame), orientation=q, orientation_covariance=np.zeros(9),
        angular_velocity=vector(), angular_velocity_covariance=np.zeros(9),
        linear_acceleration=vector(), linear_acceleration_covariance=np.zeros(9))


def fluid_pressure(stamp, tau, value=2e5, frame="base_link"):
    return T["sensor_msgs/msg/FluidPressure"](header=header(stamp, frame), fluid_pressure=value,
                                              variance=0.0)


def depth(stamp, tau, value=None, frame="base_link"):
    pressure = CONFIG.water_density * GRAVITY * DEPTH_M + CONFIG.atmospheric_pressure
    return fluid_pressure(stamp, tau, pressure if value is None else value, frame)


def temperature(stamp, tau, value=10.0, frame="base_link"):
    return T["sensor_msgs/msg/Temperature"](header=header(stamp, frame), temperature=value,
                                            variance=0.0)


def methane(stamp, tau, value=1.5, frame="base_link"):
    return cloud(stamp, {"methane": [value]}, frame)


# Every stream: its message (stamp [s], true time τ [s], value, frame), in the order one
# tick's messages come; the samples a valid message makes.
MESSAGES = {ODOM: odometry, IMU: imu, DEPTH: depth, RANGE: sounding, SWATH: swath,
            TEMPERATURE: temperature, PRESSURE: fluid_pressure, METHANE: methane, FIX: fix}
SAMPLES = {RANGE: 1, SWATH: len(BEAMS), TEMPERATURE: 1, PRESSURE: 1, METHANE: 1}


def feeds(config=CONFIG):
    """Every stream's feeder, as the ingest node and the remap take them."""
    return {ODOM: fd.feed_odometry, RANGE: fd.feed_range, SWATH: fd.feed_swath,
            FIX: fd.feed_fix, **{feeder.name: feeder.feed for feeder in fd.input_feeders(config)}}


# The gauntlet: per fault, per stream, (the faulty message's value and frame, its reason,
# the samples or messages it counts; None: the stream has no such check). Out of limits:
# the odometry's speed, the ranges' min/max, the hard latitude/longitude limits, and the
# declared plausibility limits of IngestConfig.limits for the IMU, the depth and the channels.
NAN = math.nan
NONFINITE = {ODOM: (dict(value=NAN), ig.POSE_NONFINITE, 1),
             RANGE: (dict(value=NAN), ig.NONFINITE_RANGE, 1),
             SWATH: (dict(value=np.full((3, 3), NAN)), ig.NONFINITE_POINT, 3),
             FIX: (dict(value=NAN), ig.FIX_NONFINITE, 1),
             IMU: (dict(value=(NAN, 0.0, 0.0, 1.0)), ig.IMU_INVALID, 1),
             DEPTH: (dict(value=NAN), ig.PRESSURE_INVALID, 1),
             TEMPERATURE: (dict(value=NAN), ig.NONFINITE_POINT, 1),
             PRESSURE: (dict(value=NAN), ig.NONFINITE_POINT, 1),
             METHANE: (dict(value=NAN), ig.NONFINITE_POINT, 1)}
LIMITS = {ODOM: (dict(value=100.0), ig.POSE_JUMP, 1),           # faster than max_speed
          RANGE: (dict(value=500.0), ig.RANGE_OUT_OF_LIMITS, 1),  # beyond the message's max
          SWATH: (dict(value=BEAMS * 2000.0), ig.RANGE_OUT_OF_LIMITS, 3),
          FIX: (dict(value=91.0), ig.FIX_OUT_OF_RANGE, 1),
          IMU: (dict(value=(0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))),  # 90° in 0.05 s
                ig.IMU_RATE_OUT_OF_LIMITS, 1),
          DEPTH: (dict(value=2e8), ig.DEPTH_OUT_OF_LIMITS, 1),  # about 19.8 km down
          TEMPERATURE: (dict(value=100.0), ig.VALUE_OUT_OF_LIMITS, 1),
          PRESSURE: (dict(value=-1e5), ig.VALUE_OUT_OF_LIMITS, 1),  # a negative absolute one
          METHANE: (dict(value=1e12), ig.VALUE_OUT_OF_LIMITS, 1)}
WRONG_FRAME = {ODOM: (dict(frame="odom"), ig.POSE_WRONG_FRAME, 1),
               RANGE: (dict(frame="camera"), ig.WRONG_FRAME, 1),
               SWATH: (dict(frame="camera"), ig.WRONG_FRAME, 3),
               FIX: None,  # a fix's frame is its antenna's: none is declared
               **{name: (dict(frame="camera"), ig.WRONG_FRAME, 1)
                  for name in (IMU, DEPTH, TEMPERATURE, PRESSURE, METHANE)}}
FAULTS = {"nonfinite": NONFINITE, "out_of_limits": LIMITS, "wrong_frame": WRONG_FRAME}
# The stamp faults: the message of the 2 s tick stamped elsewhere (the duplicate: the reading
# half a tick on, at the 2 s stamp; the 2 s pose again unchanged is a re-send, no fault), its
# reason per stream.
STAMP_FAULTS = {
    "wild_stamp": (1000.0, {ODOM: ig.POSE_STAMP_OUTLIER}, ig.STAMP_OUTLIER),
    "out_of_order": (-0.5, {ODOM: ig.POSE_OUT_OF_ORDER, FIX: ig.FIX_OUT_OF_ORDER},
                     ig.OUT_OF_ORDER),
    "duplicate": (0.0, {ODOM: ig.POSE_DUPLICATE, FIX: ig.FIX_OUT_OF_ORDER}, ig.DUPLICATE)}


def world(ticks, clock=lambda tau: 100.0 + tau, lags=None):
    """Messages in the order they arrive, (arrival [s], stream, message): tick τ's of each
    stream stamped ``clock(τ)``, arriving at τ plus the stream's lag (``lags``, s)."""
    lags = lags or {}
    events = []
    for k in range(ticks):
        tau = k * TICK
        for order, (stream, build) in enumerate(MESSAGES.items()):
            if stream != FIX or k % FIX_EVERY == 0:
                events.append((tau + lags.get(stream, 0.0), k, order, stream,
                               build(clock(tau), tau)))
    events.sort(key=lambda event: event[:3])
    return [(arrival, stream, message) for arrival, _, _, stream, message in events]


def expected_samples(events):
    return sum(SAMPLES.get(stream, 0) for _, stream, _ in events)


def run(events, config=CONFIG):
    """An ingest fed ``events`` through the feeders at wall time = arrival, then polled."""
    ingest = Ingest(config, georeference=ANCHOR)
    feed = feeds(config)
    for now, stream, message in events:
        feed[stream](ingest, message, now)
    ingest.poll(events[-1][0])
    return ingest


def with_fault(fault, stream):
    """The world with one faulty message of ``stream`` after the 2 s tick's messages; its
    reason and count (None: the stream has no such check)."""
    events = world(41)
    at = max(i for i, (now, _, _) in enumerate(events) if now <= 2.0 + 1e-9) + 1
    if fault in FAULTS:
        case = FAULTS[fault][stream]
        if case is None:
            return None
        changes, reason, count = case
        message = MESSAGES[stream](100.0 + 2.05, 2.05, **changes)
    else:
        shift, reasons, reason = STAMP_FAULTS[fault]
        reason, count = reasons.get(stream, reason), SAMPLES.get(stream, 1)
        message = MESSAGES[stream](100.0 + 2.0 + shift,
                                   2.0 + (TICK / 2 if fault == "duplicate" else 0.0))
    return events[:at] + [(2.0, stream, message)] + events[at:], reason, count


def test_the_gauntlet_covers_every_stream_the_ingest_has():
    """A stream added later without a row here fails: the rule is every stream's."""
    ingest = Ingest(CONFIG, georeference=ANCHOR)
    assert set(ingest.streams.names) == set(MESSAGES) == set(feeds())
    for table in (*FAULTS.values(), *(reasons for _, reasons, _ in STAMP_FAULTS.values())):
        assert set(table) <= set(MESSAGES)
    assert all(set(table) == set(MESSAGES) for table in FAULTS.values())


def test_the_clean_world_places_every_reading():
    events = world(41)
    ingest = run(events)
    assert not ingest.drops.counts and ingest.placement.pending == 0 and ingest.streams.held == 0
    assert ingest.batcher.accepted == expected_samples(events)
    assert ingest.position_fixes.applied == 5


@pytest.mark.parametrize("stream", list(MESSAGES))
@pytest.mark.parametrize("fault", [*FAULTS, *STAMP_FAULTS])
def test_a_fault_is_dropped_by_reason_and_costs_nothing_else(fault, stream):
    case = with_fault(fault, stream)
    if case is None:
        pytest.skip(f"{stream} declares no frame")
    events, reason, count = case
    ingest = run(events)
    assert ingest.drops.counts == {reason: count} and reason in ig.REASONS
    assert ingest.batcher.accepted == expected_samples(world(41)), "valid readings were lost"
    assert ingest.placement.pending == 0 and ingest.streams.held == 0
    assert ingest.position_fixes.applied == 5


@pytest.mark.parametrize("leader", list(MESSAGES))
def test_a_clock_reset_of_every_stream_loses_nothing_whichever_leads(leader):
    """Time restarts (a simulator restarted, a bag looped) at τ = 3 s: the stream under
    test's messages arrive 1.5 s ahead of the others', so it resets first."""
    lags = {stream: 0.0 if stream == leader else 1.5 for stream in MESSAGES}
    events = world(101, clock=lambda tau: 100.0 + tau if tau < 3.0 - 1e-9 else tau - 3.0,
                   lags=lags)
    ingest = run(events)
    assert not ingest.drops.counts
    assert ingest.batcher.accepted == expected_samples(events)
    assert ingest.streams.clock_resets == {stream: 1 for stream in MESSAGES}
    assert ingest.placement.pending == 0 and ingest.streams.held == 0
    assert ingest.position_fixes.applied == sum(stream == FIX for _, stream, _ in events)
