"""Real-scale terrain from a georeferenced raster, resampled into the map frame in metres.

Reads, through rasterio (GDAL), float or integer GeoTIFFs in any CRS (nodata, negative
depths: values are taken as they are, never converted to 8 bits), GEBCO NetCDF (lat/lon
coordinate variables in degrees are WGS 84 by the CF convention GEBCO follows), SRTM
``.hgt`` tiles placed from their name (``N47W124.hgt`` spans 47-48° N, 124-123° W; 1201 or
3601 samples a side for 3″ or 1″, the size telling which; 1″ is about 31 m north-south)
and anything else GDAL opens with a CRS and a geotransform.

The survey area (a lon/lat box, a lon/lat polygon, or the whole raster) becomes the
axis-aligned map-frame rectangle that holds it; its cells (row 0 south, as
:class:`~poam_ros.sim.terrain.Terrain` has them) take the raster's bilinear value at
their centres: each centre is projected into the raster's CRS (pyproj) and then to
fractional pixel coordinates by the inverse geotransform. Without a chosen resolution the
cells keep the raster's own spacing in metres along x and y at the area's centre, so
nothing is invented or thrown away. Voids (nodata, NaN) among the samples the area reads
are filled from the nearest valid sample (a warning with their count) or refused, as
:func:`poam_ros.sim.terrain_io.load_terrain` does.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pyproj
import rasterio
import shapely
from rasterio.errors import RasterioIOError
from rasterio.windows import Window
from scipy.ndimage import map_coordinates

from poam_ros.geo.georeference import WGS84, GeoError, GeoReference, check_lonlat
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.terrain_io import HGT_SIDES, without_voids

log = logging.getLogger(__name__)

VERTICAL_REFERENCE_TAG = "VERTICAL_REFERENCE"
MAX_CELLS = 25_000_000  # 200 MB of float64 elevations
HGT_NAME = re.compile(r"[NS]\d{2}[EW]\d{3}", re.IGNORECASE)
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf")
# Points per footprint edge when a lon/lat outline is projected: its sides curve in metres.
EDGE_POINTS = 65


@dataclass(frozen=True)
class GeoTerrain:
    """A :class:`Terrain` in map metres and where it came from.

    ``terrain`` is what the simulator samples, placed by ``georeference``; ``source_crs``
    is the raster's own CRS and ``source`` the file.
    """

    terrain: Terrain
    georeference: GeoReference
    source_crs: pyproj.CRS
    source: str

    @property
    def vertical_reference(self) -> str:
        """What elevation 0 is: the declared reference, which the file did not contradict."""
        return self.georeference.vertical_reference


def load_geo_terrain(path, georeference: GeoReference, area=None, *,
                     resolution: float | None = None, variable: str | None = None,
                     fill_voids: bool = True, name: str | None = None) -> GeoTerrain:
    """Cut ``area`` out of the raster at ``path`` and resample it into the map frame.

    Args:
        path: GeoTIFF, NetCDF, SRTM ``.hgt`` or any georeferenced raster GDAL reads (band 1).
        georeference: the map frame's anchor.
        area: None for the whole raster (the largest map rectangle inside its footprint),
            a lon/lat box ``(lon_min, lon_max, lat_min, lat_max)`` in degrees, or a shapely
            (Multi)Polygon in lon/lat (e.g. :func:`poam_ros.geo.geojson.read_survey_area`).
        resolution: square cell size in metres; None keeps the raster's spacing.
        variable: the NetCDF variable to read; None picks ``elevation`` or the only one.
        fill_voids: fill nodata from the nearest valid sample; False makes it an error.
        name: the terrain's name; defaults to the file stem.

    Raises:
        GeoError: one message naming the file: unreadable, no georeference, the area beyond
            the raster, all nodata, a vertical reference that differs from the declared one.
    """
    path = Path(path)
    if not path.is_file():
        raise GeoError(f"{path}: raster file not found")
    with _open(path, variable) as source:
        return _resampled(source, path, georeference, area, resolution, fill_voids,
                          name or path.stem)


def geo_terrain_from_dataset(source, georeference: GeoReference, area=None, *,
                             resolution: float | None = None, fill_voids: bool = True,
                             name: str = "terrain") -> GeoTerrain:
    """:func:`load_geo_terrain` for an open rasterio dataset (a file or a ``MemoryFile``
    built from an in-memory grid); messages name the dataset by ``source.name``."""
    return _resampled(source, source.name, georeference, area, resolution, fill_voids, name)


def _resampled(source, label, georeference: GeoReference, area, resolution: float | None,
               fill_voids: bool, name: str) -> GeoTerrain:
    if resolution is not None and not (math.isfinite(resolution) and resolution > 0):
        raise GeoError(f"resolution must be a positive number of metres, got {resolution!r}")
    source_crs = _source_crs(source, label)
    _check_vertical_reference(source, label, georeference)
    extent = _map_rectangle(source, source_crs, georeference, area, label)
    cell = (resolution, resolution) if resolution else \
        _native_spacing(source, source_crs, georeference, extent)
    x, y = _cell_centres(extent, cell)
    col, row = _pixel_coordinates(source, source_crs, georeference, x, y)
    _check_covered(source, source_crs, label, area, col, row)
    terrain = Terrain(_bilinear(source, label, col, row, fill_voids), extent, name=name)
    log.info("%s: %s", label, terrain)
    return GeoTerrain(terrain, georeference, source_crs, str(label))


def _open(path: Path, variable: str | None):
    suffix = path.suffix.lower()
    if suffix == ".hgt":
        _check_hgt(path)
    target = str(path)
    if variable is not None:
        if suffix not in NETCDF_SUFFIXES:
            raise GeoError(f"{path}: variable {variable!r} applies to NetCDF files only")
        target = f'NETCDF:"{path}":{variable}'
    try:
        source = rasterio.open(target)
        if source.count == 0 and source.subdatasets:
            chosen = _subdataset(source.subdatasets, path)
            source.close()
            source = rasterio.open(chosen)
    except RasterioIOError as exc:
        raise GeoError(f"{path}: unreadable raster ({exc})") from exc
    return source


def _check_hgt(path: Path) -> None:
    if not HGT_NAME.match(path.stem[:7]):
        raise GeoError(f"{path}: an SRTM tile is placed by its name, which must start with "
                       f"its south-west corner such as N47W124 ([NS]dd[EW]ddd)")
    size = path.stat().st_size
    if size not in {side * side * 2 for side in HGT_SIDES}:
        expected = " or ".join(f"{s * s * 2} bytes ({s} × {s}, {kind})"
                               for s, kind in HGT_SIDES.items())
        raise GeoError(f"{path}: wrong .hgt size {size} bytes; expected {expected}")


def _subdataset(names: list[str], path: Path) -> str:
    variables = {name.rsplit(":", 1)[-1]: name for name in names}
    if "elevation" in variables:
        return variables["elevation"]
    if len(variables) == 1:
        return names[0]
    raise GeoError(f"{path}: holds the variables {sorted(variables)} and none is named "
                   f"'elevation'; name the one to read (variable)")


def _source_crs(source, label) -> pyproj.CRS:
    """The raster's CRS; lat/lon NetCDF coordinates without one are WGS 84 (CF, GEBCO)."""
    if source.transform.is_identity and not source.gcps[0]:
        raise GeoError(f"{label}: the raster has no georeference (no geotransform); use a "
                       f"GeoTIFF with a CRS, a NetCDF with lat/lon coordinates or an SRTM "
                       f"tile named after its corner")
    if source.crs is not None:
        return pyproj.CRS.from_wkt(source.crs.to_wkt())
    units = {value for key, value in source.tags().items() if key.endswith("#units")}
    if source.driver == "netCDF" and {"degrees_east", "degrees_north"} <= units:
        return WGS84
    raise GeoError(f"{label}: the raster has no georeference (no CRS); give it one "
                   f"(e.g. gdal_edit.py -a_srs EPSG:4326 for lon/lat)")


