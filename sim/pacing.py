"""Lockstep's back-pressure: the simulated clock runs no further ahead of its consumers than
``max_lead`` simulated seconds.

Lockstep holds the clock at decision points; between them it runs at ``time_scale`` whether
the nodes that take the sensor streams keep up or not, and a consumer far enough behind loses
messages when its subscription's queue overflows (lost in transport: the soundings then drop
for want of a pose). So a consumer reports, per sensor topic, the stamp of the newest message
it has taken off its queue (:class:`TakenStamps`), and the simulator lets its clock run to at
most that stamp plus ``max_lead`` for every topic it has published on (:class:`ClockPacing`):
a queue then holds at most ``max_lead`` s of readings, however loaded the machine, and a slow
consumer slows the clock instead of losing data. A consumer that stops reporting (its process
gone or stalled for ``stale_after`` s of wall time) no longer holds the clock, so that pacing
can never stall a run for good.
"""

from __future__ import annotations

import math

REPORT_STEP = 1.0  # s of sim time: a topic's taken stamp moved this far is worth a report
HEARTBEAT = 1.0  # s, wall: an unchanged report goes out again this often
STALE_AFTER = 10.0  # s, wall: a consumer silent this long no longer holds the clock


class TakenStamps:
    """A consumer's progress: per topic it subscribes to (``topics``, and any it takes from),
    the stamp (s) of the newest message taken; -inf before the first, so that a simulator
    waits for that one before it runs ahead.

    A report is due when a topic's stamp moved :data:`REPORT_STEP` or more since the last
    report (:meth:`take` says so), and otherwise, from a periodic check (:meth:`due`), when
    anything moved or a :data:`HEARTBEAT` passed."""

    def __init__(self, topics=()) -> None:
        self.stamps: dict[str, float] = dict.fromkeys(topics, -math.inf)
        self._reported: dict[str, float] = {}
        self._reported_at = -math.inf  # s, monotonic

    def take(self, topic: str, stamp: float) -> bool:
        """A message stamped ``stamp`` s taken from ``topic``; True when a report is due.
        An older stamp (a repeat, a clock reset) replaces the newer one: the consumer is where
        its newest message is."""
        self.stamps[topic] = stamp
        return abs(stamp - self._reported.get(topic, -math.inf)) >= REPORT_STEP

    def due(self, now: float) -> bool:
        """Whether a report is due at wall time ``now`` (s, monotonic): something moved since
        the last one, or a heartbeat is."""
        return self.stamps != self._reported or now - self._reported_at >= HEARTBEAT

    def report(self, now: float) -> dict[str, float]:
        """The stamps to send at wall time ``now``, marked as reported."""
        self._reported, self._reported_at = dict(self.stamps), now
        return dict(self.stamps)


class ClockPacing:
    """How far the simulated clock may run: ``max_lead`` s past the newest stamp that every
    reporting consumer has taken, on every topic the simulator published; 0 never holds.

    A topic the consumer does not report (it does not subscribe to it) holds nothing; one it
    has caught up with lets the clock run ``max_lead`` past where it is (so a topic fallen
    silent, as a vehicle's whose mission is done, never holds it). A consumer that
    reported nothing for ``stale_after`` s of wall time, or was forgotten (its publisher
    gone), holds nothing either."""

    def __init__(self, max_lead: float, stale_after: float = STALE_AFTER) -> None:
        self.max_lead, self.stale_after = max_lead, stale_after
        self.published: dict[str, float] = {}  # topic -> newest stamp sent, s
        self._taken: dict[str, dict[str, float]] = {}  # consumer -> topic -> stamp, s
        self._heard: dict[str, float] = {}  # consumer -> wall time of its last report
        self.held_for = 0.0  # s, wall: how long the clock stood for consumers
        self.holding: list[str] = []  # the consumers holding it at the last clamp

    def sent(self, topic: str, stamp: float) -> None:
        """A message stamped ``stamp`` s went out on ``topic``."""
        self.published[topic] = stamp

    def heard(self, consumer: str, stamps: dict[str, float], now: float) -> None:
        """``consumer``'s report at wall time ``now``: per topic, its newest taken stamp."""
        self._taken[consumer], self._heard[consumer] = dict(stamps), now

    def has_heard(self, consumer: str) -> bool:
        return consumer in self._taken

    def forget(self, consumer: str) -> None:
        """``consumer`` is gone: it no longer holds the clock."""
        self._taken.pop(consumer, None)
        self._heard.pop(consumer, None)

    def bounds(self, clock: float, now: float) -> dict[str, float]:
        """Per consumer that may hold the clock (at ``clock`` s, wall time ``now``), the
        simulated time (s) it lets the clock run to: ``max_lead`` past its oldest untaken
        message's predecessor, or past the clock where it has taken everything."""
        if self.max_lead <= 0:
            return {}
        bounds = {}
        for consumer, taken in self._taken.items():
            reported = [taken[topic] if taken[topic] < sent else clock
                        for topic, sent in self.published.items() if topic in taken]
            if reported and now - self._heard[consumer] < self.stale_after:
                bounds[consumer] = min(reported) + self.max_lead
        return bounds

    def clamp(self, target: float, clock: float, now: float, elapsed: float) -> float:
        """``target`` (s, where the clock would run to) within every consumer's bound at wall
        time ``now``, never behind the clock at ``clock`` s (a bound may be -inf). The
        consumers whose bound stops the clock are :attr:`holding`, and ``elapsed`` (s, wall,
        since the last call) counts in :attr:`held_for` while they are."""
        bounds = self.bounds(clock, now)
        self.holding = sorted(c for c, bound in bounds.items() if bound <= clock)
        if self.holding and clock < target:
            self.held_for += elapsed
        return min(target, max(clock, min(bounds.values(), default=math.inf)))
