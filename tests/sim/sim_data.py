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


def write_float_geotiff(path: Path, rows_north_first: np.ndarray, crs=None, transform=None,
                        nodata=None) -> Path:
    """One float32 band, first row north; without ``crs`` and ``transform`` no georeference."""
    import rasterio

    height, width = rows_north_first.shape
    profile = dict(driver="GTiff", width=width, height=height, count=1, dtype="float32")
    profile.update({key: value for key, value in (("crs", crs), ("transform", transform),
                                                  ("nodata", nodata)) if value is not None})
    with rasterio.open(path, "w", **profile) as dataset:
        dataset.write(rows_north_first.astype(np.float32), 1)
    return path
