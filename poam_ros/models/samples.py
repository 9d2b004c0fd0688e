"""Validation of incoming samples: every rejected sample is counted with its reason.

Shared by the mapping models and the ingest node, so that a sample refused anywhere is refused
for the same, named reason. Structural problems of a whole batch (wrong shape, mismatched
lengths) raise :class:`InvalidBatchError`; per-sample problems drop just those samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

NONFINITE_INPUT = "nonfinite_input"
NONFINITE_TARGET = "nonfinite_target"
DUPLICATE = "duplicate"
MALFORMED_BATCH = "malformed_batch"


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


def filter_samples(x: np.ndarray, y: np.ndarray, seen: set | None = None):
    """Drop non-finite samples and exact duplicates (same input and target).

    A repeated input with a *different* target is a legitimate repeated measurement and is
    kept; an identical (input, target) pair is a duplicated message. ``seen`` holds the byte
    keys of samples accepted earlier and is updated in place.

    Returns (x_ok, y_ok, BatchReport).
    """
    report = BatchReport()
    finite_x = np.isfinite(x).all(axis=1)
    finite_y = np.isfinite(y)
    report.rejected[NONFINITE_INPUT] += int((~finite_x).sum())
    report.rejected[NONFINITE_TARGET] += int((finite_x & ~finite_y).sum())
    keep = finite_x & finite_y
    rows = np.column_stack([x, y])
    seen = set() if seen is None else seen
    for i in np.flatnonzero(keep):
        key = rows[i].tobytes()
        if key in seen:
            keep[i] = False
            report.rejected[DUPLICATE] += 1
        else:
            seen.add(key)
    report.rejected = +report.rejected  # drop zero counts
    report.accepted = int(keep.sum())
    return x[keep], y[keep], report
