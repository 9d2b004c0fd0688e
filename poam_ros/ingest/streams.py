"""The ingest's input streams: one rule for each one's clock and order, and resets resolved
across them; each one's frame and completeness (no ROS).

Streams: the odometry (``odom``), the ranges (``range``), the swaths (``swath``), the
position fixes (``fix``), each scalar channel (``channel:<name>``) and the IMU and depth
sensor (``imu``, ``depth``: :mod:`~poam_ros.ingest.attitude_depth`). Every message of every
stream passes :meth:`Streams.judge`, the one rule below; a stream is registered here (with
the reasons its drops count under) or ``judge`` refuses it, so no stream can skip the rule.

Clocks. Each stream keeps its own clock, the newest stamp it accepted, and a stamp more
than ``stamp_jump_threshold`` seconds before it, or after it by more than the clock runs in
``stamp_jump_threshold`` wall seconds (its measured rate: a simulator at ``time_scale`` 400
runs 400 times faster, and a loaded subscriber that misses messages sees its stamps leap) is
held as a suspect (:class:`~poam_ros.ingest.clock_jumps.ClockJumps`): a glitch if a stamp
near the clock
comes next (dropped: ``pose_stamp_outlier`` for the odometry, ``stamp_outlier`` for the
rest), a clock change if ``stamp_reset_count`` suspects in a row agree with each other.
Such a reset is counted in :attr:`Streams.clock_resets`, described in
:attr:`Streams.reset_details` and logged when it is confirmed.

Resets across streams. The readings depend on the odometry (their poses) and on the IMU and
depth series, so one clock change is resolved across every stream at once: the first stream
to reset opens a round, and from then on the messages of each stream that has reset (its
confirmed run, then everything it sends) are held, not used, while the streams that have not
reset yet go on with the old clock (a sonar lagging the odometry still has the old pose
history to place its old readings on). The round is resolved once no active stream (one
that has sent within ``stamp_jump_threshold`` wall seconds) is left on another clock (more
than ``stamp_jump_threshold`` from the new one), or at the latest ``stamp_jump_threshold``
wall seconds after it opened: what each reset restarts
is the caller's (``on_reset``, the odometry's first: :class:`~poam_ros.ingest.core.Ingest`
drops there what can no longer be placed, ``clock_reset``), and then the held messages are
used in the order they came, on the new pose history. So a clock change loses no valid
reading whichever stream leads, by up to ``stamp_jump_threshold`` seconds; held messages
count in :attr:`Streams.held` and none is dropped for being held. A stream whose clock the
odometry does not follow within the bound (its own clock changed) then has its readings
placed as any: older than the pose history, ``stale_stamp``; newer, they wait for a pose
(``no_pose``, ``queue_overflow``).

Order. Past the clock rule, a message stamped within ``STAMP_TOLERANCE`` of its stream's
newest is a ``duplicate``, one older ``out_of_order`` (a fix's both ``fix_out_of_order``; the
odometry's order is its pose history's, :mod:`~poam_ros.ingest.placement`), and a reading
stamped at or before a published decision-point batch is ``late``.

Completeness. A stream has delivered everything stamped up to ``t`` when a reading stamped
after it has come (a stream is in order), or its next reading is due after it (its last
stamp plus its period: the configured rate, or the shortest interval seen, whichever is
shorter). The decision-point batch waits on the readings', the IMU's and the depth's
streams (:mod:`~poam_ros.ingest.batcher`), not on the odometry's or the fixes'.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from poam_ros.ingest.attitude_depth import enabled_streams
from poam_ros.ingest.channels import CHANNEL
from poam_ros.ingest.clock_jumps import ClockJumps, Verdict
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.pose_history import STAMP_TOLERANCE
from poam_ros.ingest.reasons import (
    DUPLICATE,
    FIX_OUT_OF_ORDER,
    LATE,
    OUT_OF_ORDER,
    POSE_STAMP_OUTLIER,
    STALE_STAMP,
    STAMP_OUTLIER,
    WRONG_FRAME,
    Drops,
)

log = logging.getLogger(__name__)

ODOM, RANGE, SWATH, FIX = "odom", "range", "swath", "fix"  # RANGE, SWATH: reading kinds too


@dataclass
class _Stream:
    """A stream's clock and what it has delivered so far (order, completeness), and the
    reasons its drops count under (``duplicate`` None: ordered by its owner)."""

    rate: float
    outlier: str = STAMP_OUTLIER
    duplicate: str | None = DUPLICATE
    out_of_order: str = OUT_OF_ORDER
    late: bool = True              # stamped at or before a published batch: too late
    waited: bool = True            # the decision-point batch waits on it
    clock: ClockJumps = field(default_factory=ClockJumps)
    seen: float = -math.inf        # wall time of its latest message [s]
    last: float = -math.inf        # newest stamp in order
    shortest: float = math.inf     # shortest interval between two stamps

    def saw(self, t: float) -> None:
        if math.isfinite(self.last):
            self.shortest = min(self.shortest, t - self.last)
        self.last = t

    @property
    def period(self) -> float:
        """Stamp seconds between readings at the configured rate [s], 0 when unknown."""
        return 1.0 / self.rate if self.rate > 0 else 0.0

    def complete_until(self, t: float) -> bool:
        """Whether everything this stream stamps up to ``t`` has arrived (no loss)."""
        if self.last > t + STAMP_TOLERANCE:
            return True
        period = min(self.period or math.inf, self.shortest)
        return math.isfinite(period) and self.last + period > t + STAMP_TOLERANCE


@dataclass
class _Round:
    """A clock change being resolved across the streams (see the module docstring)."""

    opened: float                                   # wall time [s]
    clock: float                                    # the new clock: its first run's newest
    resets: dict[str, tuple[float, list[float]]] = field(default_factory=dict)  # old, run
    held: list[tuple[str, Callable[[], bool]]] = field(default_factory=list)


class Streams:
    """Every stream's clock (:class:`ClockJumps`), order and completeness, and the round
    that resolves a clock change across them.

    ``on_reset(stream, old, stamps)``: at a round's resolution, ``stream``'s clock moved
    from ``old`` to the confirmed run ``stamps`` [s]; the caller restarts what belongs to
    the old clock (the odometry's first) and says what, in words. ``published_until()``:
    the stamp of the last decision-point batch [s]."""

    def __init__(self, config: IngestConfig, drops: Drops,
                 on_reset: Callable[[str, float, list[float]], str],
                 published_until: Callable[[], float] = lambda: -math.inf) -> None:
        self._drops = drops
        self._on_reset = on_reset
        self._published_until = published_until
        self.clock_resets: Counter = Counter()  # per stream
        self.reset_details: dict[str, str] = {}  # per stream, its latest reset
        self._round: _Round | None = None
        self._streams = {
            ODOM: _Stream(0.0, POSE_STAMP_OUTLIER, None, late=False, waited=False),
            RANGE: _Stream(config.sonar_rate), SWATH: _Stream(config.swath_rate),
            FIX: _Stream(0.0, STAMP_OUTLIER, FIX_OUT_OF_ORDER, FIX_OUT_OF_ORDER, late=False,
                         waited=False)}
        self.configure(config)

    def configure(self, config: IngestConfig) -> None:
        """New rates and rules; each stream keeps its clock and what it has seen."""
        self.config = config
        self._streams[RANGE].rate = config.sonar_rate
        self._streams[SWATH].rate = config.swath_rate
        rates = config.channel_rates or [0.0] * len(config.channels)
        for name, rate in zip(config.channels, rates):
            self._streams.setdefault(CHANNEL + name, _Stream(rate)).rate = rate
        for name in enabled_streams(config):
            self._streams.setdefault(name, _Stream(0.0))

    @property
    def names(self) -> tuple[str, ...]:
        """Every stream registered, the odometry first."""
        return tuple(self._streams)

    @property
    def held(self) -> int:
        """Messages held, every stream together: suspect stamps and a round's."""
        return sum(map(self.held_of, self._streams))

    def held_of(self, stream: str) -> int:
        """Messages of ``stream`` held as suspect stamps or until a round's resolution."""
        if stream not in self._streams:
            return 0
        in_round = self._round.held if self._round else []
        return self._streams[stream].clock.held + sum(name == stream for name, _ in in_round)

    def period_of(self, stream: str) -> float:
        """Stamp seconds between ``stream``'s readings at its configured rate, 0 when
        unknown (or not registered)."""
        return self._streams[stream].period if stream in self._streams else 0.0

    def admit(self, kind: str, t: float, frame_id: str | None, samples: int,
              expected: str | None = None) -> bool:
        """Frame (``expected``, default the sonar's) and a finite stamp of a reading, before
        the clock rule."""
        expected = expected or self.config.sonar_frame
        if frame_id is not None and frame_id != expected:
            return self._drops.drop(WRONG_FRAME, samples, f"{kind} in frame {frame_id!r}, "
                                    f"expected {expected!r}")
        if not math.isfinite(t):
            return self._drops.drop(STALE_STAMP, samples, f"{kind} with stamp {t}")
        return True

    def judge(self, stream: str, t: float, samples: int, now: float,
              accept: Callable[[], bool]) -> bool:
        """The clock and order rules on a message of ``stream`` (registered: ``KeyError``
        otherwise), ``samples`` strong, stamped ``t`` [s] (finite), received at wall time
        ``now`` [s], that passed its own checks: ``accept()`` (its use) runs now, at a
        round's resolution (in the order the messages came), or never (an outlier,
        dropped, or out of order). True when it ran now and kept the message."""
        config, state = self.config, self._streams[stream]
        state.seen = now
        old = state.clock.clock

        def use() -> bool:
            return self._in_order(stream, t, samples) and accept()

        verdict, outliers, confirmed = state.clock.judge(t, (samples, use),
                                                         config.stamp_jump_threshold,
                                                         config.stamp_reset_count, now,
                                                         state.period)
        for stamp, (count, _) in outliers:
            self._drops.drop(state.outlier, count, f"{stream} stamped {stamp:.6f} s, "
                             f"{stamp - old:+.6g} s from its clock: a glitch, fewer than "
                             f"{config.stamp_reset_count} in a row agreed")
        if verdict is Verdict.HELD:
            return False
        if verdict is Verdict.RESET:
            self._confirmed(stream, old, [stamp for stamp, _ in confirmed], now)
            self._round.held += [(stream, run) for _, (_, run) in confirmed]
            return self._settle(now)
        if self._round is not None and stream in self._round.resets:
            self._round.held.append((stream, use))
            return False
        return use()

    def expire(self, now: float) -> None:
        """Resolve a round open for longer than its bound at wall time ``now`` [s]."""
        self._settle(now)

    def restart(self, stream: str) -> None:
        """``stream``'s order starts again (its clock, or the odometry's, was reset)."""
        self._streams[stream].last = -math.inf

    def complete_until(self, t: float, horizon: float) -> bool:
        """Whether every waited-for stream has delivered everything stamped up to ``t``: a
        stream with a configured rate is expected; one without, once it has shown up since
        ``horizon``."""
        return all(stream.complete_until(t) for stream in self._streams.values()
                   if stream.waited and (stream.rate > 0 or stream.last >= horizon))

    # ---------------------------------------------------------------------- internals

    def _in_order(self, kind: str, t: float, samples: int) -> bool:
        """Order, duplicates and lateness of a message of ``kind`` past the clock rule."""
        stream = self._streams[kind]
        if stream.duplicate is None:  # the odometry: its pose history orders it
            return True
        if abs(t - stream.last) <= STAMP_TOLERANCE:
            return self._drops.drop(stream.duplicate, samples,
                                    f"second {kind} stamped {t:.9f} s")
        if t < stream.last:
            return self._drops.drop(stream.out_of_order, samples, f"{kind} stamped {t:.6f} s "
                                    f"after one stamped {stream.last:.6f} s")
        stream.saw(t)
        published_until = self._published_until()
        if stream.late and t <= published_until + STAMP_TOLERANCE:
            return self._drops.drop(LATE, samples, f"{kind} stamped {t:.6f} s came after the "
                                    f"batch up to {published_until:.6f} s was published")
        return True

    def _confirmed(self, stream: str, old: float, stamps: list[float], now: float) -> None:
        """Count, describe and log ``stream``'s reset; it joins the round (opened now if
        none is)."""
        self.clock_resets[stream] += 1
        self.reset_details[stream] = detail = (
            f"{stream} clock reset: {len(stamps)} stamps in a row {stamps[0] - old:+.6g} s from "
            f"its clock at {old:.6f} s, from {stamps[0]:.6f} s on")
        log.warning(detail)
        if self._round is None:
            self._round = _Round(now, stamps[-1])
        self._round.resets[stream] = (old, stamps)

    def _settle(self, now: float) -> bool:
        """Resolve the round once no active stream is left on another clock, or once it has
        waited its bound; what the last held message's use returned (False when none ran)."""
        bound = self.config.stamp_jump_threshold
        round_ = self._round
        if round_ is None:
            return False
        behind = [name for name, stream in self._streams.items()
                  if name not in round_.resets and stream.clock.clock is not None
                  and now - stream.seen <= bound
                  and abs(stream.clock.clock - round_.clock) > bound]
        if behind and now - round_.opened <= bound:
            return False
        self._round = None
        for stream in sorted(round_.resets, key=lambda name: name != ODOM):
            old, stamps = round_.resets[stream]
            restarted = self._on_reset(stream, old, stamps)
            self.reset_details[stream] += f"; {restarted}"
            log.info("%s clock reset resolved: %s", stream, restarted)
        kept = False
        for _, use in round_.held:  # in the order they came
            kept = use()
        return kept
