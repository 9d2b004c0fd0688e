"""The simulated seabed class: hard where the terrain's slope reaches the threshold, read with
the stated flip probability, from its own random stream."""

import numpy as np
import pytest

from poam_ros.sim import Reading, SimulatedAuv, SurveySimulator, Terrain, default_terrain
from poam_ros.sim.seabed_class import SeabedClass, SeabedClassConfig, seabed_class_sensor
from poam_ros.sim.water_temperature import (
    WaterTemperature,
    WaterTemperatureConfig,
    temperature_sensor,
)

# Cell centres at x = -5, 0, 5: h = 0 west of x = 0, then rising 10 m per metre to x = 5.
KINK = Terrain([[0.0, 0.0, 50.0]] * 3, (-7.5, 7.5, -7.5, 7.5))
CONFIG = SeabedClassConfig(slope_threshold=5.0, slope_step=1.0, flip_probability=0.1)


def test_the_slope_is_the_gradient_magnitude_and_the_class_its_threshold():
    field = SeabedClass(KINK, CONFIG)
    np.testing.assert_allclose(field.slope([[-3.0, 0.0], [2.5, 1.0]]), [0.0, 10.0], atol=1e-12)
    np.testing.assert_array_equal(field.hard([[-3.0, 0.0], [2.5, 1.0]]), [0.0, 1.0])
    # P(y = 1) = ε + (1 − 2ε) c
    np.testing.assert_allclose(field.probability([[-3.0, 0.0], [2.5, 1.0]]), [0.1, 0.9])


def test_readings_flip_at_the_stated_rate_and_are_nan_off_the_terrain():
    sensor = seabed_class_sensor(SeabedClass(KINK, CONFIG), seed=3)
    points = np.tile([[2.5, 0.0], [-3.0, 0.0]], (2000, 1))
    read, truth = sensor.read(points)
    assert set(np.unique(read)) == {0.0, 1.0}
    flips = np.mean(read != truth)
    assert abs(flips - 0.1) < 4 * np.sqrt(0.1 * 0.9 / len(points))  # four binomial sigmas
    read, truth = sensor.read([[20.0, 0.0]])
    assert np.isnan(read).all() and np.isnan(truth).all()


def test_no_flips_reads_the_class():
    field = SeabedClass(KINK, CONFIG.replace(flip_probability=0.0))
    read, truth = seabed_class_sensor(field, 0).read([[2.5, 0.0], [-3.0, 0.0]])
    np.testing.assert_array_equal(read, [1.0, 0.0])
    np.testing.assert_array_equal(read, truth)


def test_config_checks_the_flip_probability():
    with pytest.raises(ValueError):
        SeabedClassConfig(flip_probability=0.6)


def test_the_classifier_leaves_the_other_sensors_readings_as_they_were():
    terrain = default_terrain((-31.0, 31.0, -31.0, 31.0))

    def readings(with_class: bool) -> list[Reading]:
        simulator = SurveySimulator(terrain, seed=4, start_pose=(20.0, -20.0, 0.0))
        sensors = [temperature_sensor(WaterTemperature(terrain, WaterTemperatureConfig()), 4)]
        if with_class:
            sensors.append(seabed_class_sensor(SeabedClass(terrain, SeabedClassConfig()), 4))
        auv = SimulatedAuv(simulator, sensors=sensors)
        auv.set_plan([[0.0, 0.0]])
        return [e for e in auv.advance(float("inf")) if isinstance(e, Reading)]

    alone, both = readings(False), readings(True)
    assert [e for e in both if e.channel == "temperature"] == alone
    classes = [e.value for e in both if e.channel == "seabed_class"]
    assert classes and set(classes) <= {0.0, 1.0}
