"""Two fleet_link nodes and a fleet_channel over real DDS: vehicle A's soundings reach vehicle
B's samples topic (the one B's mapper reads), each once; B's reach A; none goes back; a plan
announced by A reaches B as a teammate's plan; a corrupted or truncated packet is counted and
never reaches the samples topic."""

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header, UInt8MultiArray  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.fleet import EncodingConfig, PacketCodec  # noqa: E402
from poam_ros.params import ConfigError  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.fleet_channel_node import FleetChannelNode  # noqa: E402
from poam_ros.ros.fleet_link_node import FleetLinkNode, teammate_plan_topic  # noqa: E402
from tests.ros.graph_helpers import overrides  # noqa: E402

TIMEOUT = 30.0
LINK = {"link.bandwidth": 1000.0, "link.slot_length": 0.2, "link.slots": 2,
        "link.latency": 0.1}


@pytest.fixture
def fleet(ros_context, nodes_to_destroy):
    """A's and B's fleet links (vehicle ids 3 and 4, namespaces /auv0 and /auv1) and the
    channel between them."""
    def started(cls, namespace, values):
        nodes_to_destroy.append(cls(context=ros_context, namespace=namespace,
                                    parameter_overrides=overrides(values)))
        return nodes_to_destroy[-1]

    a = started(FleetLinkNode, "/auv0", {"vehicle_id": 3, "period": 0.05, **LINK})
    b = started(FleetLinkNode, "/auv1", {"vehicle_id": 4, "period": 0.05, "link.slot": 1,
                                         **LINK})
    channel = started(FleetChannelNode, "/", {"vehicles": ["/auv0", "/auv1"], **LINK})
    return a, b, channel


def header(seconds):
    stamped = Header(frame_id="map")
    stamped.stamp = cv.seconds_to_time(seconds)
    return stamped


def matches(sent, heard, tolerance=(0.25, 0.05)):
    """For each row (x, y, z) of ``sent``, how many rows of ``heard`` equal it within the
    encoding's half resolutions."""
    if not len(heard):
        return np.zeros(len(sent), dtype=int)
    close_xy = np.abs(sent[:, None, :2] - heard[None, :, :2]).max(axis=2) <= tolerance[0] + 1e-9
    close_z = np.abs(sent[:, None, 2] - heard[None, :, 2]) <= tolerance[1] + 1e-9
    return (close_xy & close_z).sum(axis=1)


def test_soundings_cross_once_and_never_come_back(fleet, make_node, spin_until):
    a, b, channel = fleet
    rng = np.random.default_rng(0)
    own = {"/auv0": np.column_stack([rng.uniform(-500, 500, (60, 2)), rng.uniform(-20, -10, 60)]),
           "/auv1": np.column_stack([rng.uniform(-500, 500, (40, 2)),
                                     rng.uniform(-110, -100, 40)])}
    tester = make_node("fleet_test_ingests")
    heard = {name: [] for name in own}
    ingests = {}
    for name in own:
        ingests[name] = tester.create_publisher(PointCloud2, f"{name}/samples", qos.SAMPLES)
        tester.create_subscription(PointCloud2, f"{name}/samples",
                                   lambda cloud, name=name: heard[name].append(
                                       msg.cloud_to_points(cloud)), qos.SAMPLES)
    assert spin_until(lambda: all(p.get_subscription_count() >= 2 for p in ingests.values())
                      and channel.count_publishers("/auv0/fleet/out") == 1
                      and a.count_subscribers("/auv0/fleet/in") >= 1
                      and b.count_subscribers("/auv1/fleet/in") >= 1,
                      a, b, channel, tester, timeout=TIMEOUT)
    for name, points in own.items():
        ingests[name].publish(cv.points_to_cloud(header(5.0), points, float64=True))

    def rows(name):
        return np.vstack(heard[name]) if heard[name] else np.empty((0, 3))

    assert spin_until(lambda: len(rows("/auv0")) >= 100 and len(rows("/auv1")) >= 100,
                      a, b, channel, tester, timeout=TIMEOUT)
    spin_until(lambda: False, a, b, channel, tester, timeout=1.5)  # anything more: an echo
    for name, other in (("/auv0", "/auv1"), ("/auv1", "/auv0")):
        assert len(rows(name)) == 100, name
        assert (matches(own[name], rows(name)) == 1).all(), f"{name}'s own soundings"
        assert (matches(own[other], rows(name)) == 1).all(), f"{other}'s soundings at {name}"
    assert a.link.soundings_sent == b.link.soundings_received == 60
    assert b.link.soundings_sent == a.link.soundings_received == 40
    assert not (a.link.rejected or b.link.rejected or a.link.codec.dropped
                or b.link.codec.dropped)
    assert channel.channel.schedules["/auv0"].peak_window_bytes <= 1000
    statuses = {}
    tester.create_subscription(DiagnosticArray, "/diagnostics", lambda array: statuses.update(
        {status.name: status for status in array.status}), qos.DIAGNOSTICS)
    assert spin_until(lambda: "auv1/fleet_link: fleet link" in statuses, a, b, channel, tester,
                      timeout=TIMEOUT)
    record = msg.status_record(statuses["auv1/fleet_link: fleet link"])
    assert (record.vehicle_id, record.soundings_received, record.soundings_sent) == (4, 60, 40)


