"""Validation of incoming samples: every rejected sample is counted with its reason.

The mapping models' one filter, so that a sample refused anywhere is refused for the same,
named reason. Structural problems of a whole batch (wrong shape, mismatched
lengths) raise :class:`InvalidBatchError`; per-sample problems drop just those samples:
non-finite inputs or targets, and exact duplicates (same input and target) within the batch
or of any sample the model holds. A repeated input with another target is kept (a repeated
measurement). Duplicates are found vectorised: the held rows' 64-bit hashes are kept sorted
with their row numbers (16 bytes a sample) and a hash match is confirmed against the held
row, so a collision never drops a sample.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

NONFINITE_INPUT = "nonfinite_input"
NONFINITE_TARGET = "nonfinite_target"
DUPLICATE = "duplicate"
MALFORMED_BATCH = "malformed_batch"
#: Samples set aside after an update that failed on them (counted by the model's intake).
UPDATE_FAILED = "update_failed"


class InvalidBatchError(ValueError):
    """A batch that cannot be read as N inputs of dimension D with N targets."""


@dataclass
class BatchReport:
    """What became of one batch: how many samples were accepted, and why others were not."""

    accepted: int = 0
    rejected: Counter = field(default_factory=Counter)

    @property
    def num_rejected(self) -> int:
        return sum(self.rejected.values())


def as_batch(x, y, input_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Coerce to float arrays x (N × D) and y (N,), or raise :class:`InvalidBatchError`."""
    try:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as err:
        raise InvalidBatchError(f"samples are not numeric arrays: {err}") from None
    if x.ndim == 1 and input_dim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] != input_dim:
        raise InvalidBatchError(f"inputs must have shape (N, {input_dim}), got {x.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise InvalidBatchError(f"targets must have shape ({x.shape[0]},), got {y.shape}")
    return x, y


def filter_samples(x: np.ndarray, y: np.ndarray, seen: SeenSamples | None = None):
    """Drop non-finite samples and exact duplicates (same input and target), vectorised.

    ``y`` may hold several channels (N × D, NaN where a channel was not measured): a sample is
    then dropped as a non-finite target only when no channel is finite.

    A repeated input with a *different* target is a legitimate repeated measurement and is
    kept; an identical (input, target) pair is a duplicated message, within the batch or of
    a sample in ``seen`` (the samples accepted earlier). ``seen`` is not changed: add the
    accepted samples to it once they are stored (:meth:`SeenSamples.add`).

    Returns (x_ok, y_ok, BatchReport).
    """
    report = BatchReport()
    finite_x = np.isfinite(x).all(axis=1)
    finite_y = np.isfinite(y) if y.ndim == 1 else np.isfinite(y).any(axis=1)
    report.rejected[NONFINITE_INPUT] += int((~finite_x).sum())
    report.rejected[NONFINITE_TARGET] += int((finite_x & ~finite_y).sum())
    keep = finite_x & finite_y
    candidates = np.flatnonzero(keep)
    rows = np.ascontiguousarray(np.column_stack([x[candidates], y[candidates]]))
    # Bitwise-equal rows, as the bytes of the message compare: -0.0 and 0.0 differ.
    bits = rows.view(np.uint64)
    _, first = np.unique(bits, axis=0, return_index=True)
    duplicate = np.ones(len(rows), dtype=bool)
    duplicate[first] = False
    if seen is not None and len(seen):
        duplicate |= seen.contains(rows)
    keep[candidates[duplicate]] = False
    report.rejected[DUPLICATE] += int(duplicate.sum())
    report.rejected = +report.rejected  # drop zero counts
    report.accepted = int(keep.sum())
    return x[keep], y[keep], report


def row_hashes(rows: np.ndarray) -> np.ndarray:
    """64-bit hashes (N,) of the bit patterns of rows (N, K) of float64 (a multiply-xorshift
    mix per column); equal rows hash alike, and a match is only a candidate."""
    bits = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    hashes = np.zeros(len(bits), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in bits.T:
            hashes = (hashes ^ column) * np.uint64(0x9E3779B97F4A7C15)
            hashes ^= hashes >> np.uint64(29)
    return hashes


class SeenSamples:
    """The samples a model holds, for exact duplicate detection over all its data.

    Keeps the 64-bit :func:`row_hashes` of the stored rows (input, target) sorted, with
    their row numbers in ``store`` (16 bytes a sample, beside the 8·(D+1) of the rows
    themselves); a hash match is confirmed against the stored row, so a collision never
    drops a sample. ``store`` is the model's sample buffer (``x`` (N, D), ``y`` (N,)).
    """

    def __init__(self, store) -> None:
        self.store = store
        self._hashes = np.empty(0, dtype=np.uint64)
        self._rows = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._hashes)

    def contains(self, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` (N, D+1) are stored already, as a boolean mask (N,)."""
        hashes = row_hashes(rows)
        start = np.searchsorted(self._hashes, hashes, side="left")
        end = np.searchsorted(self._hashes, hashes, side="right")
        found = np.zeros(len(rows), dtype=bool)
        for i in np.flatnonzero(end > start):  # hash matches: duplicates, rarely collisions
            stored = self._rows[start[i]:end[i]]
            candidates = np.column_stack([self.store.x[stored], self.store.y[stored]])
            found[i] = bool((candidates.view(np.uint64) == rows[i].view(np.uint64)).all(
                axis=1).any())
        return found

    def add(self, first_row: int, rows: np.ndarray) -> None:
        """Record ``rows`` (N, D+1), stored at row numbers ``first_row`` … ``first_row + N - 1``."""
        hashes = row_hashes(rows)
        order = np.argsort(hashes, kind="stable")
        hashes = hashes[order]
        numbers = first_row + order.astype(np.int64)
        at = np.searchsorted(self._hashes, hashes)
        self._hashes = np.insert(self._hashes, at, hashes)
        self._rows = np.insert(self._rows, at, numbers)

    def remove(self, start: int, stop: int) -> None:
        """Forget rows ``start … stop-1`` of the store, which deletes them; later rows move up
        by ``stop - start``."""
        keep = (self._rows < start) | (self._rows >= stop)
        self._hashes, self._rows = self._hashes[keep], self._rows[keep]
        self._rows[self._rows >= stop] -= stop - start
