"""ROS 2 node ``recorder``: the stack's topics into a rosbag2 bag, as the publishers sent them.

Subscriptions are raw (``raw=True``): each message arrives as the serialized CDR bytes the
publisher sent and is stored as is, with its receive time (the middleware's
``received_timestamp``, system time in ns, as ``ros2 bag record`` stamps), the
publisher's send time (``source_timestamp``, MCAP's publish time), the type name, the
``ros2msg`` definition and the publisher's type hash. Nothing is re-encoded.

Topics (``topics``, or every topic with ``all_topics``) are looked for every
``discovery_period``; a topic is subscribed once a publisher exists, with QoS adapted to
the publishers as rosbag2 does: reliable unless one of them is best effort, transient
local when all of them are (so latched maps and plans are recorded even when they were
published before the recorder started). Their offered QoS profiles go into the bag, so a
player can offer the same.

Messages are taken off the subscriptions by an intake thread of the node's own (a wait set
over the recording subscriptions, each drained at every wake-up, then a pause of
``INTAKE_PERIOD`` so that a busy topic is taken in batches), not by the executor's
callbacks: an rclpy executor dispatches one message per subscription per wait, a few
thousand a second, where the intake thread takes tens of thousands. The subscriptions
therefore live on a private intake node that no executor spins. The intake thread only
takes; a writer thread does the per-message work every ``flush_period`` (receive times,
gaps in the publishers' sequence numbers) and stores the batch sorted by receive time.
Taking promptly matters beyond the recorder's own queue: Fast DDS searches a reader's
history for every sample that arrives, so a reader left holding thousands of samples
costs its receive thread more per message just when it is behind. The bag's
``metadata.yaml`` is written when a split closes and when the node is destroyed: on
SIGINT or SIGTERM (the spin loop stops; ``main`` destroys the node) the bag is complete.

Publishes ``/diagnostics`` once a second: messages written per topic, messages
lost before they reached the recorder (gaps in each publisher's sequence numbers), and
the queue waiting to be written.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from functools import partial
from operator import itemgetter
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from poam_ros.bags import (
    BagWriteError,
    BagWriter,
    MessageTypes,
    RecorderConfig,
    UnknownMessageType,
    default_bag_path,
)
from poam_ros.diagnostics import RecorderStatus
from poam_ros.ingest import SequenceGaps
from poam_ros.params import ConfigError
from poam_ros.ros import qos
from poam_ros.ros.bag_qos import message_class, qos_to_dict, subscription_qos
from poam_ros.ros.node_status import node_status, status_array
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import StartingNode, run_node

DIAGNOSTICS_PERIOD = 1.0  # s, wall
# After taking what is there, the intake pauses this long before it waits for messages
# again, so that a busy topic is taken in batches: a topic sending 20,000 messages/s would
# otherwise wake the thread every message or two, and the wake-ups cost more than the
# takes. Subscriptions hold what arrives meanwhile (rate × this, far below queue_depth).
INTAKE_PERIOD = 0.002  # s


class RecorderNode(StartingNode):
    """The recorder; see the module docstring. ``config`` (a :class:`RecorderConfig`)
    replaces the declared parameters' values when given (the CLI passes its options)."""

    def __init__(self, node_name: str = "recorder", config: RecorderConfig | None = None,
                 **node_kwargs) -> None:
        self._given_config = config
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        declared = declare_config(self, RecorderConfig,
                                  read_only=[s.name for s in RecorderConfig.specs()])
        self.config = self._given_config or declared
        path = Path(self.config.output).expanduser() if self.config.output \
            else default_bag_path()
        try:
            self.writer = BagWriter(path, self.config.storage, self.config.max_bag_size,
                                    self.config.max_bag_duration, self.config.compression,
                                    custom_data={"recorded_by": f"poam_ros {node_name}"})
        except (BagWriteError, ValueError) as error:
            raise ConfigError(str(error)) from error
        self.types = MessageTypes()
        self.wanted = {self.resolve_topic_name(t) for t in self.config.topics}
        self.subscribed: dict[str, int] = {}  # topic -> writer topic id
        self.refused: dict[str, str] = {}  # topic -> why it is not recorded
        self.lost: Counter = Counter()  # per topic, gaps in sequence numbers
        self._gaps = SequenceGaps()
        # Its own name even under a process-wide __node:= remap (as launch_ros starts a
        # node), which would otherwise rename it too: local arguments take precedence.
        intake_name = f"{self.get_name()}_intake"
        self._intake_node = Node(intake_name, context=self.context,
                                 cli_args=["--ros-args", "-r", f"__node:={intake_name}"],
                                 start_parameter_services=False)
        self._recording: list = []  # (subscription, topic name), read by the intake thread
        self._recording_changed = threading.Event()
        self._queue: deque = deque()
        self._lock = threading.Lock()  # the writer is shared with the writer thread
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._write_loop, name=f"{node_name}_writer",
                                        daemon=True)
        self._thread.start()
        self._intake = threading.Thread(target=self._intake_loop, name=f"{node_name}_intake",
                                        daemon=True)
        self._intake.start()
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._discover()
        self.create_timer(self.config.discovery_period, self._discover, clock=steady)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics",
                                                      qos.DIAGNOSTICS)
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics, clock=steady)
        what = "every topic" if self.config.all_topics else \
            f"{len(self.wanted)} topic(s): {', '.join(sorted(self.wanted))}"
        self.get_logger().info(f"recording {what} to {path} ({self.config.storage})")

    @property
    def path(self) -> Path:
        return self.writer.path

    @property
    def message_count(self) -> int:
        with self._lock:
            return self.writer.message_count + 0

    def counts(self) -> dict[str, int]:
        """Messages written so far per topic."""
        with self._lock:
            return {topic.name: topic.count for topic in self.writer.topics}

    # ------------------------------------------------------------------ discovery

    def _discover(self) -> None:
        for name, type_names in self.get_topic_names_and_types():
            if name in self.subscribed or name in self.refused:
                continue
            if not self.config.all_topics and name not in self.wanted:
                continue
            self._subscribe(name, type_names)

    def _subscribe(self, name: str, type_names: list[str]) -> None:
        publishers = self.get_publishers_info_by_topic(name)
        if not publishers:
            return  # only subscribers so far: wait for a publisher to know its QoS
        msgtype = type_names[0]
        if len(type_names) > 1:
            self.get_logger().warning(f"{name} is published with several types "
                                      f"({', '.join(type_names)}): recording {msgtype}")
        try:
            cls = message_class(msgtype)
        except (ImportError, AttributeError) as error:
            self._refuse(name, f"type {msgtype} is not installed here ({error})")
            return
        type_hash = str(publishers[0].topic_type_hash or "")
        try:
            definition, store_hash = self.types.definition(msgtype)
        except UnknownMessageType as error:
            definition, store_hash = "", ""
            self.get_logger().warning(f"{name}: recorded without a definition: {error}")
        if not type_hash.startswith("RIHS01_"):
            type_hash = store_hash
        offered = [qos_to_dict(p.qos_profile) for p in publishers]
        with self._lock:
            topic_id = self.writer.add_topic(name, msgtype, definition, type_hash, offered)
        self.subscribed[name] = topic_id
        subscription = self._intake_node.create_subscription(
            cls, name, _never_called, subscription_qos(publishers, self.config.queue_depth),
            raw=True)
        with self._lock:
            self._recording = [*self._recording, (subscription, topic_id, name)]
        self._recording_changed.set()
        self.get_logger().info(f"recording {name} ({msgtype})")

    def _refuse(self, name: str, reason: str) -> None:
        self.refused[name] = reason
        self.get_logger().warning(f"not recording {name}: {reason}")

    # ------------------------------------------------------------------ intake

    def _intake_loop(self) -> None:
        """Wait for messages on every recording subscription; take all that are there, as
        they came (bytes, info), and queue them per subscription for the writer thread."""
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

        queue = self._queue
        wait_set, entries = None, []
        while not self._stop.is_set():
            if wait_set is None or self._recording_changed.is_set():
                self._recording_changed.clear()
                with self._lock:
                    entries = list(self._recording)
                if not entries:
                    self._stop.wait(0.05)
                    continue
                # The same low-level wait set rclpy.wait_for_message uses.
                wait_set = _rclpy.WaitSet(len(entries), 0, 0, 0, 0, 0, self.context.handle)
            wait_set.clear_entities()
            for subscription, _, _ in entries:
                wait_set.add_subscription(subscription.handle)
            wait_set.wait(50_000_000)  # ns: wakes for the stop flag at least this often
            for subscription, topic_id, name in entries:
                # take_message until it returns None, looped in C.
                taken = list(iter(partial(subscription.handle.take_message,
                                          subscription.msg_type, True), None))
                if taken:
                    queue.append((topic_id, name, taken))
            self._stop.wait(INTAKE_PERIOD)

    # ------------------------------------------------------------------ writing

    def _write_loop(self) -> None:
        while not self._stop.wait(self.config.flush_period):
            self._drain()
        self._drain()

    def _drain(self) -> None:
        """Write what the intake queued, in receive order across topics; count the
        messages that never reached the recorder."""
        queue, items, now = self._queue, [], time.time_ns()
        while queue:
            topic_id, name, taken = queue.popleft()
            items += [(topic_id, info["received_timestamp"] or now, data,
                       info["source_timestamp"]) for data, info in taken]
            self._count_gaps(name, [info for _, info in taken])
        if not items:
            return
        items.sort(key=itemgetter(1))
        with self._lock:
            self.writer.write_many(items)

    def _count_gaps(self, name: str, infos: list[dict]) -> None:
        publishers = [info["publisher_gid"]["data"] for info in infos]
        sequences = [info["publication_sequence_number"] for info in infos]
        if publishers.count(publishers[0]) == len(publishers):  # one publisher: the usual
            runs = {publishers[0]: sequences}
        else:
            runs = {}
            for publisher, sequence in zip(publishers, sequences):
                runs.setdefault(publisher, []).append(sequence)
        for publisher, run in runs.items():
            skipped = self._gaps.saw_run((name, publisher), run)
            if skipped:
                self.lost[name] += skipped

    def close(self) -> None:
        """Stop taking, write what is queued and finish the bag (metadata.yaml)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._intake.join(timeout=5.0)
        self._thread.join(timeout=30.0)
        self._drain()
        with self._lock:
            self.writer.close()

    def destroy_node(self) -> None:
        self.close()
        self._intake_node.destroy_node()
        super().destroy_node()

    # ------------------------------------------------------------------ diagnostics

    def _publish_diagnostics(self) -> None:
        counts = self.counts()
        lost = sum(self.lost.values())
        level = DiagnosticStatus.WARN if lost or self.refused else DiagnosticStatus.OK
        message = f"recording to {self.path}"
        if lost:
            message += f"; {lost} message(s) lost before the recorder"
        queued = sum(len(taken) for _, _, taken in list(self._queue))
        record = RecorderStatus(messages=sum(counts.values()), queued=queued, lost=lost,
                                topics=len(counts), count=dict(counts),
                                lost_per_topic=dict(self.lost), refused=dict(self.refused))
        self._diagnostics_pub.publish(status_array(self, [node_status(self, level, message,
                                                                      record)]))


def _never_called(_message) -> None:
    """The intake node is never spun: the intake thread takes its messages."""


def main(args=None) -> None:
    """The ``recorder`` executable; stops (and finishes the bag) on SIGINT or SIGTERM."""
    run_node(RecorderNode, "recorder", args)


if __name__ == "__main__":
    main()
