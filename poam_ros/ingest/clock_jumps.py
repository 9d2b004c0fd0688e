"""A stream's stamps: a glitch told from a clock change, so that neither stalls the ingest.

Fast clocks. A simulator at ``time_scale`` 400 stamps 400 s of data every wall second, and a
subscriber on a loaded computer that stalls for 30 ms, its queue overflowing, sees its next
message stamped 12 s after the last one it took: a gap, not a jump. So the rule is judged on
the stream's own clock, in the wall time it runs at: each stream measures its rate, the
stamp seconds its clock advanced per wall second of arrival (over spans of at least
:data:`RATE_WINDOW`, the highest seen; 1 until measured), and a stamp is a suspect forwards
only beyond ``(threshold + elapsed) * max(1, rate) + period``: further than the clock runs
in ``threshold`` wall seconds more than have passed since the stamp it is judged against
came, plus the stream's own period where it is known (its configured rate). So a slow
sensor, a sounding every 20 s or a cast every minute, is no jump at any threshold: in real
time its next stamp is as far on as the wall time between them, and on a fast clock one
period on is where its next reading is due, before the rate is measured. Backwards the bound
stays ``threshold``: a live stream's stamps do not run back, so a clock that restarts (a
simulator started again, a bag looped) is found however fast it ran. The price: a forward
glitch within that bound is taken for a gap (an outlier at 400 x must be over an hour off),
and a backlog handled in a burst measures high. Without arrival times (``now`` None) the
rate stays 1 and nothing has elapsed: the plain rule.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple


class Verdict(Enum):
    ACCEPT = "accept"   # near the stream's clock (or the stream's first stamp): use it now
    HELD = "held"       # a suspect: kept until more stamps tell a glitch from a clock change
    RESET = "reset"     # the suspect completed a run that agrees: the clock changed


class Judgement(NamedTuple):
    """What :meth:`ClockJumps.judge` found. ``outliers``: (stamp, item) of earlier suspects
    this stamp showed to be glitches, to drop; ``confirmed``: on ``RESET``, (stamp, item) of
    the run, oldest first (this one last): the new clock's first stamps, to use now."""

    verdict: Verdict
    outliers: list[tuple[float, Any]]
    confirmed: list[tuple[float, Any]]


RATE_WINDOW = 0.25  # wall s: the shortest span a stream's rate is measured over


class ClockJumps:
    """The clock of one in-order stream (odometry, ranges or swaths) and its suspect stamps.

    The stream's clock is the newest stamp accepted [s]. A stamp more than ``threshold``
    seconds before it, or more than ``(threshold + elapsed) * max(1, rate) + period`` after
    it, with ``elapsed`` the wall time since the clock's stamp came and ``period`` the
    stream's (the module docstring), is a suspect: held, not used. Then

    * a stamp within those bounds of the clock comes: the suspects were glitches (a GPS time
      jump, a corrupt header) and are returned as outliers; the stamp is accepted;
    * ``count`` suspects in a row agree, each within the bounds of the one before: the
      clock has changed (sim time restarted, a bag looped backwards, a persistent forward
      correction); they are returned, oldest first, and the clock follows them;
    * a suspect that does not agree with the one before makes the run so far outliers and
      starts a new run.

    So a burst of fewer than ``count`` glitched stamps costs only those messages, a clock
    change costs nothing but a delay of ``count - 1`` messages, and ordinary reordering
    (within ``threshold``) is the caller's to judge as before. At most ``count - 1`` items
    are held.
    """

    def __init__(self) -> None:
        self.clock: float | None = None
        self.rate = 1.0  # stamp s per wall s, the highest measured (at least 1)
        self._held: list[tuple[float, Any]] = []
        self._since: tuple[float, float] | None = None  # (wall s, clock) the span starts at
        self._accepted_at: float | None = None  # wall s the latest accepted stamp came
        self._held_at: float | None = None  # wall s the latest suspect came

    @property
    def held(self) -> int:
        """Suspect stamps waiting for a verdict."""
        return len(self._held)

    def judge(self, t: float, item: Any, threshold: float, count: int,
              now: float | None = None, period: float = 0.0) -> Judgement:
        """The verdict on stamp ``t`` [s] (finite) of a message standing for ``item``, that
        came at wall time ``now`` [s] (None: unknown, the rate is not measured), of a stream
        whose readings are due every ``period`` stamp seconds (0: unknown)."""
        bound = threshold, now, period
        if self.clock is None or self._near(t, self.clock, *bound, self._accepted_at):
            outliers, self._held = self._held, []
            self.clock = t if self.clock is None else max(self.clock, t)
            self._accepted_at = now
            self._measure(now)
            return Judgement(Verdict.ACCEPT, outliers, [])
        outliers = []
        if self._held and not self._near(t, self._held[-1][0], *bound, self._held_at):
            outliers, self._held = self._held, []
        self._held.append((t, item))
        self._held_at = now
        if len(self._held) < count:
            return Judgement(Verdict.HELD, outliers, [])
        confirmed, self._held = self._held, []
        self.clock = max(stamp for stamp, _ in confirmed)
        self._accepted_at = now
        self._since = None  # the old clock's span means nothing for the new one
        self._measure(now)
        return Judgement(Verdict.RESET, outliers, confirmed)

    def _near(self, t: float, reference: float, threshold: float, now: float | None,
              period: float, came: float | None) -> bool:
        """Whether ``t``, come at wall time ``now``, is no jump from ``reference``, which came
        at ``came``: at most ``threshold`` before it, at most ``(threshold + elapsed) * rate +
        period`` after it (``elapsed`` 0 where either wall time is unknown)."""
        elapsed = max(0.0, now - came) if now is not None and came is not None else 0.0
        return -threshold <= t - reference <= (threshold + elapsed) * self.rate + period

    def _measure(self, now: float | None) -> None:
        """The rate over the span since ``_since``, once it lasts :data:`RATE_WINDOW`."""
        if now is None:
            return
        if self._since is None or now < self._since[0]:
            self._since = (now, self.clock)
            return
        start, clock = self._since
        if now - start >= RATE_WINDOW:
            self.rate = max(self.rate, (self.clock - clock) / (now - start))
            self._since = (now, self.clock)
