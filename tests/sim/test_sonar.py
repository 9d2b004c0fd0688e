"""Single-beam sonar: range geometry, seeded noise and the plane/range checks."""

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim.sonar import SingleBeamSonar, SonarConfig
from poam_ros.sim.terrain import Terrain, TerrainError

RAMP = Terrain(np.array([[0.0, 100.0], [0.0, 100.0]]), (0.0, 2.0, 0.0, 2.0))


def sonar(seed=0, **config):
    return SingleBeamSonar(RAMP, SonarConfig(**config), 300.0, np.random.default_rng(seed))


def test_noise_free_sounding_is_the_range_to_the_terrain_below():
    soundings = sonar(noise_std=0.0).measure([[0.5, 1.0], [1.0, 1.0], [1.5, 1.0]])
    np.testing.assert_allclose(soundings.true_elevation, [0.0, 50.0, 100.0])
    np.testing.assert_allclose(soundings.range, [300.0, 250.0, 200.0])
    np.testing.assert_allclose(soundings.elevation, soundings.true_elevation)


def test_noisy_elevation_and_range_share_one_draw():
    soundings = sonar().measure(np.full((2000, 2), 1.0))
    np.testing.assert_allclose(soundings.elevation + soundings.range, 300.0)
    noise = soundings.elevation - soundings.true_elevation
    assert abs(noise.std() - 1.0) < 0.05 and abs(noise.mean()) < 0.05


def test_seed_makes_noise_reproducible():
    points = np.full((10, 2), 1.0)
    np.testing.assert_array_equal(sonar(7).measure(points).range, sonar(7).measure(points).range)
    assert not np.allclose(sonar(7).measure(points).range, sonar(8).measure(points).range)


def test_plane_must_clear_the_terrain_by_min_range():
    with pytest.raises(ConfigError, match=r"plane_z=100 is only 0 above the highest terrain "
                                          r"\(100\).*min_range=1"):
        SingleBeamSonar(RAMP, SonarConfig(), 100.0, np.random.default_rng(0))


def test_terrain_must_lie_within_max_range():
    with pytest.raises(ConfigError, match=r"lowest terrain \(0\) is 300 below .*"
                                          r"max_range=250"):
        sonar(max_range=250.0)


def test_range_limits_are_ordered():
    with pytest.raises(ConfigError, match=r"max_range \(1\) must exceed min_range \(5\)"):
        SonarConfig(min_range=5.0, max_range=1.0)


def test_a_sounding_off_the_terrain_returns_nothing_and_leaves_the_others_as_they_were():
    points = np.array([[0.5, 1.0], [3.0, 1.0], [1.5, -0.1], [1.5, 1.0]])
    soundings = sonar(4).measure(points)
    off = np.array([False, True, True, False])
    assert np.isposinf(soundings.range[off]).all()
    assert np.isnan(soundings.elevation[off]).all()
    assert np.isnan(soundings.true_elevation[off]).all()
    # The noise of every sounding is drawn in order: those over the terrain carry the noise
    # a sonar over a larger terrain gives them.
    wide = Terrain(np.zeros((2, 2)), (-1.0, 4.0, -1.0, 4.0))
    wider = SingleBeamSonar(wide, SonarConfig(), 300.0, np.random.default_rng(4)).measure(points)
    noise = soundings.elevation - soundings.true_elevation
    np.testing.assert_allclose(noise[~off], (wider.elevation - wider.true_elevation)[~off],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(soundings.elevation + soundings.range, [300, np.nan, np.nan, 300])


def test_positions_of_the_wrong_shape_are_an_error():
    with pytest.raises(TerrainError, match=r"\(N, 2\)"):
        sonar().measure([1.0, 2.0, 3.0])
