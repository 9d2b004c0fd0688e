"""Growable storage of every accepted sample, in world units (float64 on the host).

Hyper-parameter steps draw mini-batches from all data gathered so far, so the data are kept;
the posterior update never reads them again. Capacity doubles when full, so appending is
amortised O(batch) and never copies the whole history each update. World units in float64
keep large projected coordinates (UTM eastings of 10⁶ m) exact whatever the model's dtype.
A sample of a map costs 8·(D + 1) = 24 bytes here and 16 in the duplicate index
(:mod:`.samples`): 40 bytes, about 370 MB for an hour of a 256-beam multibeam at 10 Hz
(9.2 million soundings).
"""

from __future__ import annotations

import numpy as np


class SampleBuffer:
    def __init__(self, input_dim: int, capacity: int = 1024):
        self._x = np.empty((capacity, input_dim))
        self._y = np.empty(capacity)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def append(self, x: np.ndarray, y: np.ndarray) -> None:
        needed = self.size + len(y)
        if needed > len(self._y):
            capacity = max(needed, 2 * len(self._y))
            self._x = np.resize(self._x, (capacity, self._x.shape[1]))
            self._y = np.resize(self._y, (capacity, *self._y.shape[1:]))  # any channels
        self._x[self.size:needed] = x
        self._y[self.size:needed] = y
        self.size = needed

    def remove(self, start: int, stop: int) -> None:
        """Delete rows ``start … stop-1``; the later rows move up."""
        size = self.size
        self._x[start:size - (stop - start)] = self._x[stop:size]
        self._y[start:size - (stop - start)] = self._y[stop:size]
        self.size = size - (stop - start)

    @property
    def x(self) -> np.ndarray:
        return self._x[:self.size]

    @property
    def y(self) -> np.ndarray:
        return self._y[:self.size]
