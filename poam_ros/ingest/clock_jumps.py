"""A stream's stamps: a glitch told from a clock change, so that neither stalls the ingest."""

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


class ClockJumps:
    """The clock of one in-order stream (odometry, ranges or swaths) and its suspect stamps.

    The stream's clock is the newest stamp accepted [s]. A stamp more than ``threshold``
    seconds from it, either way, is a suspect: held, not used. Then

    * a stamp within ``threshold`` of the clock comes: the suspects were glitches (a GPS time
      jump, a corrupt header) and are returned as outliers; the stamp is accepted;
    * ``count`` suspects in a row agree, each within ``threshold`` of the one before: the
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
        self._held: list[tuple[float, Any]] = []

    @property
    def held(self) -> int:
        """Suspect stamps waiting for a verdict."""
        return len(self._held)

    def judge(self, t: float, item: Any, threshold: float, count: int) -> Judgement:
        """The verdict on stamp ``t`` [s] (finite) of a message standing for ``item``."""
        if self.clock is None or abs(t - self.clock) <= threshold:
            outliers, self._held = self._held, []
            self.clock = t if self.clock is None else max(self.clock, t)
            return Judgement(Verdict.ACCEPT, outliers, [])
        outliers = []
        if self._held and abs(t - self._held[-1][0]) > threshold:
            outliers, self._held = self._held, []
        self._held.append((t, item))
        if len(self._held) < count:
            return Judgement(Verdict.HELD, outliers, [])
        confirmed, self._held = self._held, []
        self.clock = max(stamp for stamp, _ in confirmed)
        return Judgement(Verdict.RESET, outliers, confirmed)
