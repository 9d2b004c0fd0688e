"""A km-scale survey, ROS-free (:mod:`poam_ros.benchmark.real_scale` sized for CI): a
synthetic 1″ GeoTIFF tile of depths in metres written by the test, a 5 km × 5 km survey box
placed through the map's geodetic anchor, an AUV holding 50 m altitude at 2 m/s with a 20 m
turning radius, 1,500 soundings, M = 40 and 3 training steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.benchmark.real_scale import real_scale_setup, write_synthetic_tile
from poam_ros.mission import Mission


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tile = write_synthetic_tile(tmp_path_factory.mktemp("tile") / "synthetic_1arcsec.tif")
    setup = real_scale_setup(tile, samples=1500, num_inducing=40, train_steps=3)
    setup.mission = setup.mission.replace(eval_grid=30)
    return Mission(setup).run()


def test_the_box_is_placed_at_its_true_size(result):
    xmin, xmax, ymin, ymax = result.terrain.extent
    assert xmax - xmin == pytest.approx(5000.0, rel=2e-3)
    assert ymax - ymin == pytest.approx(5000.0, rel=2e-3)
    dx, dy = result.terrain.cell_size
    assert 20.0 < dx < 22.0 and 30.0 < dy < 32.0  # 1″ cells at 47.5° N
    assert -1700 < result.terrain.min_elevation < result.terrain.max_elevation < -1300


def test_the_survey_maps_the_seabed_in_metres(result):
    assert result.final.num_samples >= 1500
    # 0.5 m sonar noise: the samples are the seabed in metres, not squeezed or scaled.
    residual = result.samples_y - result.terrain.elevation(result.samples_x)
    assert np.std(residual) == pytest.approx(0.5, rel=0.2)
    assert result.final.smse < 0.2            # the ridges are learned
    assert result.final.smse < result.records[0].smse
    rmse = math.sqrt(np.mean((result.model.predict(result.eval_points)[0]
                              - result.truth) ** 2))
    assert rmse < 0.45 * np.std(result.truth)
