"""The autopilot's boot time (``time_boot_ms``) mapped onto the stack's clock.

A message stamped ``b`` seconds after the autopilot booted arrives at stack time
``r = b + c + d``: ``c`` is the constant offset between the two clocks (when the autopilot
booted, on the stack's clock) and ``d ≥ 0`` the transport delay (serial, UDP, the
autopilot's send queue). Each message gives an upper bound ``r − b ≥ c``, so the minimum
of ``r − b`` over a window is the tightest estimate: ``ĉ = c + min d``. Messages are then
stamped ``b + ĉ``, never later than their arrival, never a wall-clock guess, and in the
autopilot's own order. The window (default 30 s) lets the estimate follow a drift
between the clocks and recover from a one-off long delay at the start.

A reboot shows as the boot time going back. Back by more than ``reboot_tolerance`` (the
autopilot stamps different messages at different points of its loop, so small steps back
are normal) is a reboot: the offset is forgotten and estimated afresh.
"""

from __future__ import annotations

from collections import deque


class AutopilotClock:
    """Tracks ĉ (module docstring); ``window`` and ``reboot_tolerance`` in seconds."""

    def __init__(self, window: float = 30.0, reboot_tolerance: float = 1.0) -> None:
        if not (window > 0 and reboot_tolerance >= 0):
            raise ValueError(f"window must be > 0 and reboot_tolerance >= 0, got {window}, "
                             f"{reboot_tolerance}")
        self.window = window
        self.reboot_tolerance = reboot_tolerance
        self.reboots = 0
        self._samples: deque[tuple[float, float]] = deque()  # (received, r - b), r - b rising
        self._latest_boot: float | None = None

    @property
    def offset(self) -> float | None:
        """ĉ in seconds (stack time of the autopilot's boot); None before any message."""
        return self._samples[0][1] if self._samples else None

    @property
    def latest(self) -> float | None:
        """Stack time of the newest boot time seen; None before any message."""
        if self._latest_boot is None:
            return None
        return self._latest_boot + self.offset

    def observe(self, boot: float, received: float) -> bool:
        """Take a message stamped ``boot`` s since boot, received at stack time ``received``.

        Returns False when it reveals a reboot (the estimate is then reset; the caller
        drops that message); True otherwise."""
        if self._latest_boot is not None and boot < self._latest_boot - self.reboot_tolerance:
            self.reboots += 1
            self._samples.clear()
            self._latest_boot = None
            return False
        self._latest_boot = boot if self._latest_boot is None else max(self._latest_boot, boot)
        bound = received - boot
        samples = self._samples
        while samples and samples[-1][1] >= bound:  # a monotone queue keeps the minimum first
            samples.pop()
        samples.append((received, bound))
        while samples[0][0] < received - self.window and len(samples) > 1:
            samples.popleft()
        return True

    def stamp(self, boot: float) -> float:
        """Stack time of ``boot`` s since the autopilot booted (after :meth:`observe`)."""
        if not self._samples:
            raise RuntimeError("no message observed since the start or the last reboot")
        return boot + self.offset
