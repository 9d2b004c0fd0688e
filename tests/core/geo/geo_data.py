"""Test data for the georeferencing tests: WGS 84 radii of curvature and small rasters."""

import math
from pathlib import Path

import numpy as np
import rasterio
from affine import Affine

# WGS 84: semi-major axis [m] and first eccentricity squared.
A = 6378137.0
E2 = 6.69437999014e-3


def meridian_radius(latitude: float) -> float:
    """M(φ) = a (1 − e²) / (1 − e² sin²φ)^{3/2} [m]: metres per radian of latitude."""
    s = math.sin(math.radians(latitude))
    return A * (1 - E2) / (1 - E2 * s * s) ** 1.5


def prime_vertical_radius(latitude: float) -> float:
    """N(φ) = a / (1 − e² sin²φ)^{1/2} [m]; N cos φ is metres per radian of longitude."""
    s = math.sin(math.radians(latitude))
    return A / math.sqrt(1 - E2 * s * s)


def write_geotiff(path: Path, rows_north_first: np.ndarray, crs, transform: Affine | None,
                  nodata=None, tags=None) -> Path:
    """One float32 band, first row north; ``crs``/``transform`` None write no georeference."""
    height, width = rows_north_first.shape
    profile = dict(driver="GTiff", width=width, height=height, count=1, dtype="float32")
    if crs is not None:
        profile["crs"] = crs
    if transform is not None:
        profile["transform"] = transform
    if nodata is not None:
        profile["nodata"] = nodata
    with rasterio.open(path, "w", **profile) as dataset:
        dataset.write(rows_north_first.astype(np.float32), 1)
        if tags:
            dataset.update_tags(**tags)
    return path


def write_hgt(path: Path, side: int) -> tuple[Path, np.ndarray]:
    """An SRTM tile whose sample (i, j) (row 0 north) is 1000 + i + 2 j metres."""
    rows, cols = np.mgrid[0:side, 0:side]
    heights = (1000 + rows + 2 * cols).astype(">i2")
    path.write_bytes(heights.tobytes())
    return path, heights
