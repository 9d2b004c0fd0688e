"""The player over real DDS: a bag's messages arrive in order with their relative timing
(generous tolerance: the machine may be loaded) at rate factors 1 and 10; topics are
selected and remapped; a latched topic stays latched; a topic whose type is not installed
is skipped with one warning while the rest plays; a truncated bag plays what is readable."""

from __future__ import annotations

import statistics
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import Range  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.bags import BagWriter, MessageTypes  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.bag_player import BagPlayer  # noqa: E402

RANGE = "sensor_msgs/msg/Range"
COUNT = 16
SPACING = 0.2  # s of receive time between messages
LATCHED_QOS = [{"history": "unknown", "depth": 0, "reliability": "reliable",
                "durability": "transient_local"}]


def write_bag(path):
    types = MessageTypes()
    with BagWriter(path, chunk_size=512) as writer:
        ranges = writer.add_topic("/sonar/range", RANGE, *types.definition(RANGE))
        clock = writer.add_topic("/clock", "rosgraph_msgs/msg/Clock",
                                 *types.definition("rosgraph_msgs/msg/Clock"))
        latched = writer.add_topic("/plan_like", RANGE, *types.definition(RANGE), LATCHED_QOS)
        alien = writer.add_topic("/alien", "nowhere_msgs/msg/Thing", "int32 a\n", "")
        base = 1_700_000_000 * 10**9
        for k in range(COUNT):
            t = base + int(k * SPACING * 1e9)
            reading = cv.range_from_reading(Header(frame_id="s", stamp=cv.seconds_to_time(k)),
                                            float(k), min_range=0.0, max_range=100.0,
                                            field_of_view=0.0)
            writer.write(ranges, t, serialize_message(reading))
            writer.write(clock, t, serialize_message(cv.clock_from_seconds(k * SPACING)))
            writer.write(alien, t, b"\x00\x01\x00\x00\x05\x00\x00\x00")
        writer.write(latched, base, serialize_message(Range(range=42.0)))
    return path


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    return write_bag(tmp_path_factory.mktemp("play") / "bag")


def play_into(ros_context, make_node, spin_until, bag, rate, **player_args):
    listener = make_node("listener")
    arrivals = []
    topic = player_args.get("remap", {}).get("/sonar/range", "/sonar/range")
    listener.create_subscription(Range, topic, lambda m: arrivals.append(
        (time.monotonic(), m.range)), QoSProfile(depth=100,
                                                 reliability=ReliabilityPolicy.RELIABLE))
    clocks = []
    listener.create_subscription(Clock, "/clock", clocks.append, 100)
    player = BagPlayer(bag, context=ros_context, **player_args)
    try:
        # Let discovery match the player's publishers to the listener before playing.
        spin_until(lambda: player.count_subscribers(topic) > 0, listener, timeout=10.0)
        spin_until(lambda: False, listener, timeout=0.5)
        report = {}
        thread = threading.Thread(target=lambda: report.update(r=player.play(rate=rate)))
        thread.start()
        assert spin_until(lambda: len(arrivals) == COUNT and not thread.is_alive(), listener,
                          timeout=COUNT * SPACING / rate + 20.0)
        thread.join(timeout=5.0)
        if "/clock" in player.topics:  # published just after the last range
            spin_until(lambda: len(clocks) >= COUNT, listener, timeout=5.0)
    finally:
        player.destroy_node()
    return arrivals, clocks, report["r"]


@pytest.mark.parametrize("rate", [1.0, 10.0])
def test_messages_arrive_in_order_with_their_timing(ros_context, make_node, spin_until, bag,
                                                    rate):
    arrivals, clocks, report = play_into(ros_context, make_node, spin_until, bag, rate)
    assert [value for _, value in arrivals] == [float(k) for k in range(COUNT)]
    scheduled = [k * SPACING / rate for k in range(COUNT)]
    arrived = [when for when, _ in arrivals]
    # The rate factor: the median slope between every pair of arrivals against the schedule
    # (Theil-Sen), which one message delayed by a loaded 2-core machine cannot move; playing
    # at half or double the rate gives 2 or 0.5.
    slopes = [(arrived[j] - arrived[i]) / (scheduled[j] - scheduled[i])
              for i in range(COUNT) for j in range(i + 1, COUNT)]
    assert 0.7 <= statistics.median(slopes) <= 1.4, statistics.median(slopes)
    # The relative timing: against the schedule as its earliest message places it (nothing
    # arrives before it is sent), no message late by more than 0.5 s plus 10 %.
    start = min(a - t for a, t in zip(arrived, scheduled))
    assert all(a - start <= t * 1.1 + 0.5 for a, t in zip(arrived, scheduled)), \
        [round(a - start - t, 3) for a, t in zip(arrived, scheduled)]
    # The recorded /clock plays too: the stack can run on bag time.
    assert [c.clock.sec + c.clock.nanosec * 1e-9 for c in clocks] == \
        pytest.approx([k * SPACING for k in range(COUNT)])
    assert report.skipped == {"/alien": "type nowhere_msgs/msg/Thing is not installed here"}
    assert report.published["/sonar/range"] == COUNT and not report.backwards


def test_selection_remapping_and_latching(ros_context, make_node, spin_until, bag):
    arrivals, clocks, report = play_into(
        ros_context, make_node, spin_until, bag, 10.0,
        topics=["/sonar/range", "/plan_like", "/missing"],
        remap={"/sonar/range": "/replayed/range"})
    assert len(arrivals) == COUNT and not clocks
    assert set(report.published) == {"/replayed/range", "/plan_like"}
    assert report.skipped == {"/missing": "not in the bag"}
    late = make_node("late_joiner")
    got = []
    late.create_subscription(Range, "/plan_like", got.append, qos.LATCHED)
    # The player is gone: a latched message now comes from nobody; a new player offers it.
    player = BagPlayer(bag, topics=["/plan_like"], context=ros_context)
    try:
        player.play(rate=100.0)
        assert spin_until(lambda: got, late, timeout=10.0)  # published before we subscribed
        assert got[0].range == 42.0
    finally:
        player.destroy_node()


def test_a_truncated_bag_plays_what_is_readable(ros_context, make_node, spin_until, tmp_path,
                                                bag):
    killed = tmp_path / "killed"
    killed.mkdir()
    data = (bag / "bag_0.mcap").read_bytes()
    (killed / "killed_0.mcap").write_bytes(data[: len(data) // 2])
    player = BagPlayer(killed, context=ros_context)
    try:
        report = player.play(rate=100.0)
    finally:
        player.destroy_node()
    assert report.read.damaged and report.read.unknown_loss
    assert any("damaged bag" in line for line in report.lines())
