"""Input and target scalers, fitted once on the pilot survey and then frozen.

The GP works in scaled units: inputs min-max scaled to [-1, 1] per axis (so the attentive
kernel's base lengthscales 0.05 ... 0.5 mean the same thing on every map) and targets
standardised. Freezing them after the pilot survey keeps the stored sufficient statistics of
the online update meaningful: refitting would silently change the units of everything stored.
"""

from __future__ import annotations

import numpy as np


class ScalerNotFittedError(RuntimeError):
    """A scaler was used before it was fitted."""


class MinMaxScaler:
    """Maps each input axis from [low, high] (fitted on data) to [-1, 1].

    ``extent`` (low, high), when set before the fit, is what :meth:`fit` spans instead of the
    data's range: a workspace's bounding box, where the first samples cover too little of it
    (:meth:`~poam_ros.mapping.loop.MappingLoop.step`). It is not state: once fitted, ``low``
    and ``high`` are."""

    def __init__(self, low: np.ndarray | None = None, high: np.ndarray | None = None):
        self.low = None if low is None else np.asarray(low, dtype=float)
        self.high = None if high is None else np.asarray(high, dtype=float)
        self.extent: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def fitted(self) -> bool:
        return self.low is not None

    def fit(self, x: np.ndarray) -> "MinMaxScaler":
        """Fit on ``x`` (N × D), or to ``extent`` when set. An axis with zero spread gets unit
        half-range so it maps to 0."""
        if self.extent is not None:
            self.low, self.high = (np.asarray(bound, dtype=float) for bound in self.extent)
            return self
        x = np.asarray(x, dtype=float)
        self.low, self.high = x.min(axis=0), x.max(axis=0)
        flat = self.high - self.low <= 1e-12
        self.low = np.where(flat, self.low - 1.0, self.low)
        self.high = np.where(flat, self.high + 1.0, self.high)
        return self

    @property
    def half_range(self) -> np.ndarray:
        """World units per scaled unit, per axis (D,)."""
        self._check()
        return 0.5 * (self.high - self.low)

    def transform(self, x: np.ndarray) -> np.ndarray:
        self._check()
        return (np.asarray(x, dtype=float) - self.low) / self.half_range - 1.0

    def inverse(self, x_scaled: np.ndarray) -> np.ndarray:
        self._check()
        return (np.asarray(x_scaled, dtype=float) + 1.0) * self.half_range + self.low

    def state_dict(self) -> dict:
        self._check()
        return {"low": self.low.tolist(), "high": self.high.tolist()}

    @classmethod
    def from_state_dict(cls, state: dict) -> "MinMaxScaler":
        return cls(np.asarray(state["low"]), np.asarray(state["high"]))

    def _check(self) -> None:
        if not self.fitted:
            raise ScalerNotFittedError("MinMaxScaler used before fit()")


class StandardScaler:
    """Standardises targets: (y - mean) / std, fitted on data."""

    def __init__(self, mean: float | None = None, std: float | None = None):
        self.mean = mean
        self.std = std

    @property
    def fitted(self) -> bool:
        return self.mean is not None

    def fit(self, y: np.ndarray) -> "StandardScaler":
        """Fit on ``y`` (N,). Constant targets get unit std so scaling stays invertible."""
        y = np.asarray(y, dtype=float)
        self.mean = float(y.mean())
        std = float(y.std())
        self.std = std if std > 1e-12 else 1.0
        return self

    def transform(self, y: np.ndarray) -> np.ndarray:
        self._check()
        return (np.asarray(y, dtype=float) - self.mean) / self.std

    def inverse_mean(self, y_scaled: np.ndarray) -> np.ndarray:
        self._check()
        return np.asarray(y_scaled, dtype=float) * self.std + self.mean

    def inverse_std(self, std_scaled: np.ndarray) -> np.ndarray:
        self._check()
        return np.asarray(std_scaled, dtype=float) * self.std

    def state_dict(self) -> dict:
        self._check()
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_state_dict(cls, state: dict) -> "StandardScaler":
        return cls(float(state["mean"]), float(state["std"]))

    def _check(self) -> None:
        if not self.fitted:
            raise ScalerNotFittedError("StandardScaler used before fit()")
