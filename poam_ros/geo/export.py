"""Survey products: map layers as a georeferenced, cloud-optimised GeoTIFF (GDAL's COG driver).

The layers are (rows, cols) arrays on a map grid (:class:`poam_ros.mapping.map_grid.MapGrid`:
square cells of ``resolution`` metres, row 0 south, ``origin`` the south-west corner of cell
(0, 0) in map metres). The file is in the georeference's projected CRS: its top-left corner
is at (E0 + x0, N0 + y0 + rows · resolution) and its first row is the northern one, as
GeoTIFF readers expect. One float32 band per layer, named by its band description, with
its unit; NaN (cells outside the workspace, or never predicted) is the nodata value. The
vertical reference is the dataset tag ``VERTICAL_REFERENCE``. Tiles of 512 × 512 with
overviews, DEFLATE with the floating-point predictor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pyproj
import rasterio
from affine import Affine
from rasterio.errors import RasterioError, RasterioIOError

from poam_ros.geo.georeference import GeoError, GeoReference
from poam_ros.geo.raster import VERTICAL_REFERENCE_TAG

LAYER_UNITS = {"mean": "m", "std": "m", "lengthscale": "m",
               "sample_density": "soundings per cell"}
COG_OPTIONS = {"compress": "deflate", "predictor": "floating_point", "blocksize": 512,
               "overview_resampling": "average"}


@dataclass(frozen=True)
class MapProduct:
    """A map product read back: ``layers`` name → (rows, cols) float64, row 0 south, NaN for
    nodata; the file's ``crs``, ``transform`` (north-up), ``vertical_reference``, ``units``
    and ``nodata``."""

    layers: dict[str, np.ndarray]
    crs: pyproj.CRS
    transform: Affine
    vertical_reference: str
    units: dict[str, str]
    nodata: float


def sample_density(xy: np.ndarray, origin, resolution: float, shape) -> np.ndarray:
    """Soundings per cell (rows, cols) of the (N, 2) map points ``xy`` [m]; points off the
    grid are not counted."""
    rows, cols = shape
    x_edges = origin[0] + np.arange(cols + 1) * resolution
    y_edges = origin[1] + np.arange(rows + 1) * resolution
    counts, _, _ = np.histogram2d(np.asarray(xy)[:, 1], np.asarray(xy)[:, 0],
                                  bins=(y_edges, x_edges))
    return counts


def export_map_product(path, layers: Mapping[str, np.ndarray], origin, resolution: float,
                       georeference: GeoReference) -> Path:
    """Write ``layers`` (name → (rows, cols) array, row 0 south) as a COG at ``path``.

    Args:
        origin: (x0, y0), the map-frame south-west corner of cell (0, 0) [m]
            (``MapGrid.origin``).
        resolution: cell edge length [m] (``MapGrid.resolution``).
        georeference: the map frame's anchor; its CRS and vertical reference go in the file.

    Units come from :data:`LAYER_UNITS` (mean, std, lengthscale, sample_density); other
    names get none. Missing folders are made. Raises :class:`GeoError` naming the path for
    no layers, layers of different shapes, a bad resolution, or a file that cannot be
    written.
    """
    path = Path(path)
    if not layers:
        raise GeoError(f"{path}: no layers to export")
    shapes = {name: np.shape(layer) for name, layer in layers.items()}
    if len(set(shapes.values())) != 1 or len(next(iter(shapes.values()))) != 2:
        raise GeoError(f"{path}: layers must be 2-D and of one shape, got {shapes}")
    if not (np.isfinite(resolution) and resolution > 0):
        raise GeoError(f"{path}: resolution must be a positive number of metres, got "
                       f"{resolution!r}")
    stack = np.stack([np.asarray(layer, dtype=np.float32) for layer in layers.values()])
    count, rows, cols = stack.shape
    west, south = np.asarray(origin, dtype=float) + georeference.origin
    transform = Affine(resolution, 0.0, west, 0.0, -resolution, south + rows * resolution)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with rasterio.open(path, "w", driver="COG", width=cols, height=rows, count=count,
                           dtype="float32", crs=georeference.crs.to_wkt(), transform=transform,
                           nodata=np.nan, **COG_OPTIONS) as dataset:
            dataset.write(stack[:, ::-1])
            dataset.descriptions = tuple(layers)
            dataset.units = tuple(LAYER_UNITS.get(name, "") for name in layers)
            dataset.update_tags(**{VERTICAL_REFERENCE_TAG: georeference.vertical_reference})
    except (OSError, RasterioError) as exc:
        raise GeoError(f"{path}: cannot write the map product ({exc})") from exc
    return path


def read_map_product(path) -> MapProduct:
    """The layers, CRS, transform and vertical reference of a file :func:`export_map_product`
    wrote."""
    try:
        with rasterio.open(path) as dataset:
            bands = dataset.read(masked=True).astype(np.float64).filled(np.nan)
            names = dataset.descriptions
            return MapProduct({name: band[::-1] for name, band in zip(names, bands)},
                              pyproj.CRS.from_wkt(dataset.crs.to_wkt()), dataset.transform,
                              dataset.tags().get(VERTICAL_REFERENCE_TAG, ""),
                              dict(zip(names, dataset.units)), dataset.nodata)
    except RasterioIOError as exc:
        raise GeoError(f"{path}: unreadable map product ({exc})") from exc
