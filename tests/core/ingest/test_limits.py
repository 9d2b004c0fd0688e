"""Declared plausibility limits of every scalar input: each limit is a typed, documented
parameter (``limits.*``), and a value outside it is dropped under its own counted reason
(depth sensor: ``depth_out_of_limits``; channels: ``value_out_of_limits``; IMU:
``imu_rate_out_of_limits``; a fix's covariance: ``fix_implausible_covariance``; a fix's
latitude and longitude: the hard ±90°, ±180°, ``fix_out_of_range``), while the values a sea
and a vehicle give pass."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from poam_ros import messages as msg
from poam_ros.attitude import GRAVITY, quaternion_from_rpy
from poam_ros.geo.georeference import GeoReference
from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.config import LimitsConfig
from poam_ros.params import ConfigError

ANCHOR = GeoReference.local(59.0, 10.0)
SEA = 1025.0 * GRAVITY  # Pa per metre of sea water


def test_every_limit_is_a_typed_documented_parameter_with_its_unit():
    specs = {spec.name: spec for spec in IngestConfig.specs() if spec.name.startswith("limits.")}
    units = {"depth": "m", "pressure": "Pa", "temperature": "degC", "cloud": None}
    for name, unit in units.items():
        for end in ("min", "max"):
            spec = specs[f"limits.{name}_{end}"]
            assert isinstance(spec.default, float) and spec.unit == unit and spec.doc
    assert specs["limits.fix_max_covariance"].unit == "m^2"
    assert specs["limits.attitude_rate_max"].unit == "rad/s"
    defaults = LimitsConfig()
    assert defaults.pressure_min == 0.8e5 and defaults.pressure_max == 1.2e8
    assert (defaults.temperature_min, defaults.temperature_max) == (-3.0, 40.0)
    with pytest.raises(ConfigError, match="temperature_max"):
        IngestConfig.from_dict({"limits.temperature_min": 50.0})
    assert IngestConfig.from_dict({"limits": {"depth_max": 500.0}}).limits.depth_max == 500.0


def depth_sensor(config=IngestConfig(depth_from_pressure=True)):
    return Ingest(config)


@pytest.mark.parametrize("pressure", [-1.0, 0.0, 50000.0, 2e8, 1e15])
def test_a_pressure_whose_depth_is_no_sea_is_dropped(pressure):
    """A negative absolute pressure would read -10 m (above the surface), an absurd one
    thousands of kilometres down: each is counted, and the depth series stays empty."""
    ingest = depth_sensor()
    assert not ingest.add_pressure(1.0, pressure, 0.0)
    assert ingest.drops.counts == {ig.DEPTH_OUT_OF_LIMITS: 1}
    assert not len(ingest.attitude_depth.depth)


@pytest.mark.parametrize("depth", [-2.0, 0.0, 100.0, 10935.0])
def test_a_pressure_of_a_real_depth_is_kept_absolute_or_gauge(depth):
    absolute, gauge = depth_sensor(), depth_sensor(IngestConfig(depth_from_pressure=True,
                                                                atmospheric_pressure=0.0))
    assert absolute.add_pressure(1.0, SEA * depth + 101325.0, 0.0)
    assert gauge.add_pressure(1.0, SEA * depth, 0.0)
    assert not absolute.drops.counts and not gauge.drops.counts


def test_the_depth_limits_are_the_users_to_narrow():
    ingest = depth_sensor(IngestConfig(depth_from_pressure=True).replace(
        **{"limits.depth_max": 200.0}))
    assert ingest.add_pressure(1.0, SEA * 150.0 + 101325.0, 0.0)
    assert not ingest.add_pressure(2.0, SEA * 250.0 + 101325.0, 0.0)
    assert ingest.drops.counts == {ig.DEPTH_OUT_OF_LIMITS: 1}


CHANNELS = IngestConfig(channels=["temperature", "pressure", "turbidity"],
                        channel_types=["temperature", "fluid_pressure", "cloud"])


@pytest.mark.parametrize("channel, good, bad", [
    ("temperature", [-1.9, 4.0, 35.0], [-10.0, 60.0, 300.0]),
    ("pressure", [1.0e5, 5e7], [-1.0, 0.0, 1e9]),
    ("turbidity", [0.0, 12.5, -3.0], [1e12, -3e38]),
])
def test_a_channel_reading_outside_its_types_limits_is_dropped(channel, good, bad):
    ingest = Ingest(CHANNELS)
    for t, value in enumerate(good + bad):
        ingest.add_reading(float(t), channel, value, 0.0)
    assert ingest.drops.counts == {ig.VALUE_OUT_OF_LIMITS: len(bad)}
    assert ingest.channel_waiting(channel) == len(good)  # waiting for a pose


def imu_ingest():
    return Ingest(IngestConfig(imu_attitude=True))


def test_an_orientation_turning_faster_than_the_rate_limit_is_dropped():
    """At 10 Hz: a 1.5 rad/s turn is kept; a quaternion flipped by 180° in roll (a glitch)
    is dropped, and the next true orientation is judged against the last kept one."""
    ingest = imu_ingest()
    for i in range(5):
        assert ingest.add_attitude(i / 10, quaternion_from_rpy(0.0, 0.0, 0.15 * i), 0.0)
    assert not ingest.add_attitude(0.5, quaternion_from_rpy(math.pi, 0.0, 0.6), 0.0)
    assert ingest.add_attitude(0.6, quaternion_from_rpy(0.0, 0.0, 0.75), 0.0)
    assert ingest.drops.counts == {ig.IMU_RATE_OUT_OF_LIMITS: 1}


def test_after_a_gap_a_large_turn_is_taken_again():
    ingest = imu_ingest()
    assert ingest.add_attitude(0.0, quaternion_from_rpy(0.0, 0.0, 0.0), 0.0)
    assert ingest.add_attitude(2.0, quaternion_from_rpy(0.0, 0.0, 3.0), 0.0)  # 1.5 rad/s
    assert not ingest.drops.counts


def navsatfix(t, latitude, longitude, east=1.0, north=1.0, kind=2):
    """A NavSatFix-like message with a diagonal ENU covariance of ``kind``."""
    sec, nanosec = divmod(round(t * 1e9), 1_000_000_000)
    return SimpleNamespace(
        header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec)),
        latitude=latitude, longitude=longitude, status=SimpleNamespace(status=0),
        position_covariance=[east, 0.0, 0.0, 0.0, north, 0.0, 0.0, 0.0, 1.0],
        position_covariance_type=kind)


@pytest.mark.parametrize("east, north", [(-1.0, 1.0), (1.0, -4.0), (math.nan, 1.0),
                                         (1.0, math.nan), (math.inf, 1.0), (1.0, 4e6)])
def test_a_fix_with_an_implausible_covariance_is_dropped(east, north):
    """A negative, non-finite or absurd variance (no fix's statement) is refused before it
    could widen the fix's outlier gate; a NavSatFix's negative variance no longer raises."""
    lon, lat = ANCHOR.to_lonlat(0.0, 0.0)
    t, latitude, longitude, status, std = msg.navsatfix_to_fix(
        navsatfix(5.0, float(lat), float(lon), east, north))
    ingest = Ingest(IngestConfig(), georeference=ANCHOR)
    assert not ingest.add_fix(t, latitude, longitude, 0.0, status, std)
    assert ingest.drops.counts == {ig.FIX_IMPLAUSIBLE_COVARIANCE: 1}


def test_a_fix_with_a_plausible_or_unknown_covariance_waits_for_its_pose():
    lon, lat = ANCHOR.to_lonlat(0.0, 0.0)
    ingest = Ingest(IngestConfig(), georeference=ANCHOR)
    for t, kind in ((5.0, 2), (6.0, 0)):  # a 30 m std, then an unknown covariance
        t, latitude, longitude, status, std = msg.navsatfix_to_fix(
            navsatfix(t, float(lat), float(lon), 25.0, 900.0, kind))
        assert ingest.add_fix(t, latitude, longitude, 0.0, status, std)
    assert not ingest.drops.counts


@pytest.mark.parametrize("latitude, longitude", [(90.5, 10.0), (-91.0, 10.0), (59.0, 180.5),
                                                 (59.0, -200.0)])
def test_latitude_and_longitude_beyond_their_definition_are_dropped(latitude, longitude):
    ingest = Ingest(IngestConfig(), georeference=ANCHOR)
    assert not ingest.add_fix(5.0, latitude, longitude, 0.0)
    assert ingest.drops.counts == {ig.FIX_OUT_OF_RANGE: 1}