def test_a_plan_reaches_the_teammate(fleet, make_node, spin_until):
    a, b, channel = fleet
    tester = make_node("fleet_test_planner")
    announce = tester.create_publisher(Path, "/auv0/fleet/plan", qos.LATCHED)
    plans = []
    tester.create_subscription(Path, f"/auv1/{teammate_plan_topic(3)}", plans.append,
                               qos.LATCHED)
    waypoints = np.array([[0.0, 0.0], [120.5, -40.0], [300.0, 80.0]])
    announce.publish(cv.path_from_waypoints(header(7.25), waypoints))
    assert spin_until(lambda: plans, a, b, channel, tester, timeout=TIMEOUT)
    assert msg.time_to_seconds(plans[0].header.stamp) == 7.25
    assert np.abs(msg.path_to_waypoints(plans[0]) - waypoints).max() <= 0.25


def test_a_corrupted_or_truncated_packet_is_counted_and_never_mapped(fleet, make_node,
                                                                    spin_until):
    a, b, channel = fleet
    tester = make_node("fleet_test_modem")
    modem = tester.create_publisher(UInt8MultiArray, "/auv1/fleet/in", qos.SENSORS)
    heard = []
    tester.create_subscription(PointCloud2, "/auv1/samples",
                               lambda cloud: heard.append(msg.cloud_to_points(cloud)),
                               qos.SAMPLES)
    codec = PacketCodec(EncodingConfig(), sender=7)
    bad = codec.encode(codec.quantise([[10.0, 20.0]], [-30.0], 1.0))
    good = codec.encode(codec.quantise([[-10.0, 5.0]], [-40.0], 2.0))
    flipped = bytearray(bad)
    flipped[20] ^= 0x10
    assert spin_until(lambda: modem.get_subscription_count() >= 1
                      and b.count_publishers("/auv1/samples") >= 1,
                      b, tester, timeout=TIMEOUT)
    for packet in (bytes(flipped), bad[:-3], good):  # in order, reliably
        modem.publish(UInt8MultiArray(data=packet))
    assert spin_until(lambda: heard, b, tester, timeout=TIMEOUT)
    spin_until(lambda: False, b, tester, timeout=0.5)
    assert len(heard) == 1 and heard[0][:, :3].tolist() == [[-10.0, 5.0, -40.0]]
    status = b.link.status()
    assert (status.dropped["bad_crc"], status.dropped["truncated"]) == (1, 1)
    assert status.soundings_received == 1


def test_outputs_must_match_the_channels(ros_context):
    with pytest.raises(ConfigError, match="output"):
        FleetLinkNode(context=ros_context, namespace="/auv9", parameter_overrides=overrides(
            {"channels": ["temperature"]}))


def test_a_channel_needs_two_distinct_vehicles(ros_context):
    for vehicles in (["/auv0"], ["/auv0", "/auv0/"]):
        with pytest.raises(ConfigError, match="two|twice"):
            FleetChannelNode(context=ros_context, parameter_overrides=overrides(
                {"vehicles": vehicles}))


def test_a_batch_s_counts_go_out_with_it(ros_context, nodes_to_destroy, make_node, spin_until,
                                        monkeypatch):
    """The link's status follows each batch taken in at once, not at the next period: a
    vehicle's last batch can end the fleet's mission before then (put off here for an hour)."""
    from poam_ros.ros import fleet_link_node

    monkeypatch.setattr(fleet_link_node, "DIAGNOSTICS_PERIOD", 3600.0)
    link = FleetLinkNode(context=ros_context, namespace="/auv0",
                         parameter_overrides=overrides({"vehicle_id": 3, **LINK}))
    nodes_to_destroy.append(link)
    tester = make_node("fleet_link_status_test")
    ingest = tester.create_publisher(PointCloud2, "/auv0/samples", qos.SAMPLES)
    statuses = []
    tester.create_subscription(DiagnosticArray, "/diagnostics",
                               lambda m: statuses.extend(msg.status_record(s) for s in m.status),
                               qos.DIAGNOSTICS)
    assert spin_until(lambda: ingest.get_subscription_count() >= 1, link, tester,
                      timeout=TIMEOUT)
    xy = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    ingest.publish(cv.samples_to_cloud(header(10.0), xy, np.array([-20.0, -21.0, -22.0])))

    def counted() -> bool:
        return any(status.waiting + status.soundings_sent == 3 for status in statuses)
    assert spin_until(counted, link, tester, timeout=5.0)
