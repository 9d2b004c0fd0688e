"""TerrainConfig validation and building a terrain from it, stretched over an extent or
placed at its true size through the map's geodetic anchor."""

import math

import numpy as np
import pytest
from rasterio.transform import Affine

from poam_ros.geo import GeoError, GeoReference
from poam_ros.params import ConfigError
from poam_ros.setup.terrain import TerrainConfig, terrain_from_config
from tests.core.geo.geo_data import write_geotiff


def test_default_config_builds_the_embedded_terrain():
    terrain = terrain_from_config(TerrainConfig())
    assert terrain.name == "topobathy Juan de Fuca shelf"
    assert terrain.extent == (-31.0, 31.0, -31.0, 31.0)


def test_config_loads_a_file_with_its_options(tmp_path):
    np.save(tmp_path / "grid.npy", np.arange(20.0).reshape(4, 5))
    config = TerrainConfig.from_dict({"path": str(tmp_path / "grid.npy"),
                                      "extent": [0, 5, 0, 4], "first_row": "south"})
    terrain = terrain_from_config(config)
    assert config.extent == [0.0, 5.0, 0.0, 4.0]
    np.testing.assert_array_equal(terrain.grid, np.arange(20.0).reshape(4, 5))
    resized = terrain_from_config(config.replace(resize_rows=8, resize_cols=10))
    assert resized.shape == (8, 10)


@pytest.mark.parametrize("values, message", [
    ({"extent": [0, 1, 0]}, "four numbers"),
    ({"extent": [0, 0, 0, 1]}, "zero or negative size"),
    ({"path": "a.npy", "resize_rows": 10}, "both be 0"),
    ({"path": "a.npy", "resize_rows": 1, "resize_cols": 1}, ">= 2"),
    ({"first_row": "up"}, "must be one of"),
    ({"fill_voids": False}, "apply to a file"),
    ({"extent_m": [0, 1, 0, 1]}, "unknown parameter"),
])
def test_bad_config(values, message):
    with pytest.raises(ConfigError, match=message):
        TerrainConfig.from_dict(values)


# ------------------------------------------------------------- georeferenced placement

ANCHOR = GeoReference.local(47.5, -123.5)
TILE = Affine(0.01, 0, -123.6, 0, -0.01, 47.6)  # 0.2° × 0.2° of 0.01° cells about the anchor


def depth_tile(tmp_path, values=None, **georeference):
    grid = np.linspace(-900.0, -100.0, 400).reshape(20, 20) if values is None else values
    georeference = georeference or {"crs": "EPSG:4326", "transform": TILE}
    return str(write_geotiff(tmp_path / "depths.tif", grid, **georeference))


def georeferenced(path, **values):
    return TerrainConfig(path=path, placement="georeferenced", **values)


def assert_true_size(terrain, box, latitude: float, cell: float) -> None:
    """The terrain spans the lon/lat ``box`` in metres (111,320 m a degree of longitude at
    the equator, times cos(latitude); 111,132 m a degree of latitude), in ``cell`` m cells."""
    xmin, xmax, ymin, ymax = terrain.extent
    lon_min, lon_max, lat_min, lat_max = box
    assert xmax - xmin == pytest.approx(
        (lon_max - lon_min) * 111_320 * math.cos(math.radians(latitude)), rel=5e-3)
    assert ymax - ymin == pytest.approx((lat_max - lat_min) * 111_132, rel=5e-3)
    assert terrain.cell_size == pytest.approx((cell, cell), rel=0.05)


def test_a_georeferenced_raster_is_placed_at_its_true_size(tmp_path):
    box = [-123.52, -123.48, 47.49, 47.51]
    terrain = terrain_from_config(georeferenced(depth_tile(tmp_path), survey_box=box,
                                                resolution=50.0), ANCHOR)
    # 0.04° of longitude at 47.5° N is about 3.0 km; 0.02° of latitude about 2.2 km.
    assert_true_size(terrain, box, 47.5, 50.0)
    assert -900.0 < terrain.min_elevation < terrain.max_elevation < -100.0


@pytest.mark.parametrize("case, message", [
    ("no anchor", "placement georeferenced needs the map frame's geodetic anchor"),
    ("no georeference", "the raster has no georeference"),
    ("partly outside", "lies partly outside the raster"),
    ("all nodata", "every sample under the survey area is nodata"),
])
def test_bad_georeferenced_input_is_one_clear_error(tmp_path, case, message):
    box = [-123.55, -123.45, 47.45, 47.55]
    anchor = ANCHOR
    if case == "no anchor":
        path, anchor = depth_tile(tmp_path), None
    elif case == "no georeference":
        path = str(write_geotiff(tmp_path / "plain.tif", np.full((20, 20), -50.0), None, None))
    elif case == "partly outside":
        path, box = depth_tile(tmp_path), [-123.7, -123.5, 47.45, 47.55]
    else:
        path = depth_tile(tmp_path, np.full((20, 20), -9999.0), crs="EPSG:4326",
                          transform=TILE, nodata=-9999.0)
    with pytest.raises(GeoError, match=message):
        terrain_from_config(georeferenced(path, survey_box=box), anchor)


@pytest.mark.parametrize("values, message", [
    ({"placement": "georeferenced", "first_row": "south"}, "apply to placement extent"),
    ({"path": "a.tif", "placement": "georeferenced", "extent": [0, 1, 0, 1]},
     "extent apply to placement extent"),
    ({"path": "a.tif", "survey_box": [0, 1, 0, 1]}, "survey_box apply to placement "
                                                    "georeferenced"),
    ({"path": "a.tif", "placement": "georeferenced", "survey_box": [0, 1]},
     "survey_box must be empty or four numbers"),
    ({"path": "a.tif", "placement": "georeferenced", "survey_box": [0, 1, 0, 1],
      "survey_area_file": "area.geojson"}, "not both"),
])
def test_bad_georeferenced_config(values, message):
    with pytest.raises(ConfigError, match=message):
        TerrainConfig.from_dict(values)


def test_without_a_path_the_embedded_bathymetry_is_placed_at_its_true_size():
    anchor = GeoReference.local(48.12, -125.68)
    box = [-125.85, -125.52, 48.02, 48.22]
    terrain = terrain_from_config(TerrainConfig(placement="georeferenced", survey_box=box,
                                                resolution=500.0), anchor)
    # 0.33° of longitude at 48.1° N is about 24.5 km; 0.2° of latitude about 22.2 km.
    assert_true_size(terrain, box, 48.12, 500.0)
    # The shelf (about -150 m) in the east, the slope (below -1,000 m) in the west.
    assert terrain.min_elevation < -1000.0 and -200.0 < terrain.max_elevation < -100.0
    assert terrain.elevation([[-11_000.0, -9_000.0]])[0] < -800.0
    assert terrain.elevation([[11_000.0, 0.0]])[0] > -200.0
