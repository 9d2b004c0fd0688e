"""Real-scale terrain: each format at its true place and size with its own values, and one
clear error naming the file per bad raster."""

import logging
import math

import numpy as np
import pyproj
import pytest
import shapely
from affine import Affine
from geo_data import meridian_radius, prime_vertical_radius, write_geotiff, write_hgt
from matplotlib import cbook
from scipy.interpolate import RegularGridInterpolator
from scipy.io import netcdf_file

from poam_ros.geo.embedded import default_geo_terrain
from poam_ros.geo.georeference import GeoError, GeoReference
from poam_ros.geo.raster import load_geo_terrain

ANCHOR = GeoReference.local(47.5, -123.5)
ARC_SECOND = 1 / 3600


def _cell_lonlat(terrain, anchor=ANCHOR):
    x, y = np.meshgrid(*terrain.cell_centres())
    return anchor.to_lonlat(x, y)


def _assert_native_spacing(terrain, degrees: float, latitude: float = 47.5):
    """Cells of the raster's spacing at ``latitude`` (``degrees`` of latitude and of
    longitude), shrunk by less than one cell in the extent so that whole cells tile it."""
    dx, dy = terrain.cell_size
    rows, cols = terrain.shape
    east = prime_vertical_radius(latitude) * math.cos(math.radians(latitude))
    for cell, count, radius in ((dx, cols, east), (dy, rows, meridian_radius(latitude))):
        native = radius * math.radians(degrees)
        assert native * (1 - 1 / count) <= cell <= native * (1 + 1e-9)


def _gebco_like_depth(lon, lat):
    """-4000 m in the south-west falling linearly to -100 m in the north-east of the box
    lon [-124, -123], lat [47, 48]; linear in lon/lat, so bilinear sampling reproduces it."""
    return -4000.0 + 1950.0 * (lon + 124.0) + 1950.0 * (lat - 47.0)


def _gebco_like_geotiff(path, nodata=None):
    """A 0.01° EPSG:4326 float GeoTIFF over lon [-124, -123], lat [47, 48], north first."""
    lon = -124.0 + 0.005 + 0.01 * np.arange(100)
    lat = 48.0 - 0.005 - 0.01 * np.arange(100)
    depth = _gebco_like_depth(*np.meshgrid(lon, lat))
    return write_geotiff(path, depth, "EPSG:4326", Affine(0.01, 0, -124.0, 0, -0.01, 48.0),
                         nodata=nodata), depth


def test_float_geotiff_keeps_its_depths_in_metres(tmp_path):
    path, _ = _gebco_like_geotiff(tmp_path / "gebco.tif")
    box = (-123.6, -123.4, 47.4, 47.6)
    loaded = load_geo_terrain(path, ANCHOR, box)
    terrain = loaded.terrain
    lon, lat = _cell_lonlat(terrain)
    # float32 storage: depths to a few millimetres.
    np.testing.assert_allclose(terrain.grid, _gebco_like_depth(lon, lat), atol=5e-3)
    assert -4000 < terrain.min_elevation and terrain.max_elevation < -100
    assert terrain.max_elevation - terrain.min_elevation > 700  # not a flat seafloor
    assert loaded.source_crs.to_epsg() == 4326
    assert loaded.vertical_reference == "mean sea level"
    # The box's true size: 0.2° of latitude, plus the northern parallel's rise at the
    # corners (N sin φ cos φ Δλ² / 2, 4.8 m), by 0.2° of longitude at its widest, the south.
    xmin, xmax, ymin, ymax = terrain.extent
    rise = prime_vertical_radius(47.6) * math.sin(math.radians(47.6)) * math.cos(
        math.radians(47.6)) * math.radians(0.1) ** 2 / 2
    assert ymax - ymin == pytest.approx(meridian_radius(47.5) * math.radians(0.2) + rise,
                                        rel=1e-6)
    assert xmax - xmin == pytest.approx(prime_vertical_radius(47.4) * math.cos(
        math.radians(47.4)) * math.radians(0.2), rel=1e-4)
    _assert_native_spacing(terrain, 0.01)


def test_north_is_up(tmp_path):
    path, _ = _gebco_like_geotiff(tmp_path / "gebco.tif")
    terrain = load_geo_terrain(path, ANCHOR, (-123.6, -123.4, 47.4, 47.6)).terrain
    assert terrain.grid[-1, 0] > terrain.grid[0, 0]  # shallower to the north
    assert terrain.grid[0, -1] > terrain.grid[0, 0]  # and to the east