def _check_vertical_reference(source, label, georeference: GeoReference) -> None:
    stated = source.tags().get(VERTICAL_REFERENCE_TAG)
    if stated is not None and stated != georeference.vertical_reference:
        raise GeoError(f"{label}: elevations are relative to {stated!r} but the map declares "
                       f"{georeference.vertical_reference!r}; tides and datum shifts are "
                       f"not applied, so declare the file's reference")


def _map_rectangle(source, source_crs, georeference: GeoReference, area,
                   label) -> tuple[float, float, float, float]:
    """(xmin, xmax, ymin, ymax) in map metres: the area's bounding box, or for the whole
    raster the rectangle between its four (curved, in metres) edges."""
    if area is None:
        edges = _pixel_edges(source.width, source.height)
        x, y = georeference.map_from(source_crs, *(source.transform * edges))
        x, y = x.reshape(4, EDGE_POINTS), y.reshape(4, EDGE_POINTS)
        west, east = np.argsort(x.mean(axis=1))[[0, -1]]
        south, north = np.argsort(y.mean(axis=1))[[0, -1]]
        extent = (x[west].max(), x[east].min(), y[south].max(), y[north].min())
    else:
        outline = _outline(area)
        x, y = georeference.to_map(*shapely.get_coordinates(outline.boundary).T)
        extent = (x.min(), x.max(), y.min(), y.max())
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    if not (xmax > xmin and ymax > ymin):
        raise GeoError(f"{label}: the survey area has no extent in the map frame "
                       f"(x [{xmin:g}, {xmax:g}], y [{ymin:g}, {ymax:g}] m)")
    return xmin, xmax, ymin, ymax


