"""Altitude and depth modes: the commanded clearance held over a sloped seabed, never above
the sea surface; the sonar's limits in metres (REP-117)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim.depth_keeping import HeightKeeper
from poam_ros.sim.simulator import SurveySimulator
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.terrain import Terrain
from poam_ros.sim.vehicle import VehicleConfig

EXTENT = (0.0, 2000.0, 0.0, 1000.0)


def slope(low=-400.0, high=-40.0, shape=(11, 21)):
    """A seabed rising linearly eastwards from ``low`` to ``high`` metres (cell centres)."""
    rows, cols = shape
    return Terrain(np.tile(np.linspace(low, high, cols), (rows, 1)), EXTENT, "slope")


def survey(terrain, **vehicle):
    config = VehicleConfig(max_speed=2.0, goal_radius=1.0, speed_gain=1.0, **vehicle)
    sim = SurveySimulator(terrain, config, SonarConfig(noise_std=0.0, rate=1.0), seed=0,
                          start_pose=(100.0, 500.0, 0.0))
    return sim, sim.follow([[1900.0, 500.0], [1900.0, 800.0]])


def test_altitude_mode_holds_the_altitude_over_a_slope():
    terrain = slope()
    sim, log = survey(terrain, vertical_mode="altitude", altitude=25.0)
    ground = terrain.elevation(log.poses[:, :2])
    np.testing.assert_allclose(log.heights - ground, 25.0, atol=1e-9)
    assert np.ptp(log.heights) > 300.0  # it climbed with the seabed
    # Soundings straight down read the altitude (noise off), and their elevations the seabed.
    np.testing.assert_allclose(log.ranges, 25.0, atol=1e-6)
    np.testing.assert_allclose(log.elevations, log.true_elevations, atol=1e-6)
    assert sim.z == pytest.approx(terrain.elevation([sim.pose[:2]])[0] + 25.0)


def test_altitude_mode_stays_below_the_sea_surface():
    terrain = slope(low=-100.0, high=-5.0)  # shallower than the altitude in the east
    _, log = survey(terrain, vertical_mode="altitude", altitude=20.0)
    ground = terrain.elevation(log.poses[:, :2])
    np.testing.assert_allclose(log.heights, np.minimum(ground + 20.0, 0.0), atol=1e-9)
    assert log.heights.max() == 0.0
    # Where the seabed is within min_range (1 m) of the surface the sonar reads -inf.
    shallow = terrain.elevation(log.positions) > -1.0
    assert not shallow.any() or np.all(log.ranges[shallow] == -np.inf)


def test_over_land_the_altitude_is_above_the_terrain():
    land = Terrain(np.tile(np.linspace(10.0, 200.0, 21), (11, 1)), EXTENT)
    _, log = survey(land, vertical_mode="altitude", altitude=30.0)
    np.testing.assert_allclose(log.heights - land.elevation(log.poses[:, :2]), 30.0,
                               atol=1e-9)


def test_depth_mode_holds_the_depth():
    terrain = slope()
    _, log = survey(terrain, vertical_mode="depth", depth=15.0)
    np.testing.assert_allclose(log.heights, -15.0)
    np.testing.assert_allclose(log.ranges, -15.0 - log.true_elevations, atol=1e-9)


def test_depth_below_the_seabed_is_refused():
    with pytest.raises(ConfigError, match="depth=50 m puts the vehicle at or below the "
                                          "highest terrain"):
        HeightKeeper(VehicleConfig(vertical_mode="depth", depth=50.0), slope())


def test_altitude_outside_the_sonar_limits_is_refused():
    with pytest.raises(ConfigError, match=r"altitude=0.5 m lies outside the sonar's \[1, 2000\]"):
        SurveySimulator(slope(), VehicleConfig(vertical_mode="altitude", altitude=0.5),
                        start_pose=(100.0, 500.0, 0.0))


def test_the_plane_mode_is_the_default_and_unchanged():
    config = VehicleConfig()
    assert (config.vertical_mode, config.turning_radius) == ("plane", 0.0)
    keeper = HeightKeeper(config, slope())
    assert keeper.constant == 300.0
    np.testing.assert_array_equal(keeper.heights([[0.0, 0.0], [5.0, 5.0]]), [300.0, 300.0])


def test_sonar_ranges_beyond_the_limits_read_inf():
    # REP-117: a true range beyond max_range is +inf, below min_range -inf; in metres.
    from poam_ros.sim.sonar import SingleBeamSonar

    sonar = SingleBeamSonar(slope(), SonarConfig(noise_std=0.0, min_range=10.0,
                                                 max_range=300.0), None,
                            np.random.default_rng(0))
    points = np.array([[1000.0, 500.0]] * 3)
    ground = slope().elevation(points[:1])[0]
    soundings = sonar.measure(points, np.array([ground + 5.0, ground + 100.0,
                                                ground + 400.0]))
    assert soundings.range[0] == -math.inf and soundings.range[2] == math.inf
    assert soundings.range[1] == pytest.approx(100.0)
    assert np.isnan(soundings.elevation[[0, 2]]).all()
