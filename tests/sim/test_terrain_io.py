"""Each loader, the row flip, void filling and one clear error per bad input."""

import logging

import numpy as np
import pytest
from PIL import Image
from sim_data import PAPER_EXTENT, synthetic_tile, write_hgt

from poam_ros.sim.terrain import TerrainError
from poam_ros.sim.terrain_io import load_terrain


def test_paper_image_preprocessing_equals_paper_npz(srtm_dir):
    for tile in ("N17E073", "N47W124"):
        from_image = load_terrain(srtm_dir / f"{tile}.jpg", PAPER_EXTENT, shape=(360, 360))
        from_npz = load_terrain(srtm_dir / f"{tile}_360.npz", PAPER_EXTENT)
        with np.load(srtm_dir / f"{tile}_360.npz") as data:
            stored = data["elevation"]
        np.testing.assert_array_equal(from_image.grid, from_npz.grid)
        np.testing.assert_array_equal(from_image.grid, stored[::-1])
        assert from_image.name == tile


def test_image_resize_takes_rows_then_columns(srtm_dir):
    terrain = load_terrain(srtm_dir / "N17E073.jpg", PAPER_EXTENT, shape=(90, 120))
    assert terrain.shape == (90, 120)


def test_image_rows_are_flipped_so_row_zero_is_south(tmp_path):
    pixels = np.array([[200, 200], [10, 10], [0, 0]], dtype=np.uint8)  # top row bright
    Image.fromarray(pixels).save(tmp_path / "ramp.png")
    terrain = load_terrain(tmp_path / "ramp.png", (0, 2, 0, 3))
    np.testing.assert_array_equal(terrain.grid[:, 0], [0, 10, 200])
    as_stored = load_terrain(tmp_path / "ramp.png", (0, 2, 0, 3), first_row="south")
    np.testing.assert_array_equal(as_stored.grid[:, 0], [200, 10, 0])


def test_colour_image_becomes_luminance(tmp_path):
    Image.new("RGB", (4, 3), (255, 0, 0)).save(tmp_path / "red.png")
    terrain = load_terrain(tmp_path / "red.png", (0, 4, 0, 3))
    np.testing.assert_array_equal(terrain.grid, np.full((3, 4), 76.0))  # ITU-R 601-2 luma


@pytest.mark.parametrize("side", [1201, 3601])
def test_hgt_tile(tmp_path, side):
    heights = synthetic_tile(side)
    terrain = load_terrain(write_hgt(tmp_path / "N00E000.hgt", heights), PAPER_EXTENT)
    assert terrain.shape == (side, side)
    np.testing.assert_array_equal(terrain.grid, heights[::-1].astype(float))


def test_hgt_voids_take_the_nearest_valid_value(tmp_path, caplog):
    heights = synthetic_tile()
    voids = heights.copy()
    voids[600, 600] = voids[10:13, 0] = voids[20, 20:23] = -32768
    with caplog.at_level(logging.WARNING, logger="poam_ros"):
        terrain = load_terrain(write_hgt(tmp_path / "N00E000.hgt", voids), PAPER_EXTENT)
    # Elevations made up are said at warning level, with their count.
    [record] = caplog.records
    assert record.levelno == logging.WARNING and \
        f"N00E000.hgt: filled 7 of {1201 * 1201} cell(s)" in record.getMessage()
    file_rows = terrain.grid[::-1]
    # A lone void has four nearest valid cells; the filler takes one of them.
    assert file_rows[600, 600] in {heights[599, 600], heights[601, 600],
                                   heights[600, 599], heights[600, 601]}
    # The middle of a void strip on the western edge has one nearest cell, to its east;
    # the middle of a horizontal strip has two, above and below.
    assert file_rows[11, 0] == heights[11, 1]
    assert file_rows[20, 21] in {heights[19, 21], heights[21, 21]}
    untouched = voids != -32768
    np.testing.assert_array_equal(file_rows[untouched], heights[untouched])


def test_hgt_voids_are_an_error_when_filling_is_off(tmp_path):
    heights = synthetic_tile()
    heights[5, 7] = -32768
    path = write_hgt(tmp_path / "N00E000.hgt", heights)
    with pytest.raises(TerrainError, match=r"N00E000.hgt: 1 void .*file row 5, column 7.*"
                                           r"fill_voids is off"):
        load_terrain(path, PAPER_EXTENT, fill_voids=False)


def test_hgt_entirely_void_is_an_error(tmp_path):
    path = write_hgt(tmp_path / "N00E000.hgt", np.full((1201, 1201), -32768))
    with pytest.raises(TerrainError, match="every cell is void"):
        load_terrain(path, PAPER_EXTENT)


def test_hgt_of_wrong_size(tmp_path):
    path = write_hgt(tmp_path / "N00E000.hgt", np.zeros((100, 100)))
    with pytest.raises(TerrainError, match=r"wrong .hgt size 20000 bytes; expected 2884802 "
                                           r"bytes \(1201 × 1201, 3 arc-second\) or 25934402"):
        load_terrain(path, PAPER_EXTENT)


def test_hgt_resize(tmp_path):
    terrain = load_terrain(write_hgt(tmp_path / "N00E000.hgt", synthetic_tile()),
                           PAPER_EXTENT, shape=(60, 40))
    assert terrain.shape == (60, 40)
    assert 1000 <= terrain.min_elevation < terrain.max_elevation <= 1000 + 3 * 1200


