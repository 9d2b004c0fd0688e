"""Which soundings go first when the link cannot carry them all: the most novel.

The rule is spatial novelty: a sounding's rank is its distance to the nearest sounding this
vehicle has already sent, and a packet is filled greedily, each pick joining the sent set
before the next (a farthest-point traversal); ties (nothing sent yet) go to the oldest. Why
not the sender's predictive variance at the sounding before it was added, the ideal rank?
The GP's predictive variance depends only on where samples are (Rasmussen & Williams eq. 2.26),
and for a stationary kernel it grows with the distance to the nearest sample, so the farthest
sounding is, to that nearest-sample approximation, the one the teammates' maps know least
about, which is what the receivers' variance would say. The mapper's own variance would
rank by what the *sender* knew, not by what was *sent*: a sounding beside one the link dropped
ranks high by novelty and low by the sender's variance. It also needs no round trip to the
mapper for every batch (the ``samples`` topic carries no variance), and it is the same every
time for the same soundings (the tests check the order).

:class:`NoveltyPool` holds the soundings waiting (at most ``capacity``: over it, the least
novel are dropped and counted) and the positions already sent, in a k-d tree rebuilt as it
doubles, so a new batch's novelty costs O(N log S) for S sent.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from poam_ros.fleet.encoding import Quantised

_UNINDEXED = 256  # sent positions searched by brute force before the tree is rebuilt


class SentPositions:
    """The positions (m) already sent, for nearest-distance queries."""

    def __init__(self) -> None:
        self._indexed = np.empty((0, 2))
        self._tree: cKDTree | None = None
        self._recent: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self._indexed) + sum(len(block) for block in self._recent)

    def add(self, xy: np.ndarray) -> None:
        self._recent.append(np.asarray(xy, dtype=float).reshape(-1, 2))
        if sum(len(block) for block in self._recent) > max(_UNINDEXED, len(self._indexed)):
            self._indexed = np.vstack([self._indexed, *self._recent])
            self._recent = []
            self._tree = cKDTree(self._indexed)

    def distance(self, xy: np.ndarray) -> np.ndarray:
        """(N,) distance [m] from each of ``xy`` (N, 2) to the nearest sent position; inf
        when none was sent."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        nearest = np.full(len(xy), np.inf)
        if self._tree is not None and len(xy):
            nearest = self._tree.query(xy)[0]
        if self._recent and len(xy):
            recent = np.vstack(self._recent)
            gaps = np.linalg.norm(xy[:, None, :] - recent[None, :, :], axis=2).min(axis=1)
            nearest = np.minimum(nearest, gaps)
        return nearest


class NoveltyPool:
    """Soundings waiting to be sent (quantised), each with its distance to the nearest sent
    one; :meth:`take` gives the most novel. Counts ``dropped`` (over ``capacity``)."""

    def __init__(self, capacity: int, xy_resolution: float) -> None:
        self.capacity = capacity
        self.resolution = xy_resolution
        self.sent = SentPositions()
        self.dropped = 0
        self._waiting: Quantised | None = None
        self._novelty = np.empty(0)

    def __len__(self) -> int:
        return 0 if self._waiting is None else len(self._waiting)

    def add(self, soundings: Quantised) -> None:
        """Add ``soundings`` (after those waiting); over ``capacity``, keep the most novel
        (the oldest of equals)."""
        if not len(soundings):
            return
        novelty = self.sent.distance(soundings.xy * self.resolution)
        waiting = soundings if self._waiting is None else _joined(self._waiting, soundings)
        self._novelty = np.concatenate([self._novelty, novelty])
        keep = np.arange(len(waiting))
        if len(waiting) > self.capacity:
            keep = np.sort(np.argsort(-self._novelty, kind="stable")[:self.capacity])
            self.dropped += len(waiting) - self.capacity
        self._waiting = _selected(waiting, keep)
        self._novelty = self._novelty[keep]

    def take(self, count: int) -> Quantised | None:
        """Up to ``count`` soundings, most novel first: each pick the farthest from every
        sounding sent or picked before it. They leave the pool and join the sent set."""
        if self._waiting is None or count <= 0:
            return None
        xy = self._waiting.xy * self.resolution
        novelty = self._novelty.copy()
        picks = []
        for _ in range(min(count, len(novelty))):
            pick = int(np.argmax(novelty))  # the first (oldest) of equals
            picks.append(pick)
            novelty = np.minimum(novelty, np.linalg.norm(xy - xy[pick], axis=1))
            novelty[pick] = -np.inf
        chosen = _selected(self._waiting, np.array(picks))
        self.sent.add(xy[picks])
        rest = np.setdiff1d(np.arange(len(novelty)), picks)
        self._waiting = _selected(self._waiting, rest) if len(rest) else None
        self._novelty = novelty[rest]
        return chosen


def _joined(first: Quantised, second: Quantised) -> Quantised:
    return Quantised(np.concatenate([first.xy, second.xy]),
                     np.concatenate([first.values, second.values]),
                     np.concatenate([first.stamps, second.stamps]))


def _selected(soundings: Quantised, index: np.ndarray) -> Quantised:
    return Quantised(soundings.xy[index], soundings.values[index], soundings.stamps[index])
