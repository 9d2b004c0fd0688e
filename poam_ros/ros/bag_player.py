"""Play a rosbag2 bag onto the ROS graph: the stored CDR bytes, with their original timing.

:class:`BagPlayer` is a node with one publisher per played topic, of the stored type (its
Python class must be installed) and with the QoS the recorded publishers offered
(:func:`~poam_ros.ros.bag_qos.publisher_qos`: latched topics stay latched). :meth:`play`
publishes each message's bytes as stored (``publish(bytes)``: nothing re-encoded) when
``(receive time - first receive time) / rate`` of wall time has passed since the start,
optionally looping, with topic selection and remapping. A ``/clock`` recorded from the
simulator is played like any topic, so that nodes with ``use_sim_time`` run on bag time;
``clock_rate`` > 0 publishes ``/clock`` from the bag's receive times instead (for bags
without one).

Damage is reported, not fatal: topics of types not installed here are skipped (one
warning each), what the reader could not read is in the report, and messages stored out of
time order are published at once (counted). Publishing runs in the calling thread; the
player needs no spinning, as it has no callbacks.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from rosgraph_msgs.msg import Clock as ClockMsg

from poam_ros.bags import BagReader, ReadReport
from poam_ros.ros import qos
from poam_ros.ros.bag_qos import message_class, publisher_qos
from poam_ros.ros.run import StartingNode

CLOCK_TOPIC = "/clock"


@dataclass
class PlayReport:
    """What a play did: messages published per (output) topic, topics skipped and why,
    messages stored out of time order, loops done, and the reader's losses."""

    published: Counter = field(default_factory=Counter)
    skipped: dict[str, str] = field(default_factory=dict)
    backwards: int = 0
    worst_backwards: float = 0.0  # s
    loops: int = 0
    wall_time: float = 0.0
    read: ReadReport = field(default_factory=ReadReport)
    stopped: bool = False

    def lines(self) -> list[str]:
        out = [f"published {sum(self.published.values())} message(s) on "
               f"{len(self.published)} topic(s) in {self.wall_time:.1f} s"
               + (f", {self.loops} loop(s)" if self.loops > 1 else "")
               + (" (stopped)" if self.stopped else "")]
        out += [f"skipped {topic}: {why}" for topic, why in sorted(self.skipped.items())]
        if self.backwards:
            out.append(f"{self.backwards} message(s) stored out of time order (by up to "
                       f"{self.worst_backwards:.3f} s): published at once, in stored order")
        if self.read.damaged:
            out.append(f"damaged bag: {self.read.summary()}")
        return out


class BagPlayer(StartingNode):
    """Publishers for a bag's topics; see the module docstring.

    Args:
        bag: the bag (a path or an open :class:`BagReader`).
        topics: bag topics to play (None: all).
        remap: ``{bag topic: topic to publish on}``.
        clock_rate: > 0 publishes ``/clock`` from the receive times at this rate [Hz]
            (and skips a recorded ``/clock``).
    """

    def __init__(self, bag, topics=None, remap: dict[str, str] | None = None,
                 clock_rate: float = 0.0, node_name: str = "player", **node_kwargs) -> None:
        self._bag, self._requested = bag, topics  # for _start
        self.remap = dict(remap or {})
        self.clock_rate = float(clock_rate)
        self.report = PlayReport()
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        bag, topics = self._bag, self._requested
        self.reader = bag if isinstance(bag, BagReader) else BagReader(bag)
        wanted = set(self.reader.topics) if topics is None else set(topics)
        missing = sorted(wanted - set(self.reader.topics))
        for name in missing:
            self.report.skipped[name] = "not in the bag"
        if self.clock_rate > 0:
            wanted.discard(CLOCK_TOPIC)
        self._outputs = {}
        for name in sorted(wanted - set(missing)):
            info = self.reader.topics[name]
            try:
                cls = message_class(info.msgtype)
            except (ImportError, AttributeError):
                self._skip(name, f"type {info.msgtype or '(unknown)'} is not installed here")
                continue
            self._outputs[name] = self.create_publisher(
                cls, self.remap.get(name, name), publisher_qos(info.offered_qos))
        self._clock_pub = (self.create_publisher(ClockMsg, CLOCK_TOPIC, qos.CLOCK)
                           if self.clock_rate > 0 else None)

    @property
    def topics(self) -> list[str]:
        """Bag topics that will be played."""
        return sorted(self._outputs)

    def _skip(self, name: str, why: str) -> None:
        self.report.skipped[name] = why
        self.get_logger().warning(f"not playing {name}: {why}")

    def play(self, rate: float = 1.0, loop: bool = False, stop: threading.Event | None = None,
             max_loops: int | None = None) -> PlayReport:
        """Publish the bag (again and again with ``loop``) until done or ``stop`` is set."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        stop = stop or threading.Event()
        report = self.report
        started = time.monotonic()
        offset = 0.0  # wall seconds of the loops already played
        while not stop.is_set():
            played_until = self._play_once(rate, stop, started + offset, report)
            report.loops += 1
            report.read = self.reader.report
            if not loop or (max_loops and report.loops >= max_loops) or played_until is None:
                break
            offset = played_until - started
        report.stopped = stop.is_set()
        report.wall_time = time.monotonic() - started
        return report

    def _play_once(self, rate: float, stop: threading.Event, start: float,
                   report: PlayReport) -> float | None:
        """One pass; returns the wall time it ended (None when nothing was played)."""
        first = previous = None
        publishers = self._outputs
        next_clock = 0.0
        clock_period = 1.0 / self.clock_rate if self.clock_rate > 0 else 0.0
        for message in self.reader.messages(publishers or ()):
            if first is None:
                first = message.log_time
            if previous is not None and message.log_time < previous:
                report.backwards += 1
                report.worst_backwards = max(report.worst_backwards,
                                             (previous - message.log_time) / 1e9)
            previous = message.log_time if previous is None else max(previous,
                                                                      message.log_time)
            due = start + (message.log_time - first) / 1e9 / rate
            while True:
                now = time.monotonic()
                if clock_period and now >= next_clock:
                    self._publish_clock(first + (now - start) * rate * 1e9)
                    next_clock = now + clock_period
                wait = due - now
                if wait <= 0:
                    break
                step = min(wait, next_clock - now) if clock_period else wait
                if stop.wait(max(step, 0.0)):
                    return None
            publishers[message.topic].publish(message.data)
            report.published[self.remap.get(message.topic, message.topic)] += 1
        return time.monotonic() if first is not None else None

    def _publish_clock(self, nanoseconds: float) -> None:
        whole, rest = divmod(int(nanoseconds), 10**9)
        message = ClockMsg()
        message.clock.sec, message.clock.nanosec = whole, rest
        self._clock_pub.publish(message)