def test_npy(tmp_path):
    grid = np.arange(12.0).reshape(3, 4)
    np.save(tmp_path / "grid.npy", grid)
    terrain = load_terrain(tmp_path / "grid.npy", (0, 4, 0, 3))
    np.testing.assert_array_equal(terrain.grid, grid[::-1])


def test_npz_prefers_elevation_else_the_single_array(tmp_path):
    grid = np.arange(12.0).reshape(3, 4)
    np.savez(tmp_path / "named.npz", mask=np.zeros((3, 4)), elevation=grid)
    np.savez(tmp_path / "single.npz", grid)
    for name in ("named.npz", "single.npz"):
        terrain = load_terrain(tmp_path / name, (0, 4, 0, 3), first_row="south")
        np.testing.assert_array_equal(terrain.grid, grid)


def test_npz_with_several_unnamed_arrays(tmp_path):
    np.savez(tmp_path / "two.npz", a=np.zeros((3, 3)), b=np.ones((3, 3)))
    with pytest.raises(TerrainError, match=r"holds 2 arrays \['a', 'b'\] and none is named "
                                           r"'elevation'"):
        load_terrain(tmp_path / "two.npz", PAPER_EXTENT)


def test_nan_in_array_is_filled_or_an_error(tmp_path):
    grid = np.arange(16.0).reshape(4, 4)
    grid[0, 0] = np.nan
    grid[3, 3] = np.inf
    np.save(tmp_path / "holes.npy", grid)
    terrain = load_terrain(tmp_path / "holes.npy", (0, 4, 0, 4), first_row="south")
    assert terrain.grid[0, 0] in (1.0, 4.0) and terrain.grid[3, 3] in (11.0, 14.0)
    with pytest.raises(TerrainError, match="2 void or non-finite cell"):
        load_terrain(tmp_path / "holes.npy", (0, 4, 0, 4), fill_voids=False)


@pytest.mark.parametrize("name, content, message", [
    ("missing.npy", None, "terrain file not found"),
    ("grid.xyz", b"1 2 3", r"unknown terrain format '.xyz'; supported: .hgt, .npy"),
    ("noext", b"1 2 3", r"unknown terrain format '\(no suffix\)'"),
    ("corrupt.npy", b"not a numpy file", r"corrupt.npy: unreadable .npy file"),
    ("corrupt.npz", b"PK\x03\x04 truncated", r"corrupt.npz: unreadable .npz file"),
    ("corrupt.jpg", b"\xff\xd8 not really", r"corrupt.jpg: unreadable image"),
])
def test_bad_files(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TerrainError, match=message):
        load_terrain(path, PAPER_EXTENT)


def test_array_of_wrong_shape_or_type(tmp_path):
    np.save(tmp_path / "line.npy", np.zeros(5))
    with pytest.raises(TerrainError, match=r"expected a 2-D numeric array, got shape \(5,\)"):
        load_terrain(tmp_path / "line.npy", PAPER_EXTENT)
    np.save(tmp_path / "text.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(TerrainError, match="2-D numeric array.*dtype <U1"):
        load_terrain(tmp_path / "text.npy", PAPER_EXTENT)


def test_grid_smaller_than_two_by_two(tmp_path):
    np.save(tmp_path / "thin.npy", np.zeros((1, 5)))
    with pytest.raises(TerrainError, match=r"thin: elevation grid must be at least 2 × 2"):
        load_terrain(tmp_path / "thin.npy", PAPER_EXTENT)


def test_bad_extent_shape_and_row_option(tmp_path):
    np.save(tmp_path / "grid.npy", np.zeros((3, 3)))
    with pytest.raises(TerrainError, match="zero or negative size"):
        load_terrain(tmp_path / "grid.npy", (1, -1, 0, 1))
    with pytest.raises(TerrainError, match="shape must be two integers >= 2"):
        load_terrain(tmp_path / "grid.npy", PAPER_EXTENT, shape=(360,))
    with pytest.raises(TerrainError, match="first_row must be one of"):
        load_terrain(tmp_path / "grid.npy", PAPER_EXTENT, first_row="up")


def test_a_float_geotiff_of_depths_keeps_its_depths(tmp_path):
    """A GEBCO-like float raster of depths -4000 ... -100 m, with a nodata cell, loads as
    those depths (it once went through 8-bit luminance: a flat 0 m seafloor)."""
    import rasterio
    from rasterio.transform import from_origin

    depths = np.linspace(-4000.0, -100.0, 12, dtype=np.float32).reshape(3, 4)
    depths[0, 0] = -9999.0  # nodata: filled from its nearest valid cell
    with rasterio.open(tmp_path / "gebco.tif", "w", driver="GTiff", height=3, width=4,
                       count=1, dtype="float32", nodata=-9999.0, crs="EPSG:4326",
                       transform=from_origin(-124.0, 47.0, 0.01, 0.01)) as dataset:
        dataset.write(depths, 1)
    terrain = load_terrain(tmp_path / "gebco.tif", (0, 4, 0, 3))
    expected = depths.astype(np.float64)
    expected[0, 0] = expected[1, 0]  # the nearest valid cell (ties: the next row)
    np.testing.assert_array_equal(terrain.grid, expected[::-1])  # row 0 south
