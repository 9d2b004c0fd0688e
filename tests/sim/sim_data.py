"""Test data for the simulator tests: where the SRTM files live, placements, synthetic tiles."""

from pathlib import Path

import numpy as np

# The repository's parent holds shared/ (CI clones the repo with ../shared beside it).
SRTM_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "srtm"
PAPER_EXTENT = (-31.0, 31.0, -31.0, 31.0)
TASK_EXTENT = (-30.0, 30.0, -30.0, 30.0)


def synthetic_tile(side: int = 1201) -> np.ndarray:
    """A smooth int16 tile (metres, row 0 north) whose values vary along both axes."""
    rows, cols = np.mgrid[0:side, 0:side]
    return (1000 + rows + 2 * cols).astype(np.int16)


def write_hgt(path: Path, heights: np.ndarray) -> Path:
    """Write ``heights`` as an SRTM tile: big-endian int16, row 0 north."""
    path.write_bytes(heights.astype(">i2").tobytes())
    return path
