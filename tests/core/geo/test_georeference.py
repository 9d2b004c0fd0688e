"""The map frame's anchor: metres against the ellipsoid's radii, millimetre round trips, and
one clear error per bad value."""

import math

import numpy as np
import pytest
from geo_data import meridian_radius, prime_vertical_radius

from poam_ros.geo.georeference import GeoConfig, GeoError, GeoReference, projected_crs
from poam_ros.params import ConfigError

LATITUDES = (-75.0, -33.9, 0.0, 47.5, 70.0, 84.0, 89.5)


def _anchors(latitude: float, longitude: float = 10.3):
    """A local anchor and a UTM anchor (the zone of ``longitude``) at the same point."""
    zone = int((longitude + 180) // 6) + 1
    utm = f"UTM {zone}{'N' if latitude >= 0 else 'S'}"
    return [GeoReference.local(latitude, longitude),
            GeoReference.at_lonlat(utm, latitude, longitude)]


@pytest.mark.parametrize("latitude", LATITUDES)
def test_map_lonlat_map_round_trip_within_a_millimetre(latitude):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-20_000, 20_000, size=(2, 500))  # a 40 km survey area
    for anchor in _anchors(latitude):
        lon, lat = anchor.to_lonlat(x, y)
        x_back, y_back = anchor.to_map(lon, lat)
        assert np.abs(np.hypot(x_back - x, y_back - y)).max() < 1e-3, anchor


@pytest.mark.parametrize("latitude", LATITUDES)
def test_lonlat_map_lonlat_round_trip_within_a_millimetre(latitude):
    rng = np.random.default_rng(1)
    lon = 10.3 + rng.uniform(-0.1, 0.1, 300)
    lat = np.clip(latitude + rng.uniform(-0.1, 0.1, 300), -89.99, 89.99)
    for anchor in _anchors(latitude):
        lon_back, lat_back = anchor.to_lonlat(*anchor.to_map(lon, lat))
        north = np.radians(lat_back - lat) * meridian_radius(latitude)
        east = np.radians(lon_back - lon) * prime_vertical_radius(latitude) * np.cos(
            np.radians(lat))
        assert np.hypot(north, east).max() < 1e-3, anchor


@pytest.mark.parametrize("latitude", (0.0, 47.5, 70.0, 84.0))
def test_local_anchor_metres_are_the_ellipsoid_arcs(latitude):
    # 0.001° north along the meridian: M(φ) Δφ (φ at the middle); 0.001° east: N cos φ Δλ,
    # to a relative 1e-8 (the transverse Mercator's (Δλ cos φ)² / 6 and the arc's curvature).
    anchor = GeoReference.local(latitude, -123.0)
    step = math.radians(0.001)
    x, y = anchor.to_map(-123.0, latitude + 0.001)
    assert x == pytest.approx(0.0, abs=1e-9)
    assert y == pytest.approx(meridian_radius(latitude + 0.0005) * step, rel=1e-8)
    x, _ = anchor.to_map(-123.0 + 0.001, latitude)
    expected = prime_vertical_radius(latitude) * math.cos(math.radians(latitude)) * step
    assert x == pytest.approx(expected, rel=1e-8)
    assert anchor.to_map(-123.0, latitude) == (0.0, 0.0)


def test_utm_zone_names_and_their_false_origins():
    north = GeoReference.at_lonlat("UTM 10N", 0.0, -123.0)  # zone 10's central meridian
    assert north.crs == projected_crs("EPSG:32610")
    np.testing.assert_allclose(north.origin, (500_000.0, 0.0), atol=1e-6)
    south = GeoReference.at_lonlat("utm:10s", 0.0, -123.0)
    assert south.crs == projected_crs("EPSG:32710")
    np.testing.assert_allclose(south.origin, (500_000.0, 10_000_000.0), atol=1e-6)
    # A projected anchor shifts the CRS's coordinates by the origin and nothing else.
    shifted = GeoReference("EPSG:32610", (400_000.0, 5_000_000.0))
    x, y = shifted.to_map(-123.0, 0.0)
    assert (x, y) == pytest.approx((100_000.0, -5_000_000.0), abs=1e-6)


