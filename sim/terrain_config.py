"""Which terrain to simulate and where it lies, as one typed configuration."""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.default_terrain import PAPER_EXTENT, default_terrain
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.terrain_io import FIRST_ROW_CHOICES, load_terrain


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

    def validate(self) -> None:
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


def terrain_from_config(config: TerrainConfig) -> Terrain:
    """The configured terrain: the file at ``config.path``, else the embedded default."""
    if not config.path:
        return default_terrain(config.extent)
    shape = (config.resize_rows, config.resize_cols) if config.resize_rows else None
    return load_terrain(config.path, config.extent, fill_voids=config.fill_voids,
                        shape=shape, first_row=config.first_row)
