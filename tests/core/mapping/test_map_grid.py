"""The map grid: cell geometry, the workspace mask and the layers predicted on it."""

import numpy as np
import pytest

from poam_ros.mapping.map_grid import MapGrid, MapGridConfig, predict_map
from poam_ros.models import MappingConfig, make_model
from poam_ros.params import ConfigError
from poam_ros.workspace import Workspace


def test_cells_tile_the_extent_from_its_south_west_corner():
    grid = MapGrid((-3.0, 3.0, 0.0, 2.0), 1.0)
    assert grid.shape == (2, 6)  # rows along y, columns along x
    np.testing.assert_allclose(grid.x, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    np.testing.assert_allclose(grid.y, [0.5, 1.5])
    np.testing.assert_allclose(grid.origin, [-3.0, 0.0])
    x, y = grid.coordinates()
    np.testing.assert_allclose(x[1], grid.x) and np.testing.assert_allclose(y[:, 0], grid.y)
    np.testing.assert_allclose(grid.points[7], [-1.5, 1.5])  # row-major: row 1, column 1
    assert grid.inside.all()


def test_an_extent_that_is_no_multiple_of_the_resolution_is_covered():
    grid = MapGrid((0.0, 2.5, 0.0, 1.0), 1.0)
    assert grid.shape == (1, 3) and grid.x[-1] + 0.5 >= 2.5


def test_the_mask_follows_the_free_area():
    workspace = Workspace.from_vertices([0, 0, 4, 0, 4, 4, 0, 4], [[1, 1, 3, 1, 3, 3, 1, 3]])
    grid = MapGrid.from_config(MapGridConfig(resolution=1.0), workspace)
    assert grid.shape == (4, 4)
    assert not grid.inside[1:3, 1:3].any() and grid.inside[0].all() and grid.inside[3].all()
    unmasked = MapGrid.from_config(MapGridConfig(resolution=1.0, clip_to_workspace=False),
                                   workspace)
    assert unmasked.inside.all()


def test_an_explicit_extent_overrides_the_workspace_bounds():
    workspace = Workspace.from_extent(-30, 30, -30, 30)
    grid = MapGrid.from_config(MapGridConfig(resolution=2.0, extent=[0, 10, 0, 4]), workspace)
    assert grid.shape == (2, 5)


@pytest.mark.parametrize("extent", [[0.0, 1.0, 2.0], [1.0, 0.0, 0.0, 1.0], [0, 1, 0, float("nan")]])
def test_bad_extents_are_refused(extent):
    with pytest.raises(ConfigError, match="extent"):
        MapGridConfig(extent=extent)


def test_absurd_grids_are_refused():
    with pytest.raises(ValueError, match="coarser resolution"):
        MapGrid((0.0, 1e4, 0.0, 1e4), 1e-3)


def test_layers_are_the_model_predictions_with_nan_outside():
    rng = np.random.default_rng(0)
    model = make_model(MappingConfig(num_inducing=30, train_steps=1, device="cpu"))
    x = rng.uniform(0.0, 4.0, (200, 2))
    model.add_data(x, np.sin(x[:, 0]) + x[:, 1])
    model.update()
    workspace = Workspace.from_vertices([0, 0, 4, 0, 4, 4, 0, 4], [[1, 1, 3, 1, 3, 3, 1, 3]])
    grid = MapGrid.from_config(MapGridConfig(resolution=1.0), workspace)
    layers = predict_map(model, grid, include_noise=True)
    inside = grid.inside
    mean, std = model.predict(grid.points[inside.ravel()], include_noise=True)
    # Predicted in one call with the inducing inputs: equal up to the last bits of BLAS.
    np.testing.assert_allclose(layers.mean[inside], mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(layers.std[inside], std, rtol=1e-12)
    np.testing.assert_allclose(layers.lengthscale[inside],
                               model.lengthscale_map(grid.points[inside.ravel()]), rtol=1e-12)
    assert np.isnan(layers.mean[~inside]).all() and np.isnan(layers.std[~inside]).all()
    np.testing.assert_array_equal(layers.inducing, model.inducing_inputs)
    np.testing.assert_allclose(layers.inducing_mean, model.predict(model.inducing_inputs)[0],
                               rtol=1e-12, atol=1e-12)
    assert predict_map(model, grid, lengthscale=False).lengthscale is None
