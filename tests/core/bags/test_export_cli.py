"""``poam-ros export`` on a saved model and on a survey bag: the GeoTIFF read back with
rasterio holds the model's map in the anchor's CRS on the grid's cells; a map frame without
an anchor is refused in one line naming ``geo.anchor``, unless ``--crs`` names its CRS."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import rasterio
import yaml
from affine import Affine
from test_bag_files import corrupt_a_chunk
from test_remap_cli import small_params

from poam_ros.bags.remap import remap_bag
from poam_ros.bags.remap_config import RemapConfig
from poam_ros.cli import main
from poam_ros.geo import GeoReference, read_map_product
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.models import load_model, make_model
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file
from poam_ros.workspace import Workspace

LATLON = {"anchor": "latlon", "origin_latitude": 47.25, "origin_longitude": -123.75,
          "vertical_reference": "chart datum"}
UTM = {"anchor": "projected", "crs": "UTM 10N", "origin_easting": 512_345.5,
       "origin_northing": 5_234_567.25}


def params_with(tmp_path, geo: dict | None = None, name: str = "params.yaml", **grid):
    """The small parameter file with ``geo.*`` and ``grid.*`` set in the mapper's section."""
    tree = yaml.safe_load(small_params(tmp_path).read_text())
    mapper = tree["/**/mapper"]["ros__parameters"]
    mapper["geo"].update(geo or {})
    mapper["grid"].update(grid)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A small model of a smooth field over the default 60 m workspace, saved."""
    xy = np.random.default_rng(3).uniform(-30.0, 30.0, (150, 2))
    model = make_model(MissionSetup().mapping.replace(num_inducing=20, train_steps=2,
                                                      device="cpu"))
    model.add_data(xy, np.sin(xy[:, 0] / 9.0) - xy[:, 1] / 20.0)
    model.update()
    path = tmp_path_factory.mktemp("model") / "map_state.pt"
    model.save(path)
    return path


def expected_grid(params, resolution=None, extent=None) -> MapGrid:
    setup = MissionSetup.from_file(params)
    return MapGrid(extent or Workspace.from_config(setup.workspace).bounds,
                   resolution or setup.grid.resolution, Workspace.from_config(setup.workspace))


def assert_product(path, model, grid: MapGrid, anchor: GeoReference):
    """The file at ``path`` holds ``model``'s product layers on ``grid``, placed by
    ``anchor``: CRS, north-up transform at the grid's origin, cells where rasterio puts
    them."""
    product = read_map_product(path)
    assert product.crs == anchor.crs and product.vertical_reference == \
        anchor.vertical_reference
    rows, cols = grid.shape
    west, south = grid.origin + anchor.origin
    assert product.transform == Affine(grid.resolution, 0.0, west, 0.0, -grid.resolution,
                                       south + rows * grid.resolution)
    assert list(product.layers) == ["mean", "std", "lengthscale", "sample_density"]
    inside = grid.inside.ravel()
    mean, std = model.predict(grid.points[inside])
    for name, values in [("mean", mean), ("std", std),
                         ("lengthscale", model.lengthscale_map(grid.points[inside]))]:
        layer = product.layers[name].ravel()
        assert np.isnan(layer[~inside]).all()
        np.testing.assert_allclose(layer[inside], values, rtol=1e-5, atol=1e-6, err_msg=name)
    # Every sounding on the grid (its east and north edges included, as np.histogram2d
    # counts them) is counted once, in the cell rasterio finds at its point.
    corner = grid.origin + grid.resolution * np.array([cols, rows])
    on_grid = np.all((model.buffer.x >= grid.origin) & (model.buffer.x <= corner), axis=1)
    assert np.nansum(product.layers["sample_density"]) == on_grid.sum() > 0
    x, y = model.buffer.x[on_grid & np.all(model.buffer.x < corner, axis=1)][0]
    with rasterio.open(path) as dataset:
        row, col = rasterio.transform.rowcol(dataset.transform, x + anchor.origin[0],
                                             y + anchor.origin[1])
        assert dataset.read(4)[row, col] >= 1
    i, j = int((y - grid.origin[1]) // grid.resolution), int((x - grid.origin[0])
                                                              // grid.resolution)
    assert (row, col) == (rows - 1 - i, j)


def test_a_saved_model_exports_in_the_anchor_s_crs(tmp_path, saved_model, capsys):
    params = params_with(tmp_path, LATLON)
    out = tmp_path / "products" / "map.tif"
    assert main(["export", str(saved_model), "-o", str(out), "--params", str(params),
                 "--resolution", "3", "--bounds", "-30", "27", "-30", "30"]) == 0
    anchor = GeoReference.local(47.25, -123.75, "chart datum")
    grid = expected_grid(params, 3.0, (-30.0, 27.0, -30.0, 30.0))
    assert grid.shape == (20, 19)
    assert_product(out, load_model(saved_model), grid, anchor)
    printed = capsys.readouterr().out
    assert f"{out}: 20 × 19 cells of 3 m from 150 samples" in printed
    assert "relative to chart datum" in printed


def test_a_bag_is_remapped_and_exported(tmp_path, survey_bag):
    _, bag = survey_bag
    params = params_with(tmp_path, UTM)
    out = tmp_path / "survey.tif"
    assert main(["export", str(bag), "-o", str(out), "--params", str(params)]) == 0
    setup = MissionSetup.from_file(params)
    model = remap_bag(bag, setup, RemapConfig(truth="none")).model
    assert model.num_samples > 50
    anchor = GeoReference("EPSG:32610", (512_345.5, 5_234_567.25))
    assert_product(out, model, expected_grid(params), anchor)


def test_a_damaged_bag_s_export_warns_with_the_messages_lost(tmp_path, survey_bag, capsys):
    """As the remap of the same bag warns: never a map from part of a bag without a word."""
    _, bag = survey_bag
    damaged = tmp_path / "damaged"
    shutil.copytree(bag, damaged)
    [file] = damaged.glob("*.mcap")
    corrupt_a_chunk(file)
    out = tmp_path / "survey.tif"
    assert main(["export", str(damaged), "-o", str(out), "--params",
                 str(params_with(tmp_path, UTM))]) == 0
    err = capsys.readouterr().err
    assert re.search(r"warning: damaged bag, everything readable was used: \d+ message\(s\) "
                     r"lost \(/", err), err
    assert "corrupt" in err and out.is_file()


def test_a_map_without_an_anchor_is_refused_unless_crs_is_given(tmp_path, saved_model,
                                                               capsys):
    out = tmp_path / "map.tif"
    paper = ["--params", str(default_parameter_file())]  # the POAM paper's: no anchor
    assert main(["export", str(saved_model), "-o", str(out), *paper]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("poam-ros export: the map frame has "
                                                         "no geodetic anchor (geo.anchor: none)")
    assert not out.exists()

    assert main(["export", str(saved_model), "-o", str(out), "--crs", "EPSG:32633",
                 *paper]) == 0
    assert_product(out, load_model(saved_model), expected_grid(default_parameter_file()),
                   GeoReference("EPSG:32633"))


@pytest.mark.parametrize("geo, args, message", [
    (LATLON, ["--crs", "UTM 10N"], "--crs applies to a map frame without an anchor"),
    (None, ["--crs", "EPSG:4326"], "is geographic (degrees)"),
    (None, ["--crs", "UTM 10N", "--resolution", "0"], "resolution must be >= 0.001"),
    ({"anchor": "projected"}, [], "GeoConfig.anchor 'projected' needs crs"),
    (LATLON, ["--bounds", "5", "1", "0", "1"], "extent needs xmin < xmax"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, saved_model, capsys, geo, args,
                                            message):
    params = params_with(tmp_path, geo)
    out = tmp_path / "map.tif"
    assert main(["export", str(saved_model), "-o", str(out), "--params", str(params),
                 *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_a_source_that_is_neither_model_nor_bag_is_refused(tmp_path, capsys):
    (tmp_path / "junk.pt").write_bytes(b"not a model")
    for source, message in [(tmp_path / "missing", "neither a model state file nor a bag"),
                            (tmp_path / "junk.pt", "junk.pt")]:
        assert main(["export", str(source), "-o", str(tmp_path / "m.tif"), "--crs",
                     "UTM 10N", "--params", str(default_parameter_file())]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and message in err, err


def test_remap_writes_the_same_product_beside_its_outputs(tmp_path, survey_bag, capsys):
    """With an anchor, ``poam-ros remap`` writes map.tif, the product ``poam-ros export``
    makes of the model it saved; without one, it writes none."""
    from poam_ros.cli.bags import remap

    _, bag = survey_bag
    params = params_with(tmp_path, UTM)
    out = tmp_path / "remap"
    assert remap([str(bag), "--params", str(params), "--truth", "none", "--out",
                  str(out)]) == 0
    assert "map.tif" in capsys.readouterr().out.splitlines()[-1]
    exported = tmp_path / "exported.tif"
    assert main(["export", str(out / "model.pt"), "-o", str(exported), "--params",
                 str(params)]) == 0
    remapped, again = read_map_product(out / "map.tif"), read_map_product(exported)
    assert (remapped.crs, remapped.transform) == (again.crs, again.transform)
    for name, layer in again.layers.items():
        np.testing.assert_array_equal(remapped.layers[name], layer, err_msg=name)
    assert_product(out / "map.tif", load_model(out / "model.pt"), expected_grid(params),
                   GeoReference("EPSG:32610", (512_345.5, 5_234_567.25)))

    plain = tmp_path / "plain"
    assert remap([str(bag), "--params", str(small_params(tmp_path)), "--truth", "none",
                  "--out", str(plain)]) == 0
    assert (plain / "model.pt").is_file() and not (plain / "map.tif").exists()
