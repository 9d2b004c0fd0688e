"""Multibeam swath against closed-form hits on flat and sloping seafloors."""

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim.multibeam import MultibeamConfig, MultibeamSonar
from poam_ros.sim.terrain import Terrain


def sonar(terrain, plane_z=0.0, seed=0, **config):
    return MultibeamSonar(terrain, MultibeamConfig(**config), plane_z,
                          np.random.default_rng(seed))


def test_flat_seafloor_closed_form():
    flat = Terrain(np.full((8, 8), -50.0), (-100.0, 100.0, -100.0, 100.0))
    swath = sonar(flat, num_beams=5, swath_angle=1.6, noise_std=0.0).ping((10.0, 20.0, 0.3))
    phi = np.linspace(-0.8, 0.8, 5)
    np.testing.assert_allclose(swath.beam_angles, phi)
    assert swath.valid.all()
    np.testing.assert_allclose(swath.ranges, 50.0 / np.cos(phi), rtol=1e-9)
    expected_sensor = np.column_stack((np.zeros(5), 50.0 * np.tan(phi), np.full(5, -50.0)))
    np.testing.assert_allclose(swath.points_sensor, expected_sensor, atol=1e-6)
    # Port (+y in the sensor frame) is to the left of the heading yaw = 0.3.
    left = np.array([-math.sin(0.3), math.cos(0.3)])
    expected_xy = np.array([10.0, 20.0]) + np.outer(50.0 * np.tan(phi), left)
    np.testing.assert_allclose(swath.points_world[:, :2], expected_xy, atol=1e-6)
    np.testing.assert_allclose(swath.points_world[:, 2], -50.0, atol=1e-6)


def test_sloping_seafloor_closed_form():
    # z = 0.2 x - 40 sampled at cell centres; bilinear reproduces the plane inside them.
    centres = (np.arange(40) + 0.5) * 5.0 - 100.0
    slope = Terrain(np.tile(0.2 * centres - 40.0, (40, 1)), (-100.0, 100.0, -100.0, 100.0))
    # Heading north, port is west (-x): z0 - r cos(phi) = 0.2 (x0 - r sin(phi)) - 40.
    swath = sonar(slope, num_beams=7, swath_angle=1.2, noise_std=0.0).ping(
        (5.0, 0.0, math.pi / 2))
    phi = swath.beam_angles
    expected = (0.0 - 0.2 * 5.0 + 40.0) / (np.cos(phi) - 0.2 * np.sin(phi))
    np.testing.assert_allclose(swath.ranges, expected, rtol=1e-9)
    world = swath.points_world
    np.testing.assert_allclose(world[:, 2], 0.2 * world[:, 0] - 40.0, atol=1e-6)


def test_beams_leaving_the_terrain_return_nothing():
    flat = Terrain(np.full((4, 4), -50.0), (-40.0, 40.0, -40.0, 40.0))
    swath = sonar(flat, num_beams=3, swath_angle=2.0, noise_std=0.0).ping((0.0, 0.0, 0.0))
    np.testing.assert_array_equal(swath.valid, [False, True, False])  # 50 tan(1) > 40
    assert np.isnan(swath.points_world[[0, 2]]).all()
    assert np.isnan(swath.points_sensor[[0, 2]]).all()
    short = sonar(flat, num_beams=1, max_range=49.0).ping((0.0, 0.0, 0.0))
    assert not short.valid[0]


def test_a_sensor_off_the_terrain_hears_nothing_and_the_noise_stream_goes_on():
    flat = Terrain(np.full((4, 4), -50.0), (-40.0, 40.0, -40.0, 40.0))
    beyond, over = sonar(flat, seed=3, num_beams=5), sonar(flat, seed=3, num_beams=5)
    off = beyond.ping((40.5, 0.0, 0.0))
    assert not off.valid.any() and np.isnan(off.ranges).all()
    assert np.isnan(off.points_sensor).all() and np.isnan(off.points_world).all()
    over.ping((0.0, 0.0, 0.0))  # one ping's noise, as the ping off the terrain drew
    np.testing.assert_array_equal(beyond.ping((0.0, 0.0, 0.0)).ranges,
                                  over.ping((0.0, 0.0, 0.0)).ranges)


def test_noise_is_seeded_per_beam():
    flat = Terrain(np.full((4, 4), -50.0), (-400.0, 400.0, -400.0, 400.0))
    first = sonar(flat, seed=4, num_beams=2000, swath_angle=1.0).ping((0.0, 0.0, 0.0))
    again = sonar(flat, seed=4, num_beams=2000, swath_angle=1.0).ping((0.0, 0.0, 0.0))
    np.testing.assert_array_equal(first.ranges, again.ranges)
    error = first.ranges - 50.0 / np.cos(first.beam_angles)
    assert abs(error.std() - 1.0) < 0.05


def test_bad_setup():
    flat = Terrain(np.zeros((4, 4)), (-1.0, 1.0, -1.0, 1.0))
    with pytest.raises(ValueError, match="plane_z=0 must lie above the highest terrain"):
        sonar(flat, plane_z=0.0)
    with pytest.raises(ConfigError, match="swath_angle must be <= 3"):
        MultibeamConfig(swath_angle=3.5)