def test_projected_raster_with_nodata_in_another_crs(tmp_path, caplog):
    # A UTM 10N raster of 100 m cells, depth linear in easting and northing, a nodata hole.
    anchor = GeoReference.at_lonlat("UTM 10N", 47.5, -123.5)
    east0, north0 = anchor.origin - 5000.0
    depth = -200.0 - 0.01 * np.arange(100)[None, :] - 0.02 * np.arange(100)[::-1, None]
    depth[40:45, 40:45] = -9999.0
    path = write_geotiff(tmp_path / "utm.tif", depth, "EPSG:32610",
                         Affine(100.0, 0, east0, 0, -100.0, north0 + 10_000.0), nodata=-9999.0)
    with caplog.at_level(logging.WARNING, logger="poam_ros"):
        terrain = load_geo_terrain(path, ANCHOR, (-123.52, -123.48, 47.49, 47.51),
                                   resolution=50.0).terrain
    assert [(r.levelno, r.getMessage().split(" of ")[0]) for r in caplog.records] == \
        [(logging.WARNING, f"{path}: filled 25")]  # said, with the count of samples made up
    assert max(terrain.cell_size) <= 50.0
    assert -203.0 < terrain.min_elevation and terrain.max_elevation < -200.0  # no -9999
    with pytest.raises(GeoError, match=r"utm.tif: 25 nodata or non-finite sample\(s\) under "
                                       r"the survey area, the first at file row 40, column 40, "
                                       r"and fill_voids is off"):
        load_geo_terrain(path, anchor, (-123.52, -123.48, 47.49, 47.51), fill_voids=False)


def _write_netcdf(path, **grids):
    """A GEBCO-like NetCDF: 0.01° lat/lon coordinates (latitude ascending, as GEBCO stores
    it) over lon [-124, -123], lat [47, 48], and one (lat, lon) variable per ``grids``
    entry, a function of (lon, lat)."""
    lat = 47.0 + 0.005 + 0.01 * np.arange(100)
    lon = -124.0 + 0.005 + 0.01 * np.arange(100)
    with netcdf_file(path, "w") as file:
        file.createDimension("lat", lat.size)
        file.createDimension("lon", lon.size)
        for name, values, units in (("lat", lat, "degrees_north"), ("lon", lon, "degrees_east")):
            variable = file.createVariable(name, "f8", (name,))
            variable[:], variable.units = values, units
        for name, function in grids.items():
            variable = file.createVariable(name, "f4", ("lat", "lon"))
            variable[:] = function(*np.meshgrid(lon, lat))
    return path


def test_gebco_netcdf_with_south_first_rows(tmp_path):
    path = _write_netcdf(tmp_path / "gebco.nc", elevation=_gebco_like_depth)
    loaded = load_geo_terrain(path, ANCHOR, (-123.6, -123.4, 47.4, 47.6))
    lon_cells, lat_cells = _cell_lonlat(loaded.terrain)
    np.testing.assert_allclose(loaded.terrain.grid, _gebco_like_depth(lon_cells, lat_cells),
                               atol=5e-3)
    assert loaded.source_crs.to_epsg() == 4326


def test_netcdf_variables_are_chosen_by_name(tmp_path):
    box = (-123.6, -123.4, 47.4, 47.6)
    two = _write_netcdf(tmp_path / "two.nc", tid=lambda lon, lat: 0 * lon + 11.0,
                        elevation=_gebco_like_depth)
    assert load_geo_terrain(two, ANCHOR, box).terrain.max_elevation < -100  # elevation
    tid = load_geo_terrain(two, ANCHOR, box, variable="tid").terrain
    np.testing.assert_allclose(tid.grid, 11.0)
    unnamed = _write_netcdf(tmp_path / "unnamed.nc", a=_gebco_like_depth, b=_gebco_like_depth)
    with pytest.raises(GeoError, match=r"unnamed.nc: holds the variables \['a', 'b'\] and "
                                       "none is named 'elevation'"):
        load_geo_terrain(unnamed, ANCHOR, box)
    with pytest.raises(GeoError, match="gebco.tif: variable 'z' applies to NetCDF files only"):
        load_geo_terrain(_gebco_like_geotiff(tmp_path / "gebco.tif")[0], ANCHOR, box,
                         variable="z")


