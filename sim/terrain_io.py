"""Load a :class:`Terrain` from an SRTM ``.hgt`` tile, a NumPy array or an image file.

:func:`load_terrain` picks the reader from the file suffix:

* ``.hgt``: SRTM tile, big-endian int16 metres, 3601 × 3601 (1 arc-second) or 1201 × 1201
  (3 arc-second) samples; -32768 marks a void.
* ``.npy``: one 2-D numeric array. ``.npz``: the array named ``elevation``, else the only
  array the archive holds.
* ``.tif``, ``.tiff``: a raster's first band in its own numbers (float depths stay depths;
  nodata is a void), read through rasterio. Its georeference, if any, is not used: the grid
  is placed over ``extent``. :func:`poam_ros.geo.load_geo_terrain` places a georeferenced
  raster at its true position and size instead.
* ``.jpg``, ``.jpeg``, ``.png``: converted to 8-bit luminance and, when a shape is given,
  resized with bicubic resampling before the cast to float64. This is the POAM paper's
  preprocessing, so ``N17E073.jpg`` loaded with ``shape=(360, 360)`` is exactly the paper's
  ``N17E073_360.npz``. Intensities (0-255) are used as elevations.

Row order: all these formats store the **northern** row first (SRTM tiles, images, and
arrays saved from them such as the paper's ``*_360.npz``), while a :class:`Terrain` has
row 0 in the south, so by default the rows are flipped. ``first_row="south"`` takes the
rows as stored instead; that reproduces the POAM reference code, which indexes the
north-first image with row 0 at ``ymin`` (its world is ours mirrored north-south).

Voids (SRTM -32768, NaN or inf in arrays) take the value of the nearest valid cell
(Euclidean distance in cells) when ``fill_voids`` is on, logged as a warning with their count
(elevations made up: the user must hear of it); otherwise they are an error. A
grid without any valid cell is always an error. Float grids are resized, after filling,
with Pillow's bicubic filter in float32.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image
from scipy.ndimage import distance_transform_edt

from poam_ros.sim.terrain import Terrain, TerrainError, check_extent

log = logging.getLogger(__name__)

HGT_VOID = -32768
HGT_SIDES = {1201: "3 arc-second", 3601: "1 arc-second"}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
RASTER_SUFFIXES = (".tif", ".tiff")
ARRAY_SUFFIXES = (".npy", ".npz")
SUFFIXES = (".hgt",) + ARRAY_SUFFIXES + RASTER_SUFFIXES + IMAGE_SUFFIXES
FIRST_ROW_CHOICES = ("north", "south")


def load_terrain(path, extent: Sequence[float], *, fill_voids: bool = True,
                 shape: Sequence[int] | None = None, first_row: str = "north",
                 name: str | None = None) -> Terrain:
    """Read an elevation file and place it over ``extent`` = (xmin, xmax, ymin, ymax) metres.

    Args:
        path: ``.hgt``, ``.npy``, ``.npz`` or image file (see the module docstring).
        extent: where the grid's cells lie in the map frame.
        fill_voids: fill voids and non-finite values from the nearest valid cell; when
            False they raise :class:`TerrainError`.
        shape: (rows, cols) to resample to with bicubic interpolation; None keeps the size.
        first_row: where the file's first row lies, "north" (every supported format) or
            "south" (take the rows as stored).
        name: the terrain's name; defaults to the file stem.

    Raises:
        TerrainError: one message naming the file and what is wrong with it.
    """
    path = Path(path)
    extent = check_extent(extent)
    if first_row not in FIRST_ROW_CHOICES:
        raise TerrainError(f"first_row must be one of {FIRST_ROW_CHOICES}, got {first_row!r}")
    if shape is not None:
        shape = _checked_shape(shape)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TerrainError(f"{path}: unknown terrain format {suffix or '(no suffix)'!r}; "
                           f"supported: {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise TerrainError(f"{path}: terrain file not found")
    if suffix in IMAGE_SUFFIXES:
        grid = _read_image(path, shape)
    else:
        if suffix == ".hgt":
            grid = _read_hgt(path)
        elif suffix in RASTER_SUFFIXES:
            grid = _read_raster(path)
        else:
            grid = _read_array(path, suffix)
        grid = without_voids(grid, path, fill_voids)
        if shape is not None:
            grid = _resized(grid, shape)
    if first_row == "north":
        grid = grid[::-1]
    return Terrain(grid, extent, name=name or path.stem)


def _checked_shape(shape: Sequence[int]) -> tuple[int, int]:
    values = tuple(shape)
    if len(values) != 2 or not all(isinstance(v, (int, np.integer)) and v >= 2
                                   for v in values):
        raise TerrainError(f"shape must be two integers >= 2 (rows, cols), got {shape!r}")
    return int(values[0]), int(values[1])


def _read_hgt(path: Path) -> np.ndarray:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TerrainError(f"{path}: unreadable .hgt file ({exc})") from exc
    side = round((len(data) / 2) ** 0.5)
    if side not in HGT_SIDES or side * side * 2 != len(data):
        expected = " or ".join(f"{s * s * 2} bytes ({s} × {s}, {kind})"
                               for s, kind in HGT_SIDES.items())
        raise TerrainError(f"{path}: wrong .hgt size {len(data)} bytes; expected {expected}")
    raw = np.frombuffer(data, dtype=">i2").reshape(side, side)
    grid = raw.astype(np.float64)
    grid[raw == HGT_VOID] = np.nan
    return grid


def _read_array(path: Path, suffix: str) -> np.ndarray:
    try:
        if suffix == ".npy":
            arrays = {"": np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise TerrainError(f"{path}: unreadable {suffix} file ({exc})") from exc
    array = arrays[_array_key(path, list(arrays))]
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise TerrainError(f"{path}: expected a 2-D numeric array, got shape {array.shape} "
                           f"of dtype {array.dtype}")
    return array.astype(np.float64)


def _array_key(path: Path, keys: list[str]) -> str:
    if "elevation" in keys:
        return "elevation"
    if len(keys) == 1:
        return keys[0]
    if not keys:
        raise TerrainError(f"{path}: holds no arrays")
    raise TerrainError(f"{path}: holds {len(keys)} arrays {keys} and none is named "
                       f"'elevation'; save the grid as 'elevation'")


def _read_raster(path: Path) -> np.ndarray:
    """Band 1 of a GeoTIFF as float64, its nodata cells NaN (never through 8-bit images)."""
    import rasterio  # only here: the other formats need no GDAL

    try:
        with rasterio.open(path) as dataset:
            band = dataset.read(1, masked=True)
            if dataset.crs is not None:
                log.info("%s: its georeference (%s) is not used here; the grid is placed over "
                         "the given extent", path, dataset.crs)
    except rasterio.errors.RasterioError as exc:
        raise TerrainError(f"{path}: unreadable raster ({exc})") from exc
    return np.ma.filled(band.astype(np.float64), np.nan)


def _read_image(path: Path, shape: tuple[int, int] | None) -> np.ndarray:
    try:
        with Image.open(path) as image:
            luminance = image.convert("L")
    except OSError as exc:
        raise TerrainError(f"{path}: unreadable image ({exc})") from exc
    if shape is not None:
        rows, cols = shape
        luminance = luminance.resize((cols, rows), resample=Image.Resampling.BICUBIC)
    return np.asarray(luminance, dtype=np.float64)


def without_voids(grid: np.ndarray, path, fill_voids: bool) -> np.ndarray:
    """``grid`` with its voids (non-finite cells) filled from the nearest valid cell, or a
    :class:`TerrainError` naming ``path`` when ``fill_voids`` is off or every cell is void."""
    void = ~np.isfinite(grid)
    if not void.any():
        return grid
    if void.all():
        raise TerrainError(f"{path}: every cell is void or non-finite; no elevation to use")
    row, col = np.argwhere(void)[0]
    if not fill_voids:
        raise TerrainError(f"{path}: {int(void.sum())} void or non-finite cell(s), the first "
                           f"at file row {row}, column {col}, and fill_voids is off")
    nearest = distance_transform_edt(void, return_distances=False, return_indices=True)
    log.warning("%s: filled %d of %d cell(s), void or non-finite, from their nearest valid "
                "cell (terrain.fill_voids)", path, void.sum(), void.size)
    return grid[tuple(nearest)]


def _resized(grid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = shape
    image = Image.fromarray(grid.astype(np.float32))
    return np.asarray(image.resize((cols, rows), resample=Image.Resampling.BICUBIC),
                      dtype=np.float64)
