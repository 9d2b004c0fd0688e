"""Which terrain to simulate and where it lies, as one typed configuration.

Two placements:

* ``extent`` (the default, the POAM paper's maps): the file's grid is stretched over
  ``extent`` in map metres, whatever its georeference.
* ``georeferenced``: a georeferenced raster (float GeoTIFF in any CRS, GEBCO NetCDF, SRTM
  ``.hgt`` placed from its tile name; without ``path`` the embedded bathymetry at its true
  place, :func:`~poam_ros.geo.embedded.default_geo_terrain`) at its true position
  and size in the map frame, cut to a survey area (``survey_box`` in lon/lat, or the
  polygon of ``survey_area_file``, or the whole raster) by
  :func:`poam_ros.geo.load_geo_terrain`. It needs the map frame's geodetic anchor (the
  mapper's ``geo.*``), which the caller hands to :func:`terrain_from_config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.default_terrain import PAPER_EXTENT, default_terrain
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.terrain_io import FIRST_ROW_CHOICES, load_terrain

if TYPE_CHECKING:  # rasterio and pyproj load only for a georeferenced terrain
    from poam_ros.geo.georeference import GeoReference

PLACEMENTS = ("extent", "georeferenced")


@dataclass
class TerrainConfig(Params):
    """Terrain source and placement; an empty ``path`` selects :func:`default_terrain`."""

    path: str = param("", "elevation file (.hgt, .npy, .npz, .jpg, .jpeg, .png, .tif, "
                          ".tiff); empty for the embedded bathymetry")
    extent: list = param(list(PAPER_EXTENT), "xmin, xmax, ymin, ymax the grid covers in the "
                                             "map frame", unit="m")
    fill_voids: bool = param(True, "fill voids and non-finite cells from the nearest valid "
                                   "cell; off makes them an error")
    resize_rows: int = param(0, "rows to resample the file to (bicubic); 0 keeps its size",
                             low=0)
    resize_cols: int = param(0, "columns to resample the file to (bicubic); 0 keeps its size",
                             low=0)
    first_row: str = param("north", "where the file's first row lies; every supported "
                                    "format stores north first", choices=FIRST_ROW_CHOICES)
    placement: str = param("extent", "extent: the grid stretched over `extent`; "
                                     "georeferenced: the raster (or the embedded bathymetry) "
                                     "at its true place and size, through the map's geodetic "
                                     "anchor (geo.*)",
                           choices=PLACEMENTS)
    survey_box: list = param([], "georeferenced: lon_min, lon_max, lat_min, lat_max of the "
                                 "survey box (WGS 84); empty: survey_area_file or the whole "
                                 "raster", unit="deg")
    survey_area_file: str = param("", "georeferenced: a GeoJSON file whose workspace polygon "
                                      "(lon/lat) the terrain must cover; empty: survey_box")
    resolution: float = param(0.0, "georeferenced: square cell size of the terrain; 0 keeps "
                                   "the raster's spacing", unit="m", low=0.0)

    def validate(self) -> None:
        self._validate_georeferenced()
        if len(self.extent) != 4 or not all(isinstance(v, (int, float))
                                            and not isinstance(v, bool) for v in self.extent):
            raise ConfigError(f"TerrainConfig.extent must be four numbers "
                              f"[xmin, xmax, ymin, ymax], got {self.extent!r}")
        self.extent = [float(v) for v in self.extent]
        xmin, xmax, ymin, ymax = self.extent
        if xmax <= xmin or ymax <= ymin:
            raise ConfigError(f"TerrainConfig.extent {self.extent} has zero or negative size "
                              f"(need xmax > xmin and ymax > ymin)")
        if (self.resize_rows == 0) != (self.resize_cols == 0):
            raise ConfigError("TerrainConfig.resize_rows and resize_cols must both be 0 "
                              f"(keep the size) or both >= 2, got {self.resize_rows} × "
                              f"{self.resize_cols}")
        if 0 < min(self.resize_rows, self.resize_cols) < 2:
            raise ConfigError("TerrainConfig.resize_rows and resize_cols must be >= 2 "
                              "for bilinear interpolation")
        if not self.path and (self.resize_rows or self.first_row != "north"
                              or not self.fill_voids):
            raise ConfigError("TerrainConfig: resize_rows, resize_cols, first_row and "
                              "fill_voids apply to a file; set path or leave them default")

    def _validate_georeferenced(self) -> None:
        defaults = {spec.name: spec.default for spec in self.specs()}
        area = ("survey_box", "survey_area_file", "resolution")
        if self.placement == "extent":
            moved = [name for name in area if getattr(self, name) != defaults[name]]
            if moved:
                raise ConfigError(f"TerrainConfig: {', '.join(moved)} apply to placement "
                                  f"georeferenced")
            return
        moved = [name for name in ("extent", "resize_rows", "resize_cols", "first_row")
                 if getattr(self, name) != defaults[name]]
        if moved:
            raise ConfigError(f"TerrainConfig: {', '.join(moved)} apply to placement extent; "
                              f"a georeferenced raster is placed and sized by its georeference")
        if self.survey_box and (len(self.survey_box) != 4 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for v in self.survey_box)):
            raise ConfigError(f"TerrainConfig.survey_box must be empty or four numbers "
                              f"[lon_min, lon_max, lat_min, lat_max], got {self.survey_box!r}")
        if self.survey_box and self.survey_area_file:
            raise ConfigError("TerrainConfig: give survey_box or survey_area_file, not both")
        self.survey_box = [float(v) for v in self.survey_box]


def terrain_from_config(config: TerrainConfig,
                        georeference: GeoReference | None = None) -> Terrain:
    """The configured terrain: the file at ``config.path``, else the embedded default.

    ``georeference``: the map frame's anchor, which placement ``georeferenced`` needs (and
    the other placements ignore).

    Raises:
        GeoError: a georeferenced raster without georeference, a survey area partly outside
            it, a raster all nodata under the area, a missing anchor (one message each).
    """
    if config.placement == "georeferenced":
        return _georeferenced_terrain(config, georeference)
    if not config.path:
        return default_terrain(config.extent)
    shape = (config.resize_rows, config.resize_cols) if config.resize_rows else None
    return load_terrain(config.path, config.extent, fill_voids=config.fill_voids,
                        shape=shape, first_row=config.first_row)


def _georeferenced_terrain(config: TerrainConfig, georeference: GeoReference | None) -> Terrain:
    from poam_ros.geo import GeoError, load_geo_terrain, read_survey_area
    from poam_ros.geo.embedded import default_geo_terrain

    if georeference is None:
        raise GeoError(f"{config.path or 'the embedded bathymetry'}: placement georeferenced "
                       f"needs the map frame's geodetic anchor: set geo.anchor (latlon or "
                       f"projected) in the mapper's parameters")
    area = None
    if config.survey_box:
        area = config.survey_box
    elif config.survey_area_file:
        area = read_survey_area(config.survey_area_file).outline
    resolution = config.resolution or None
    if not config.path:
        return default_geo_terrain(georeference, area, resolution=resolution).terrain
    return load_geo_terrain(config.path, georeference, area, resolution=resolution,
                            fill_voids=config.fill_voids).terrain
