"""Messages lost in transport, counted from gaps in DDS sequence numbers."""

from __future__ import annotations

import operator


class SequenceGaps:
    """Messages lost before they reached us, from gaps in each publisher's sequence numbers.

    DDS numbers every sample a writer sends; a reader whose queue overflowed (KEEP_LAST) or
    whose best-effort transport dropped samples sees the numbers jump. Key each stream by
    (topic, publisher id); a number at or below the last one (a restarted publisher, a
    duplicate) restarts the count without counting a loss.
    """

    def __init__(self) -> None:
        self._last: dict = {}
        self.lost = 0

    def saw(self, key, sequence: int | None) -> int:
        """Record message ``sequence`` of stream ``key``; returns how many were skipped."""
        if sequence is None:
            return 0
        last = self._last.get(key)
        self._last[key] = sequence
        skipped = sequence - last - 1 if last is not None and sequence > last + 1 else 0
        self.lost += skipped
        return skipped

    def saw_run(self, key, sequences: list) -> int:
        """:meth:`saw` for consecutive messages of stream ``key``, in one step when the
        numbers only go up (as a DDS reader delivers one writer's samples): the recorder
        counts tens of thousands a second."""
        if not sequences or sequences[0] is None:
            return 0
        last = self._last.get(key)
        if not all(map(operator.lt, sequences, sequences[1:])) or \
                (last is not None and sequences[0] <= last):
            return sum(self.saw(key, sequence) for sequence in sequences)
        first = sequences[0] if last is None else last + 1
        self._last[key] = sequences[-1]
        skipped = sequences[-1] - first + 1 - len(sequences)
        self.lost += skipped
        return skipped