def test_three_arc_second_tile_has_the_tiles_real_size(tmp_path):
    path, _ = write_hgt(tmp_path / "N47W124.hgt", 1201)
    terrain = load_geo_terrain(path, ANCHOR).terrain
    # Samples sit on whole 3″ from 47° to 48° N and 124° to 123° W; their cells reach half a
    # cell beyond. In map metres the meridians converge northwards and the parallels bow
    # north away from the central meridian (by N sin φ cos φ Δλ² / 2, about 121 m at the
    # tile's corners), so the whole tile's map rectangle runs from the northern edge's
    # width and from the southern edge's corners to the northern edge's middle.
    half = 1.5 * ARC_SECOND
    north, south, half_width = 48.0 + half, 47.0 - half, math.radians(0.5 + half)
    xmin, xmax, ymin, ymax = terrain.extent
    rise = prime_vertical_radius(south) * math.sin(math.radians(south)) * math.cos(
        math.radians(south)) * half_width ** 2 / 2
    height = (meridian_radius((47.5 + north) / 2) * math.radians(north - 47.5)
              + meridian_radius((47.5 + south) / 2) * math.radians(47.5 - south) - rise)
    width = 2 * prime_vertical_radius(north) * math.cos(math.radians(north)) * half_width
    assert ymax - ymin == pytest.approx(height, rel=1e-5)  # 111 km
    assert xmax - xmin == pytest.approx(width, rel=1e-5)  # 75 km
    _assert_native_spacing(terrain, 3 * ARC_SECOND)  # 63 m × 93 m


def test_one_arc_second_tile_is_placed_by_its_name(tmp_path):
    path, _ = write_hgt(tmp_path / "N47W124.hgt", 3601)
    terrain = load_geo_terrain(path, ANCHOR, (-123.55, -123.45, 47.48, 47.52)).terrain
    _assert_native_spacing(terrain, ARC_SECOND)  # 21 m east-west, 31 m north-south
    # Sample (i, j) is 1000 + i + 2 j m at latitude 48° − i″, longitude −124° + j″.
    lon, lat = _cell_lonlat(terrain)
    expected = 1000.0 + (48.0 - lat) * 3600 + 2 * (lon + 124.0) * 3600
    np.testing.assert_allclose(terrain.grid, expected, atol=1e-6)


def test_polygon_area_takes_its_bounding_rectangle(tmp_path):
    path, _ = _gebco_like_geotiff(tmp_path / "gebco.tif")
    triangle = shapely.Polygon([(-123.6, 47.4), (-123.4, 47.4), (-123.5, 47.6)])
    terrain = load_geo_terrain(path, ANCHOR, triangle).terrain
    # The base runs along the parallel 47.4° N, which reaches furthest south in map metres
    # where it crosses the central meridian (-123.5°).
    x, y = ANCHOR.to_map(*shapely.get_coordinates(triangle).T)
    _, y_south = ANCHOR.to_map(-123.5, 47.4)
    # (The outline is cut into short pieces: its lowest point is within millimetres of it.)
    np.testing.assert_allclose(terrain.extent, (x.min(), x.max(), y_south, y.max()), atol=5e-3)


def test_area_partly_outside_the_raster(tmp_path):
    path, _ = _gebco_like_geotiff(tmp_path / "gebco.tif")
    with pytest.raises(GeoError, match=r"gebco.tif: survey area lon \[-124.100000, -123.900000\]"
                                       r".* lies partly outside the raster, which covers lon "
                                       r"\[-124.000000, -123.000000\]"):
        load_geo_terrain(path, ANCHOR, (-124.1, -123.9, 47.4, 47.6))


def test_raster_without_georeference(tmp_path):
    depth = np.full((10, 10), -100.0)
    plain = write_geotiff(tmp_path / "plain.tif", depth, None, None)
    with pytest.raises(GeoError, match="plain.tif: the raster has no georeference "
                                       r"\(no geotransform\)"):
        load_geo_terrain(plain, ANCHOR)
    no_crs = write_geotiff(tmp_path / "no_crs.tif", depth, None,
                           Affine(0.01, 0, -124.0, 0, -0.01, 48.0))
    with pytest.raises(GeoError, match=r"no_crs.tif: the raster has no georeference \(no CRS\)"):
        load_geo_terrain(no_crs, ANCHOR)


