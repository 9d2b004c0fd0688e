"""A link between vehicles as an acoustic network runs one: a byte budget, a TDMA schedule,
latency and loss, driven by explicit time and a seeded generator.

The rules, for each sender (:class:`LinkSchedule`), with time in integer nanoseconds so that
window edges are exact:

- **Budget**: the packets that leave in any half-open window (t − 1 s, t] hold at most
  ``bandwidth`` bytes together; ``bandwidth`` 0 is unlimited (0 rather than inf, because the
  parameter path keeps values finite). A packet leaves at an instant; its airtime is not
  modelled beyond the budget. A packet is at most :attr:`LinkConfig.packet_limit` bytes:
  ``max_packet_bytes``, and never more than one second's budget, or it could never leave.
- **Schedule** (TDMA): with ``slot_length`` L > 0 and ``slots`` S, time runs in cycles of
  S·L s from 0, and a sender transmits only inside its slot, [k·S·L + slot·L, k·S·L +
  (slot + 1)·L). L = 0: no schedule.
- A sender's packets leave in the order sent, each at the earliest instant both rules allow
  (:meth:`LinkSchedule.earliest`); the sender's queue (the modem's buffer) holds at most
  ``queue_packets``, a packet sent into a full one is dropped and counted.
- **Latency**: a packet that leaves at t arrives at t + ``latency``; **loss**: each receiver
  independently misses it with probability ``loss_probability`` (the medium is a broadcast:
  every other vehicle may hear every packet).

:class:`LinkChannel` applies them between a fleet's vehicles (the ``fleet_channel`` node of a
simulation); a vehicle's own ``fleet_link`` keeps its own :class:`LinkSchedule`, so that it
forms a packet only when one can leave (docs/fleet.md).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from dataclasses import dataclass

import numpy as np

from poam_ros.params import ConfigError, Params, param

SECOND = 1_000_000_000  # ns: the budget's window
QUEUE_FULL = "queue_full"
OVERSIZE = "oversize"


def nanoseconds(seconds: float) -> int:
    """``seconds`` as integer nanoseconds, the schedule's time."""
    return round(seconds * SECOND)


@dataclass
class LinkConfig(Params):
    """One link's budget, schedule, latency and loss."""

    bandwidth: float = param(0.0, "bytes the link carries at most in any 1-s window; 0: "
                                  "unlimited", unit="B/s", low=0.0)
    latency: float = param(0.0, "from a packet leaving to its arrival", unit="s", low=0.0)
    loss_probability: float = param(0.0, "the chance that a receiver misses a packet, "
                                         "independently per packet and receiver", low=0.0,
                                    high=1.0)
    max_packet_bytes: int = param(256, "the largest packet (the modem's frame), at most one "
                                       "second's budget", unit="B", low=1)
    slot_length: float = param(0.0, "a TDMA slot; 0: no schedule, a sender sends at any time",
                               unit="s", low=0.0)
    slots: int = param(1, "TDMA slots per cycle", low=1)
    slot: int = param(0, "this sender's slot, 0 .. slots - 1", low=0)
    queue_packets: int = param(64, "packets a sender's queue holds; a packet sent into a full "
                                   "one is dropped", low=1)

    def validate(self) -> None:
        if self.slot >= self.slots:
            raise ConfigError(f"LinkConfig.slot must be below slots ({self.slots}), got "
                              f"{self.slot}")
        if 0 < self.bandwidth < 1:
            raise ConfigError(f"LinkConfig.bandwidth must be 0 (unlimited) or at least 1 B/s, "
                              f"got {self.bandwidth}")

    @property
    def packet_limit(self) -> int:
        """The largest packet that can leave: ``max_packet_bytes``, within one second's
        budget."""
        if self.bandwidth == 0:
            return self.max_packet_bytes
        return min(self.max_packet_bytes, int(self.bandwidth))


