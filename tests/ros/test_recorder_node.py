"""The recorder node over real DDS, in this process: two publishers on one topic bursting,
interleaved, faster than a two-deep subscription can be taken, so that the intake takes
both publishers' messages together. Every message is either in the bag or counted lost
for its own publisher, and ``/diagnostics`` reports the same."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Range  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.bags import BagReader, RecorderConfig  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.recorder_node import RecorderNode  # noqa: E402

BURST = 300


def test_messages_a_full_queue_dropped_are_counted_per_publisher(make_node, spin_until,
                                                                 ros_context, tmp_path):
    recorder = RecorderNode(context=ros_context, config=RecorderConfig(
        output=str(tmp_path / "bag"), topics=["sonar/range"], queue_depth=2,
        discovery_period=0.1))
    node = make_node("sounders")
    profile = QoSProfile(depth=2 * BURST, reliability=ReliabilityPolicy.RELIABLE)
    publishers = [node.create_publisher(Range, "sonar/range", profile) for _ in range(2)]
    statuses = []
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda array: statuses.extend(array.status), qos.DIAGNOSTICS)
    try:
        assert spin_until(lambda: all(p.get_subscription_count() for p in publishers),
                          node, recorder, timeout=30.0), "the recorder never subscribed"
        # The queue holds the topic's latest two messages, whichever publisher sent them:
        # each publisher's first and last message are sent alone, so that every number
        # between them is either taken or seen skipped.
        publish_alone(publishers, recorder, node, spin_until)
        for k in range(BURST):  # bursts that a two-deep queue cannot hold
            for publisher in publishers:
                publisher.publish(Range(range=float(k)))
        spin_until(lambda: False, node, recorder, timeout=0.5)
        publish_alone(publishers, recorder, node, spin_until)
        published = 2 * (BURST + 2)
        assert recorder.message_count + sum(recorder.lost.values()) == published, \
            (recorder.message_count, dict(recorder.lost))
        lost = recorder.lost["/sonar/range"]
        assert 0 < lost < published
        assert spin_until(lambda: any(msg.status_record(s).lost == lost for s in statuses),
                          node, recorder, timeout=10.0), "diagnostics never reported the loss"
    finally:
        recorder.destroy_node()
    stored = list(BagReader(tmp_path / "bag").messages())
    assert len(stored) == published - lost
    assert [m.log_time for m in stored] == sorted(m.log_time for m in stored)


def publish_alone(publishers, recorder, node, spin_until) -> None:
    for publisher in publishers:
        stored = recorder.message_count
        publisher.publish(Range(range=-1.0))
        assert spin_until(lambda: recorder.message_count == stored + 1, node, recorder,
                          timeout=30.0), "a message sent alone was not stored"
