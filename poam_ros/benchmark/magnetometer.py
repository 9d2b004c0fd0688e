"""The indoor magnetometer survey (``invensense.npz``) as the VIPS and OIPS papers use it.

Nine trajectories of a small robot over a laboratory floor (about 6 m × 4.5 m), each with
positions (N × 2, metres), the three-axis magnetic field (N × 3, microtesla) and time
(N, seconds) sampled at 50 Hz; see ``shared/data/magnetometer/README.md``. The papers model
the field magnitude |B| (norm of the three axes) over the floor position: one path streamed in
batches in time order (VIPS Sec. 5.4: path 3 in 20 batches), the others as test sets (paths 1,
2, 4, 5).

    path = load_path(3)
    batches = streaming_batches(path, 20)          # [(x, y), ...], x N_b × 2, y N_b
    x_test, y_test = held_out((1, 2, 4, 5))  # the test paths
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: The shared copy of the data, beside this repository (found from this file, not the
#: working directory).
DEFAULT_FILE = (Path(__file__).resolve().parents[2].parent / "shared" / "data" / "magnetometer"
                / "invensense.npz")

#: The trajectories the file holds.
PATH_INDICES = tuple(range(1, 10))


@dataclass(frozen=True)
class MagnetometerPath:
    """One trajectory, in time order: positions ``xy`` (N × 2, m), ``field`` (N × 3, µT) and
    ``time`` (N, s)."""

    index: int
    xy: np.ndarray
    field: np.ndarray
    time: np.ndarray

    @property
    def magnitude(self) -> np.ndarray:
        """The field magnitude |B| (N,), µT: the papers' target."""
        return field_magnitude(self.field)

    def __len__(self) -> int:
        return len(self.time)


def field_magnitude(field: np.ndarray) -> np.ndarray:
    """|B| = √(B_x² + B_y² + B_z²) of an N × 3 field (µT), (N,)."""
    return np.linalg.norm(np.asarray(field, dtype=float), axis=1)


def load_path(index: int, file: str | Path = DEFAULT_FILE) -> MagnetometerPath:
    """Trajectory ``index`` (1 … 9) of ``file``, sorted by time (stably: it is already)."""
    if index not in PATH_INDICES:
        raise ValueError(f"no magnetometer path {index!r}; the file holds paths 1 … 9")
    with np.load(file) as data:
        xy, field, time = (np.asarray(data[f"path{index}_{key}"], dtype=float)
                           for key in ("xy", "field", "t"))
    if xy.shape != (len(time), 2) or field.shape != (len(time), 3):
        raise ValueError(f"{file}: path {index} has xy {xy.shape}, field {field.shape} and "
                         f"time {time.shape}, expected N × 2, N × 3 and N")
    order = np.argsort(time, kind="stable")
    return MagnetometerPath(index, xy[order], field[order], time[order])


def streaming_batches(path: MagnetometerPath,
                      num_batches: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The path in ``num_batches`` consecutive batches in time order, sizes differing by at
    most one (the first ones larger): [(x N_b × 2 in m, |B| N_b in µT), ...]."""
    if not 1 <= num_batches <= len(path):
        raise ValueError(f"cannot split {len(path)} samples into {num_batches} batches")
    x, y = path.xy, path.magnitude
    return [(x[part], y[part]) for part in np.array_split(np.arange(len(path)), num_batches)]


def held_out(indices, file: str | Path = DEFAULT_FILE) -> tuple[np.ndarray, np.ndarray]:
    """The given paths' positions (N × 2, m) and field magnitudes (N,), µT, concatenated in
    the order given."""
    paths = [load_path(i, file) for i in indices]
    if not paths:
        raise ValueError("a test set needs at least one path")
    return (np.concatenate([p.xy for p in paths]),
            np.concatenate([p.magnitude for p in paths]))