def test_vectorised_shapes_are_kept():
    anchor = GeoReference.local(47.5, -123.5)
    lon = np.full((3, 4), -123.5)
    x, y = anchor.to_map(lon, np.linspace(47.4, 47.6, 12).reshape(3, 4))
    assert x.shape == y.shape == (3, 4)
    lon_back, lat_back = anchor.to_lonlat(x, y)
    assert lon_back.shape == (3, 4)


@pytest.mark.parametrize("lon, lat, named", [(0.0, 91.0, "latitude 91.0"),
                                             (0.0, -90.5, "latitude -90.5"),
                                             (180.5, 0.0, "longitude 180.5"),
                                             (float("nan"), 0.0, "longitude nan")])
def test_out_of_range_coordinates_name_the_value(lon, lat, named):
    anchor = GeoReference.local(47.5, -123.5)
    with pytest.raises(GeoError, match=f"{named} is out of range"):
        anchor.to_map([0.0, lon], [0.0, lat])
    with pytest.raises(GeoError, match=f"map origin: {named}"):
        GeoReference.local(lat, lon)


@pytest.mark.parametrize("crs, message", [
    ("EPSG:999999", "'EPSG:999999' is not known to pyproj"),
    ("not a crs", "'not a crs' is not known to pyproj"),
    ("EPSG:4326", r"'EPSG:4326' \(WGS 84\) is geographic \(degrees\)"),
    ("EPSG:2227", r"has axes in \['US survey foot', 'US survey foot'\]"),
    ("UTM 61N", "UTM zones run from 1 to 60, got 61"),
])
def test_bad_crs_is_named(crs, message):
    with pytest.raises(GeoError, match=message):
        GeoReference(crs)


def test_config_builds_each_anchor():
    assert GeoReference.from_config(GeoConfig()) is None
    local = GeoReference.from_config(GeoConfig(anchor="latlon", origin_latitude=47.5,
                                               origin_longitude=-123.5))
    assert local.to_map(-123.5, 47.5) == (0.0, 0.0) and "transverse Mercator" in local.crs.name
    utm = GeoReference.from_config(GeoConfig(anchor="latlon", origin_latitude=47.5,
                                             origin_longitude=-123.5, crs="UTM 10N",
                                             vertical_reference="chart datum"))
    assert utm.crs.to_epsg() == 32610 and utm.vertical_reference == "chart datum"
    assert utm.to_map(-123.5, 47.5) == pytest.approx((0.0, 0.0), abs=1e-6)
    projected = GeoReference.from_config(GeoConfig(anchor="projected", crs="EPSG:32610",
                                                   origin_easting=462_000.0,
                                                   origin_northing=5_260_000.0))
    np.testing.assert_array_equal(projected.origin, (462_000.0, 5_260_000.0))


@pytest.mark.parametrize("values, message", [
    ({"anchor": "latlon", "origin_latitude": 91.0}, "origin_latitude must be <= 90.0"),
    ({"anchor": "latlon", "origin_longitude": -181.0}, "origin_longitude must be >= -180.0"),
    ({"anchor": "projected"}, "anchor 'projected' needs crs"),
    ({"anchor": "latlon", "crs": "EPSG:4326"}, r"GeoConfig.crs: CRS 'EPSG:4326' .*geographic"),
    ({"anchor": "projected", "crs": "EPSG:999999"}, "GeoConfig.crs: CRS 'EPSG:999999' is not"),
    ({"origin_latitude": 47.5}, "origin_latitude apply to an anchor"),
    ({"anchor": "latlon", "vertical_reference": " "}, "vertical_reference must not be empty"),
    ({"anchor": "nowhere"}, "anchor must be one of"),
])
def test_config_rejects_bad_values_by_name(values, message):
    with pytest.raises(ConfigError, match=message):
        GeoConfig.from_dict(values)
