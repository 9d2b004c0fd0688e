"""The simulated bottom-water temperature: its closed form, its sensor and its readings among
the simulated AUV's events."""

import math

import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.sim import (
    Odom,
    Reading,
    SimulatedAuv,
    Sounding,
    SurveySimulator,
    TemperatureSensor,
    Terrain,
    WaterTemperature,
    WaterTemperatureConfig,
    default_terrain,
)

# Cell centres at x, y = ±5: between them the bilinear surface is h(x, y) = -150 + 10 x.
RAMP = Terrain([[-200.0, -100.0], [-200.0, -100.0]], (-10.0, 10.0, -10.0, 10.0))
CONFIG = WaterTemperatureConfig(surface_temperature=10.0, deep_temperature=4.0,
                                thermocline_elevation=-150.0, thermocline_thickness=50.0,
                                anomaly_amplitude=2.0, anomaly_center=[0.0, 0.0],
                                anomaly_radius=2.0)


def test_the_field_is_the_thermocline_plus_the_anomaly():
    field = WaterTemperature(RAMP, CONFIG)
    # On the thermocline (h = z_c) under the anomaly's peak: the layers' mean plus A.
    assert field.temperature([[0.0, 0.0]])[0] == pytest.approx(7.0 + 2.0, abs=1e-12)
    # h = -100 and -200: z_c ± w, so tanh(±1); the anomaly is 2 exp(-25 / 8) at 5 m.
    anomaly = 2.0 * math.exp(-25.0 / 8.0)
    np.testing.assert_allclose(
        field.temperature([[5.0, 0.0], [-5.0, 0.0], [0.0, 5.0]]),
        [4.0 + 3.0 * (1.0 + math.tanh(1.0)) + anomaly,
         4.0 + 3.0 * (1.0 - math.tanh(1.0)) + anomaly, 7.0 + anomaly], rtol=0, atol=1e-12)


def test_a_bad_anomaly_centre_is_refused():
    with pytest.raises(ConfigError, match="anomaly_center"):
        WaterTemperatureConfig(anomaly_center=[1.0])


def test_the_sensor_reads_the_field_with_its_noise_and_nothing_off_the_terrain():
    field = WaterTemperature(RAMP, CONFIG.replace(noise_std=0.5))
    sensor = TemperatureSensor(field, np.random.default_rng(0))
    measured, truth = sensor.read(np.tile([[2.0, 1.0]], (4000, 1)))
    assert np.all(truth == field.temperature([[2.0, 1.0]])[0])
    assert np.std(measured - truth) == pytest.approx(0.5, rel=0.05)
    measured, truth = sensor.read([[20.0, 0.0]])
    assert np.isnan(measured).all() and np.isnan(truth).all()


def readings_of(sensors, seed=4):
    terrain = default_terrain((-31.0, 31.0, -31.0, 31.0))
    auv = SimulatedAuv(SurveySimulator(terrain, seed=seed, start_pose=(30.0, -30.0, math.pi)),
                       sensors=sensors)
    auv.set_plan([[10.0, -25.0], [0.0, 0.0]])
    events = []
    while not auv.holding:
        events += auv.advance(auv.time + 7.0)
    return terrain, events


def test_readings_come_at_their_own_rate_where_the_vehicle_is_and_leave_the_sonar_alone():
    terrain, plain = readings_of([])
    field = WaterTemperature(terrain, WaterTemperatureConfig(noise_std=0.0, rate=0.5))
    _, events = readings_of([TemperatureSensor(field, np.random.default_rng(1))])
    # The echo sounder's soundings and the poses are those of a vehicle without the sensor.
    assert [e for e in events if not isinstance(e, Reading)] == plain
    readings = [e for e in events if isinstance(e, Reading)]
    odoms = [e for e in events if isinstance(e, Odom)]
    times = np.array([r.t for r in readings])
    np.testing.assert_array_equal(times, np.arange(len(readings)) * 2.0)
    assert odoms[-1].t - 2.0 < times[-1] <= odoms[-1].t
    assert len([e for e in events if isinstance(e, Sounding)]) == pytest.approx(
        6 * len(readings), abs=6)
    # Each reading is the field at the position interpolated at its stamp.
    pose_t = np.array([o.t for o in odoms])
    xy = np.column_stack([np.interp(times, pose_t, [o.x for o in odoms]),
                          np.interp(times, pose_t, [o.y for o in odoms])])
    np.testing.assert_allclose([r.value for r in readings], field.temperature(xy),
                               rtol=0, atol=1e-9)
    assert {r.channel for r in readings} == {"temperature"}
