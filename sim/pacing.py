"""Lockstep's back-pressure: the simulated clock never leaves a consumer ``max_backlog``
messages of a topic still to take.

Lockstep holds the clock at decision points; between them it runs at ``time_scale`` whether
the nodes that take the sensor streams keep up or not, and a consumer far enough behind loses
messages when its subscription's queue overflows (lost in transport: the soundings then drop
for want of a pose). So a consumer reports, per sensor topic, the stamp of the newest message
it has taken off its queue (:class:`TakenStamps`), and the simulator, which knows the stamps
it sent, makes no more steps than keep every consumer's backlog of every topic below
``max_backlog`` messages (:class:`ClockPacing`). A queue deeper than that (the ingest's holds 2,000)
then never overflows, however loaded the machine: a slow consumer slows the clock instead of
losing data, and a consumer that keeps up is never waited for. A consumer that stops reporting
(its process gone or stalled for ``stale_after`` s of wall time) no longer holds the clock, so
that pacing can never stall a run for good.
"""

from __future__ import annotations

import math
from bisect import bisect_right

HEARTBEAT = 1.0  # s, wall: an unchanged report goes out again this often
STALE_AFTER = 10.0  # s, wall: a consumer silent this long no longer holds the clock


class TakenStamps:
    """A consumer's progress: per topic it subscribes to (``topics``, and any it takes from),
    the stamp (s) of the newest message taken; -inf before the first. A report is due
    (:meth:`due`) when anything moved since the last one, or a :data:`HEARTBEAT` passed."""

    def __init__(self, topics=()) -> None:
        self.stamps: dict[str, float] = dict.fromkeys(topics, -math.inf)
        self._reported: dict[str, float] = {}
        self._reported_at = -math.inf  # s, monotonic

    def take(self, topic: str, stamp: float) -> None:
        """A message stamped ``stamp`` s taken from ``topic``. An older stamp (a clock reset)
        replaces the newer one: the consumer is where its newest message is."""
        self.stamps[topic] = stamp

    def due(self, now: float) -> bool:
        """Whether a report is due at wall time ``now`` (s, monotonic)."""
        return self.stamps != self._reported or now - self._reported_at >= HEARTBEAT

    def report(self, now: float) -> dict[str, float]:
        """The stamps to send at wall time ``now``, marked as reported."""
        self._reported, self._reported_at = dict(self.stamps), now
        return dict(self.stamps)


class ClockPacing:
    """How many steps the simulated clock may make: no more than leave every reporting
    consumer fewer than ``max_backlog`` messages of a topic the simulator sent still to take
    (a step sends at most one message per topic); 0 never holds.

    The stamps sent per topic are kept (the newest ``max_backlog`` at least: a consumer
    older than all of them has a full backlog). A topic the consumer does not report (it does
    not subscribe to it) holds nothing, nor does one it has caught up with (a topic fallen
    silent, as a vehicle's whose mission is done). A consumer that has taken nothing of a
    topic owes only what was sent after its first such report: what went out before it
    subscribed never reaches it (a volatile stream), and a restarted ingest would otherwise
    owe its predecessor's backlog for ever, the clock standing. A consumer that reported
    nothing for ``stale_after`` s of wall time, or was forgotten (its publisher gone), holds
    nothing either."""

    def __init__(self, max_backlog: int, stale_after: float = STALE_AFTER) -> None:
        self.max_backlog, self.stale_after = max_backlog, stale_after
        self._sent: dict[str, list[float]] = {}  # topic -> stamps sent, s, oldest first
        self._taken: dict[str, dict[str, float]] = {}  # consumer -> topic -> stamp, s
        # consumer -> topic -> the newest stamp sent when it first reported nothing taken
        self._joined: dict[str, dict[str, float]] = {}
        self._heard: dict[str, float] = {}  # consumer -> wall time of its last report
        self.held_for = 0.0  # s, wall: how long the clock stood for consumers
        self.holding: list[str] = []  # the consumers that stopped it at the last call

    def sent(self, topic: str, stamp: float) -> None:
        """A message stamped ``stamp`` s went out on ``topic``."""
        stamps = self._sent.setdefault(topic, [])
        stamps.append(stamp)
        if len(stamps) >= 2 * max(self.max_backlog, 1):
            del stamps[:-max(self.max_backlog, 1)]

    def heard(self, consumer: str, stamps: dict[str, float], now: float) -> None:
        """``consumer``'s report at wall time ``now``: per topic, its newest taken stamp."""
        joined = self._joined.setdefault(consumer, {})
        for topic, stamp in stamps.items():
            if stamp > -math.inf:
                joined.pop(topic, None)
            elif topic not in joined:
                sent = self._sent.get(topic)
                joined[topic] = sent[-1] if sent else -math.inf
        self._taken[consumer], self._heard[consumer] = dict(stamps), now

    @property
    def consumers(self) -> list[str]:
        """The consumers heard and not forgotten."""
        return sorted(self._taken)

    def forget(self, consumer: str) -> None:
        """``consumer`` is gone: it no longer holds the clock."""
        self._taken.pop(consumer, None)
        self._heard.pop(consumer, None)
        self._joined.pop(consumer, None)

    def room(self, now: float) -> dict[str, int]:
        """Per consumer heard within ``stale_after`` at wall time ``now`` that reports a topic
        sent, the messages it may still be sent before one of its topics' backlog is full."""
        rooms = {}
        for consumer, taken in self._taken.items():
            if now - self._heard[consumer] >= self.stale_after:
                continue
            joined = self._joined.get(consumer, {})
            for topic, stamps in self._sent.items():
                if topic in taken:
                    since = max(taken[topic], joined.get(topic, -math.inf))
                    untaken = len(stamps) - bisect_right(stamps, since)
                    rooms[consumer] = min(rooms.get(consumer, self.max_backlog),
                                          max(0, self.max_backlog - untaken))
        return rooms

    def steps(self, max_steps: int, now: float, elapsed: float) -> int:
        """At most ``max_steps``, and no more than the least room at wall time ``now``; the
        consumers with none are :attr:`holding`, and ``elapsed`` (s, wall, since the last
        call) counts in :attr:`held_for` while any is."""
        if self.max_backlog <= 0:
            self.holding = []
            return max_steps
        rooms = self.room(now)
        self.holding = sorted(consumer for consumer, room in rooms.items() if room == 0)
        if self.holding:
            self.held_for += elapsed
        return min([max_steps, *rooms.values()])