def _pixel_edges(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-space (col, row) points along the four raster edges, EDGE_POINTS each."""
    t = np.linspace(0.0, 1.0, EDGE_POINTS)
    cols = np.concatenate([np.zeros_like(t), np.full_like(t, width), t * width, t * width])
    rows = np.concatenate([t * height, t * height, np.zeros_like(t), np.full_like(t, height)])
    return cols, rows


def _outline(area):
    """The area as a shapely geometry in lon/lat with its edges cut into short pieces."""
    if isinstance(area, shapely.Geometry):
        geometry = area
    else:
        values = np.asarray(area, dtype=float).ravel()
        if values.shape != (4,):
            raise GeoError(f"a survey box is (lon_min, lon_max, lat_min, lat_max), got "
                           f"{area!r}")
        lon_min, lon_max, lat_min, lat_max = values
        check_lonlat([lon_min, lon_max], [lat_min, lat_max], "survey box")
        if not (lon_max > lon_min and lat_max > lat_min):
            raise GeoError(f"survey box {area!r} needs lon_min < lon_max and "
                           f"lat_min < lat_max")
        geometry = shapely.box(lon_min, lat_min, lon_max, lat_max)
    if geometry.is_empty or geometry.geom_type not in ("Polygon", "MultiPolygon"):
        raise GeoError(f"a survey area must be a lon/lat polygon, got {geometry.geom_type}")
    check_lonlat(*shapely.get_coordinates(geometry).T, "survey area")
    xmin, ymin, xmax, ymax = geometry.bounds
    return shapely.segmentize(geometry, max(xmax - xmin, ymax - ymin) / EDGE_POINTS)


def _native_spacing(source, source_crs, georeference: GeoReference,
                    extent) -> tuple[float, float]:
    """The raster's sample spacing in metres along map x and y at the extent's centre."""
    xmin, xmax, ymin, ymax = extent
    col, row = _pixel_coordinates(source, source_crs, georeference,
                                  np.array([(xmin + xmax) / 2]), np.array([(ymin + ymax) / 2]))
    x, y = georeference.map_from(source_crs, *(source.transform * (
        np.concatenate([col, col + 1, col]), np.concatenate([row, row, row + 1]))))
    steps = np.abs(np.column_stack([x[1:] - x[0], y[1:] - y[0]]))  # column step, row step
    return float(steps[:, 0].max()), float(steps[:, 1].max())


def _cell_centres(extent, cell: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Centres (rows, cols) of the cells tiling ``extent`` at most ``cell`` (dx, dy) apart."""
    xmin, xmax, ymin, ymax = extent
    cols = max(2, math.ceil((xmax - xmin) / cell[0] - 1e-9))
    rows = max(2, math.ceil((ymax - ymin) / cell[1] - 1e-9))
    if rows * cols > MAX_CELLS:
        raise GeoError(f"a {rows} × {cols} terrain exceeds {MAX_CELLS} cells: choose a "
                       f"smaller survey area or a coarser resolution than "
                       f"{cell[0]:g} × {cell[1]:g} m")
    x = xmin + (np.arange(cols) + 0.5) * (xmax - xmin) / cols
    y = ymin + (np.arange(rows) + 0.5) * (ymax - ymin) / rows
    return np.meshgrid(x, y)


def _pixel_coordinates(source, source_crs, georeference: GeoReference, x: np.ndarray,
                       y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fractional pixel-space (col, row) of map points: pixel (i, j) spans [j, j+1] × [i, i+1]."""
    u, v = georeference.map_to(source_crs, x, y)
    col, row = ~source.transform * (u, v)
    return np.asarray(col), np.asarray(row)


def _check_covered(source, source_crs, label, area, col: np.ndarray,
                   row: np.ndarray) -> None:
    inside = (col >= 0) & (col <= source.width) & (row >= 0) & (row <= source.height)
    if inside.all():
        return
    corners = source.transform * (np.array([0, source.width, 0, source.width]),
                                  np.array([0, 0, source.height, source.height]))
    lon, lat = pyproj.Transformer.from_crs(source_crs, WGS84, always_xy=True).transform(
        *corners)
    wanted = "the whole raster's map rectangle" if area is None else \
        "survey area lon [{:.6f}, {:.6f}], lat [{:.6f}, {:.6f}]".format(
            *np.asarray(_outline(area).bounds)[[0, 2, 1, 3]])
    raise GeoError(f"{label}: {wanted} lies partly outside the raster, which covers lon "
                   f"[{min(lon):.6f}, {max(lon):.6f}], lat [{min(lat):.6f}, {max(lat):.6f}]: "
                   f"{int((~inside).sum())} of {inside.size} terrain cells have no data")


def _bilinear(source, label, col: np.ndarray, row: np.ndarray,
              fill_voids: bool) -> np.ndarray:
    """Band 1 sampled bilinearly at pixel-space points (sample (i, j) sits at (j+½, i+½));
    only the window they need is read. Flat across the raster's outer half-pixel ring."""
    first_col = max(0, int(np.floor(col.min() - 0.5)))
    first_row = max(0, int(np.floor(row.min() - 0.5)))
    last_col = min(source.width - 1, int(np.ceil(col.max() - 0.5)))
    last_row = min(source.height - 1, int(np.ceil(row.max() - 0.5)))
    window = Window(first_col, first_row, last_col - first_col + 1, last_row - first_row + 1)
    band = source.read(1, window=window, masked=True)
    values = band.astype(np.float64).filled(np.nan) * source.scales[0] + source.offsets[0]
    void = ~np.isfinite(values)
    if void.all():
        raise GeoError(f"{label}: every sample under the survey area is nodata or "
                       f"non-finite; no elevation to use")
    if void.any() and not fill_voids:
        row_void, col_void = np.argwhere(void)[0]
        raise GeoError(f"{label}: {int(void.sum())} nodata or non-finite sample(s) under "
                       f"the survey area, the first at file row {row_void + first_row}, "
                       f"column {col_void + first_col}, and fill_voids is off")
    values = without_voids(values, label, fill_voids)
    return map_coordinates(values, [row - 0.5 - first_row, col - 0.5 - first_col], order=1,
                           mode="nearest")
