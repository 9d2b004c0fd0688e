"""The ingest's input streams: each one's frame, clock, order and completeness (no ROS).

Streams: the odometry (``odom``), the ranges (``range``), the swaths (``swath``), each scalar
channel (``channel:<name>``) and the IMU and depth sensor (``imu``, ``depth``:
:mod:`~poam_ros.ingest.attitude_depth`).

Clocks. Each stream of :data:`CLOCKED` and each channel keeps its own clock, the newest
stamp it accepted, and a stamp more than ``stamp_jump_threshold`` seconds from it is held
as a suspect (:class:`~poam_ros.ingest.clock_jumps.ClockJumps`): a glitch if a stamp near
the clock comes next (dropped: ``pose_stamp_outlier``, ``stamp_outlier``), a clock change
if ``stamp_reset_count`` suspects in a row agree with each other. Such a reset is counted
in :attr:`Streams.clock_resets`, described in :attr:`Streams.reset_details` and logged,
and the run of suspects is then used as the new clock's first messages; what the reset
restarts is the caller's (:class:`~poam_ros.ingest.core.Ingest`). Ordinary reordering,
within the threshold, is dropped (``out_of_order``, ``duplicate``), and a reading stamped
at or before a published decision-point batch is ``late``.

Completeness. A stream has delivered everything stamped up to ``t`` when a reading stamped
after it has come (a stream is in order), or its next reading is due after it (its last
stamp plus its period: the configured rate, or the shortest interval seen, whichever is
shorter). The decision-point batch waits on it (:mod:`~poam_ros.ingest.batcher`).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from poam_ros.ingest.attitude_depth import enabled_streams
from poam_ros.ingest.clock_jumps import ClockJumps, Verdict
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.pose_history import STAMP_TOLERANCE
from poam_ros.ingest.reasons import (
    DUPLICATE,
    LATE,
    OUT_OF_ORDER,
    POSE_STAMP_OUTLIER,
    STALE_STAMP,
    STAMP_OUTLIER,
    WRONG_FRAME,
    Drops,
)

log = logging.getLogger(__name__)

ODOM, RANGE, SWATH = "odom", "range", "swath"  # streams; RANGE and SWATH are reading kinds
CLOCKED = (ODOM, RANGE, SWATH)  # streams with a clock whatever the configuration
CHANNEL = "channel:"  # + a channel's name: its stream and reading kind


@dataclass
class _Stream:
    """What a sensor topic has delivered so far (for ordering and completeness)."""

    rate: float
    last: float = -math.inf        # newest stamp seen with the right frame
    shortest: float = math.inf     # shortest interval between two stamps

    def saw(self, t: float) -> None:
        if math.isfinite(self.last):
            self.shortest = min(self.shortest, t - self.last)
        self.last = t

    def complete_until(self, t: float) -> bool:
        """Whether everything this stream stamps up to ``t`` has arrived (no loss)."""
        if self.last > t + STAMP_TOLERANCE:
            return True
        period = min(1.0 / self.rate if self.rate > 0 else math.inf, self.shortest)
        return math.isfinite(period) and self.last + period > t + STAMP_TOLERANCE


class Streams:
    """Every stream's clock (:class:`ClockJumps`) and delivery (order, rate, completeness).

    ``on_reset(stream, old, stamps)``: a stream's clock moved from ``old`` to the confirmed
    run ``stamps`` [s]; the caller restarts what belongs to the old clock, then calls
    :meth:`count_reset`."""

    def __init__(self, config: IngestConfig, drops: Drops,
                 on_reset: Callable[[str, float, list[float]], None]) -> None:
        self._drops = drops
        self._on_reset = on_reset
        self.clock_resets: Counter = Counter()  # per stream
        self.reset_details: dict[str, str] = {}  # per stream, its latest reset
        self._clocks = {stream: ClockJumps() for stream in CLOCKED}
        self._streams = {RANGE: _Stream(config.sonar_rate), SWATH: _Stream(config.swath_rate)}
        self.configure(config)

    def configure(self, config: IngestConfig) -> None:
        """New rates and rules; each stream keeps its clock and what it has seen."""
        self.config = config
        self._streams[RANGE].rate = config.sonar_rate
        self._streams[SWATH].rate = config.swath_rate
        rates = config.channel_rates or [0.0] * len(config.channels)
        for name, rate in zip(config.channels, rates):
            self._streams.setdefault(CHANNEL + name, _Stream(rate)).rate = rate
            self._clocks.setdefault(CHANNEL + name, ClockJumps())
        for name in enabled_streams(config):
            self._streams.setdefault(name, _Stream(0.0))

    @property
    def held(self) -> int:
        """Messages held as suspect stamps, every stream together."""
        return sum(clock.held for clock in self._clocks.values())

    def held_of(self, stream: str) -> int:
        """Messages of ``stream`` held as suspect stamps."""
        return self._clocks[stream].held if stream in self._clocks else 0

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

    def judge(self, stream: str, t: float, samples: int, accept: Callable[[], bool]) -> bool:
        """The clock rule on a message of ``samples`` that passed its own checks: ``accept()``
        (the rest of its checks and its use) runs now, at a reset (with the rest of its
        run, in order), or never (an outlier, dropped)."""
        config = self.config
        clock = self._clocks[stream]
        old = clock.clock
        verdict, outliers, confirmed = clock.judge(t, (samples, accept),
                                                   config.stamp_jump_threshold,
                                                   config.stamp_reset_count)
        for stamp, (count, _) in outliers:
            self._drops.drop(POSE_STAMP_OUTLIER if stream == ODOM else STAMP_OUTLIER, count,
                             f"{stream} stamped {stamp:.6f} s, {stamp - old:+.6g} s from its "
                             f"clock: a glitch, fewer than {config.stamp_reset_count} in a "
                             f"row agreed")
        if verdict is Verdict.ACCEPT:
            return accept()
        if verdict is Verdict.HELD:
            return False
        self._on_reset(stream, old, [stamp for stamp, _ in confirmed])
        for _, (_, use) in confirmed:  # the run in order, this message last
            kept = use()
        return kept

    def count_reset(self, stream: str, old: float, stamps: list[float], abandoned: int,
                    restarted: str) -> None:
        """Count, describe and log ``stream``'s reset, once ``restarted`` (what, in words)
        and ``abandoned`` waiting samples of the old clock were dropped."""
        self.clock_resets[stream] += 1
        self.reset_details[stream] = detail = (
            f"{stream} clock reset: {len(stamps)} stamps in a row {stamps[0] - old:+.6g} s from "
            f"its clock at {old:.6f} s, from {stamps[0]:.6f} s on; {restarted} restarted, "
            f"{abandoned} waiting samples of the old clock dropped")
        log.warning(detail)

    def restart(self, stream: str) -> None:
        """``stream``'s order starts again (its clock was reset)."""
        self._streams[stream].last = -math.inf

    def in_order(self, kind: str, t: float, samples: int, published_until: float) -> bool:
        """Stamp order, duplicates and lateness (at or before ``published_until``, the
        stamp of the last decision-point batch) of a reading past the clock rule."""
        stream = self._streams[kind]
        if abs(t - stream.last) <= STAMP_TOLERANCE:
            return self._drops.drop(DUPLICATE, samples, f"second {kind} stamped {t:.9f} s")
        if t < stream.last:
            return self._drops.drop(OUT_OF_ORDER, samples, f"{kind} stamped {t:.6f} s after "
                                    f"one stamped {stream.last:.6f} s")
        stream.saw(t)
        if t <= published_until + STAMP_TOLERANCE:
            return self._drops.drop(LATE, samples, f"{kind} stamped {t:.6f} s came after the "
                                    f"batch up to {published_until:.6f} s was published")
        return True

    def complete_until(self, t: float, horizon: float) -> bool:
        """Whether every active stream has delivered everything stamped up to ``t``: a
        stream with a configured rate is expected; one without, once it has shown up since
        ``horizon``."""
        return all(stream.complete_until(t) for stream in self._streams.values()
                   if stream.rate > 0 or stream.last >= horizon)
