"""A map product written as a COG and read back: the same cells, CRS, transform and tags."""

import numpy as np
import pytest
import rasterio
from affine import Affine

from poam_ros.geo.export import LAYER_UNITS, export_map_product, read_map_product, sample_density
from poam_ros.geo.georeference import GeoError, GeoReference
from poam_ros.geo.raster import load_geo_terrain

ORIGIN = (-1500.0, -900.0)  # south-west corner of cell (0, 0), map metres
RESOLUTION = 25.0
ROWS, COLS = 40, 60


def _layers(rng):
    """Four (rows, cols) layers, row 0 south, with NaN outside a 'workspace'."""
    layers = {name: rng.normal(size=(ROWS, COLS)) for name in LAYER_UNITS}
    layers["mean"] = -100.0 - np.arange(ROWS)[:, None] - 0.5 * np.arange(COLS)[None, :]
    layers["mean"][:3, :7] = np.nan
    return layers


@pytest.mark.parametrize("anchor", [GeoReference.local(47.5, -123.5),
                                    GeoReference.at_lonlat("UTM 10N", 47.5, -123.5,
                                                           vertical_reference="chart datum")])
def test_written_cells_read_back_in_place(tmp_path, anchor):
    layers = _layers(np.random.default_rng(0))
    path = export_map_product(tmp_path / "map.tif", layers, ORIGIN, RESOLUTION, anchor)
    product = read_map_product(path)
    assert list(product.layers) == list(LAYER_UNITS)
    for name, layer in layers.items():
        np.testing.assert_array_equal(product.layers[name], layer.astype(np.float32))
    assert product.crs == anchor.crs
    east0, north0 = anchor.origin
    assert product.transform == Affine(RESOLUTION, 0.0, east0 + ORIGIN[0], 0.0, -RESOLUTION,
                                       north0 + ORIGIN[1] + ROWS * RESOLUTION)
    assert product.vertical_reference == anchor.vertical_reference
    assert product.units == LAYER_UNITS and np.isnan(product.nodata)
    # A map point lands on its own cell: the centre of cell (i, j), row 0 south, is file
    # row ROWS - 1 - i (north first), column j.
    i, j = np.array([0, 5, 39]), np.array([0, 17, 59])
    x, y = ORIGIN[0] + (j + 0.5) * RESOLUTION, ORIGIN[1] + (i + 0.5) * RESOLUTION
    with rasterio.open(path) as dataset:
        file_rows, file_cols = rasterio.transform.rowcol(dataset.transform, x + east0,
                                                         y + north0)
        assert dataset.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
        assert dataset.descriptions == tuple(LAYER_UNITS)
    np.testing.assert_array_equal(file_rows, ROWS - 1 - i)
    np.testing.assert_array_equal(file_cols, j)


def test_overviews_for_a_large_map(tmp_path):
    anchor = GeoReference.local(47.5, -123.5)
    layers = {"mean": np.zeros((1100, 1100))}
    path = export_map_product(tmp_path / "big.tif", layers, ORIGIN, 1.0, anchor)
    with rasterio.open(path) as dataset:
        assert dataset.overviews(1) == [2, 4] and dataset.block_shapes[0] == (512, 512)


def test_the_mean_layer_reloads_as_the_same_terrain(tmp_path):
    # Exported on a local anchor, the mean layer is a terrain raster in that same CRS:
    # loaded over its own extent at its own resolution it samples the same cell centres.
    anchor = GeoReference.local(47.5, -123.5)
    layers = _layers(np.random.default_rng(1))
    layers["mean"][:3, :7] = -100.0
    path = export_map_product(tmp_path / "map.tif", {"mean": layers["mean"]}, ORIGIN,
                              RESOLUTION, anchor)
    terrain = load_geo_terrain(path, anchor).terrain
    assert terrain.shape == (ROWS, COLS)
    np.testing.assert_allclose(terrain.extent, (ORIGIN[0], ORIGIN[0] + COLS * RESOLUTION,
                                                ORIGIN[1], ORIGIN[1] + ROWS * RESOLUTION),
                               atol=1e-6)
    np.testing.assert_allclose(terrain.grid, layers["mean"].astype(np.float32), atol=1e-6)


def test_sample_density_counts_soundings_per_cell():
    xy = np.array([[-1499.0, -899.0], [-1474.0, -899.0], [-1474.0, -880.0],  # cells (0,0),(0,1)
                   [-1500.0 + 59.5 * 25, -900.0 + 39.5 * 25],  # the north-east cell
                   [-2000.0, 0.0]])  # off the grid
    counts = sample_density(xy, ORIGIN, RESOLUTION, (ROWS, COLS))
    assert counts.shape == (ROWS, COLS) and counts.sum() == 4
    assert counts[0, 0] == 1 and counts[0, 1] == 2 and counts[-1, -1] == 1


def test_bad_products_are_named(tmp_path):
    anchor = GeoReference.local(47.5, -123.5)
    with pytest.raises(GeoError, match="map.tif: no layers"):
        export_map_product(tmp_path / "map.tif", {}, ORIGIN, RESOLUTION, anchor)
    with pytest.raises(GeoError, match=r"map.tif: layers must be 2-D and of one shape"):
        export_map_product(tmp_path / "map.tif", {"mean": np.zeros((2, 3)),
                                                  "std": np.zeros((3, 2))},
                           ORIGIN, RESOLUTION, anchor)
    with pytest.raises(GeoError, match="map.tif: resolution must be a positive number"):
        export_map_product(tmp_path / "map.tif", {"mean": np.zeros((2, 3))}, ORIGIN, 0.0,
                           anchor)
    (tmp_path / "file").write_text("")
    with pytest.raises(GeoError, match="file/map.tif: cannot write the map product"):
        export_map_product(tmp_path / "file" / "map.tif", {"mean": np.zeros((2, 3))},
                           ORIGIN, RESOLUTION, anchor)
    made = export_map_product(tmp_path / "new" / "map.tif", {"mean": np.zeros((2, 3))},
                              ORIGIN, RESOLUTION, anchor)
    assert read_map_product(made).layers["mean"].shape == (2, 3)
    with pytest.raises(GeoError, match="nothing.tif: unreadable map product"):
        read_map_product(tmp_path / "nothing.tif")