class LinkSchedule:
    """When one sender's packets may leave: the budget's window and the TDMA slot. It
    remembers what left in the last second and counts ``bytes_sent``, ``packets_sent`` and
    ``peak_window_bytes``, the most bytes that left in any 1-s window. Times are integer
    nanoseconds (:func:`nanoseconds`): a float of seconds since 1970 resolves only about
    0.2 µs, and the window's edges must be exact."""

    def __init__(self, config: LinkConfig) -> None:
        self.config = config
        self._recent: deque[tuple[int, int]] = deque()  # (time ns, bytes) of the last second
        self.bytes_sent = 0
        self.packets_sent = 0
        self.peak_window_bytes = 0

    def earliest(self, now: int, size: int) -> int:
        """The earliest instant ≥ ``now`` [ns] at which a packet of ``size`` bytes may leave
        (after those already recorded)."""
        if self.config.bandwidth > 0:
            budget = int(self.config.bandwidth)
            used = self._window_bytes(now)
            # each packet that leaves the window frees its bytes one second after it left
            for time, sent in list(self._recent):
                if used + size <= budget:
                    break
                now, used = max(now, time + SECOND), used - sent
        return self._slot_start(now)  # later only frees more of the budget

    def capacity(self, now: int) -> int:
        """The largest packet that may leave at ``now`` [ns]: 0 outside the slot or with the
        second's budget spent."""
        if self._slot_start(now) != now:
            return 0
        limit = self.config.packet_limit
        if self.config.bandwidth == 0:
            return limit
        return max(0, min(limit, int(self.config.bandwidth) - self._window_bytes(now)))

    def record(self, now: int, size: int) -> None:
        """A packet of ``size`` bytes left at ``now`` [ns], as the rules allow."""
        self._recent.append((now, size))
        self.bytes_sent += size
        self.packets_sent += 1
        self.peak_window_bytes = max(self.peak_window_bytes, self._window_bytes(now))

    def _window_bytes(self, now: int) -> int:
        """Bytes that left in (now − 1 s, now]; forgets what left before."""
        while self._recent and self._recent[0][0] <= now - SECOND:
            self._recent.popleft()
        return sum(size for time, size in self._recent if time <= now)

    def _slot_start(self, now: int) -> int:
        """The first instant ≥ ``now`` inside this sender's slot."""
        length = nanoseconds(self.config.slot_length)
        if length == 0:
            return now
        cycle = length * self.config.slots
        start = self.config.slot * length
        phase = now % cycle
        if start <= phase < start + length:
            return now
        return now - phase + start + (cycle if phase >= start + length else 0)


@dataclass(frozen=True)
class Delivery:
    """A packet from ``sender`` that reaches ``receiver`` at ``time`` [s]."""

    time: float
    sender: str
    receiver: str
    packet: bytes


class LinkChannel:
    """The medium between a fleet's vehicles: each sender's queue and schedule (vehicle k in
    slot k mod ``slots``), the packets in flight, and the counts ``sent``, ``lost``,
    ``delivered`` (packets, by sender) and ``dropped`` (by :data:`QUEUE_FULL`,
    :data:`OVERSIZE`). Time is explicit and must not go back; the same calls with the same
    ``seed`` give the same losses."""

    def __init__(self, config: LinkConfig, vehicles, seed: int = 0) -> None:
        self.config = config
        self.vehicles = tuple(vehicles)
        if len(set(self.vehicles)) != len(self.vehicles):
            raise ConfigError(f"vehicles named twice: {list(self.vehicles)}")
        self.schedules = {name: LinkSchedule(config.replace(slot=k % config.slots))
                          for k, name in enumerate(self.vehicles)}
        # (the time it was sent [ns], the packet) per sender
        self._queues: dict[str, deque[tuple[int, bytes]]] = {
            name: deque() for name in self.vehicles}
        self._flight: list[tuple[int, int, str, str, bytes]] = []  # heap by arrival
        self._order = 0  # ties in arrival keep the order of departure
        self._rng = np.random.default_rng(seed)
        self._now = 0  # ns
        self._left: dict[str, int] = {}  # each sender's last departure [ns]
        self.sent: Counter[str] = Counter()
        self.lost: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def send(self, sender: str, time: float, packet: bytes) -> bool:
        """Queue ``packet`` from ``sender`` at ``time`` [s]; False (and counted) when it is
        over the packet limit or the queue is full. It leaves at :meth:`advance`."""
        if len(packet) > self.config.packet_limit:
            self.dropped[OVERSIZE] += 1
            return False
        queue = self._queues[sender]
        if len(queue) >= self.config.queue_packets:
            self.dropped[QUEUE_FULL] += 1
            return False
        queue.append((nanoseconds(time), bytes(packet)))
        return True

    def advance(self, time: float) -> list[Delivery]:
        """Let every packet that may leave by ``time`` [s] leave, and return those that
        arrive by then, in order of arrival."""
        self._now = now = max(self._now, nanoseconds(time))
        latency = nanoseconds(self.config.latency)
        for sender, queue in self._queues.items():
            schedule = self.schedules[sender]
            while queue:
                sent, packet = queue[0]
                leaves = schedule.earliest(max(sent, self._left.get(sender, 0)), len(packet))
                if leaves > now:
                    break
                queue.popleft()
                schedule.record(leaves, len(packet))
                self._left[sender] = leaves
                self.sent[sender] += 1
                self._launch(sender, leaves + latency, packet)
        arrived = []
        while self._flight and self._flight[0][0] <= now:
            arrival, _, sender, receiver, packet = heapq.heappop(self._flight)
            self.delivered[sender] += 1
            arrived.append(Delivery(arrival / SECOND, sender, receiver, packet))
        return arrived

    def queued(self, sender: str) -> int:
        return len(self._queues[sender])

    def _launch(self, sender: str, arrival: int, packet: bytes) -> None:
        for receiver in self.vehicles:
            if receiver == sender:
                continue
            if self._rng.random() < self.config.loss_probability:
                self.lost[sender] += 1
                continue
            heapq.heappush(self._flight, (arrival, self._order, sender, receiver, packet))
            self._order += 1