def test_all_nodata_raster(tmp_path):
    path = write_geotiff(tmp_path / "empty.tif", np.full((10, 10), -9999.0), "EPSG:4326",
                         Affine(0.1, 0, -124.0, 0, -0.1, 48.0), nodata=-9999.0)
    with pytest.raises(GeoError, match="empty.tif: every sample under the survey area is "
                                       "nodata"):
        load_geo_terrain(path, ANCHOR)


def test_bad_srtm_tiles(tmp_path):
    unnamed = tmp_path / "tile.hgt"
    unnamed.write_bytes(bytes(1201 * 1201 * 2))
    with pytest.raises(GeoError, match="tile.hgt: an SRTM tile is placed by its name"):
        load_geo_terrain(unnamed, ANCHOR)
    short = tmp_path / "N47W124.hgt"
    short.write_bytes(bytes(1000))
    with pytest.raises(GeoError, match="N47W124.hgt: wrong .hgt size 1000 bytes"):
        load_geo_terrain(short, ANCHOR)


def test_vertical_reference_must_match_the_declared_one(tmp_path):
    path, _ = _gebco_like_geotiff(tmp_path / "gebco.tif")
    tagged = write_geotiff(tmp_path / "lat.tif", np.full((100, 100), -50.0), "EPSG:4326",
                           Affine(0.01, 0, -124.0, 0, -0.01, 48.0),
                           tags={"VERTICAL_REFERENCE": "lowest astronomical tide"})
    with pytest.raises(GeoError, match="lat.tif: elevations are relative to 'lowest "
                                       "astronomical tide' but the map declares 'mean sea"):
        load_geo_terrain(tagged, ANCHOR, (-123.6, -123.4, 47.4, 47.6))
    chart = GeoReference.local(47.5, -123.5, vertical_reference="lowest astronomical tide")
    terrain = load_geo_terrain(tagged, chart, (-123.6, -123.4, 47.4, 47.6)).terrain
    np.testing.assert_allclose(terrain.grid, -50.0)


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(GeoError, match="nothing.tif: raster file not found"):
        load_geo_terrain(tmp_path / "nothing.tif", ANCHOR)
    garbage = tmp_path / "garbage.tif"
    garbage.write_text("not a raster")
    with pytest.raises(GeoError, match="garbage.tif: unreadable raster"):
        load_geo_terrain(garbage, ANCHOR)


def test_the_embedded_bathymetry_at_its_true_place():
    # matplotlib's topobathy sample (the only real bathymetry a dependency ships) is a
    # regular grid in web Mercator (EPSG:3857): 2′ of longitude, 3710.7 m, each way. The
    # embedded world samples it bilinearly in those metres at its lon/lat centres, here
    # in a 10 km box off Juan de Fuca.
    with np.load(cbook.get_sample_data("topobathy.npz", asfileobj=False)) as data:
        topo, lon, lat = data["topo"], data["longitude"] - 360.0, data["latitude"]
    to_mercator = pyproj.Transformer.from_crs(4326, 3857, always_xy=True)
    x, _ = to_mercator.transform(lon.astype(float), np.full(lon.size, lat[0]))
    _, y = to_mercator.transform(np.full(lat.size, lon[0]), lat.astype(float))
    cell = (x[-1] - x[0]) / (x.size - 1)
    assert np.diff(y).mean() == pytest.approx(cell, rel=1e-3)
    anchor = GeoReference.local(48.3, -125.5)
    terrain = default_geo_terrain(anchor, (-125.57, -125.43, 48.25, 48.35)).terrain
    centres_x, centres_y = anchor.map_to(pyproj.CRS.from_epsg(3857),
                                         *np.meshgrid(*terrain.cell_centres()))
    expected = RegularGridInterpolator((y, x), topo.astype(float))(
        np.stack([centres_y, centres_x], axis=-1))
    # The rows' Mercator spacing is the columns' to 0.1 %: a few metres of position.
    np.testing.assert_allclose(terrain.grid, expected, rtol=1e-3, atol=1.0)
    assert terrain.max_elevation < 0 and terrain.shape[0] > 2  # seafloor, about 10 km
    xmin, xmax, ymin, ymax = terrain.extent
    assert 10_000 < xmax - xmin < 11_000 and 11_000 < ymax - ymin < 11_500
