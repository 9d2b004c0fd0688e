"""Bottom-water temperature: a second survey channel with a known truth (no ROS).

The water just above the seafloor is warm on the shelf and cold in the deep, with a
thermocline between, and a warm anomaly (a seep) sits on top. At a seafloor point
``p = (x, y)`` with elevation ``h(p)`` (m, up):

    T(p) = T_deep + (T_surface - T_deep) · ½ (1 + tanh((h(p) - z_c) / w))
           + A · exp(-‖p - c‖² / (2 r²))                                     [°C]

``z_c`` is the thermocline's elevation and ``w`` its half-thickness; ``A``, ``c`` and ``r``
the anomaly's amplitude, centre and radius. The first term follows the terrain (a channel
correlated with depth), the second is structure of its own (a sparse channel must borrow
strength from the depth where it can and learn the rest from its own readings).

A :class:`TemperatureSensor` reads the field at the vehicle's (x, y) with Gaussian noise,
at its own rate and with its own noise generator, so the echo sounder's noise does not
depend on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poam_ros.params import ConfigError, Params, param
from poam_ros.sim.field_sensor import FieldSensor
from poam_ros.sim.terrain import Terrain, as_points

#: the channel's name: the ingest's ``channels`` entry and the samples cloud's field
CHANNEL = "temperature"


@dataclass
class WaterTemperatureConfig(Params):
    """The simulated bottom-water temperature field and its sensor (defaults: a thermocline
    across the embedded terrain's shelf edge and a seep in the workspace's north-west)."""

    enabled: bool = param(False, "simulate the temperature sensor (a second survey channel)")
    rate: float = param(0.5, "readings per second of simulated time (reading k at k / rate)",
                        unit="Hz", low=0.001, high=1000.0)
    noise_std: float = param(0.05, "standard deviation of the Gaussian reading noise",
                             unit="degC", low=0.0)
    surface_temperature: float = param(10.0, "temperature above the thermocline (T_surface)",
                                       unit="degC")
    deep_temperature: float = param(4.0, "temperature below the thermocline (T_deep)",
                                    unit="degC")
    thermocline_elevation: float = param(-150.0, "elevation of the thermocline's middle "
                                                 "(z_c)", unit="m")
    thermocline_thickness: float = param(50.0, "half-thickness of the thermocline (w): tanh's "
                                               "scale", unit="m", low=1e-6)
    anomaly_amplitude: float = param(2.0, "warm anomaly's peak (A); 0: none", unit="degC")
    anomaly_center: list = param([-10.0, 10.0], "warm anomaly's centre x, y (c)", unit="m")
    anomaly_radius: float = param(8.0, "warm anomaly's Gaussian radius (r)", unit="m",
                                  low=1e-6)

    def validate(self) -> None:
        centre = self.anomaly_center
        if len(centre) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and math.isfinite(v) for v in centre):
            raise ConfigError(f"WaterTemperatureConfig.anomaly_center must be two finite "
                              f"numbers x, y, got {centre!r}")
        self.anomaly_center = [float(v) for v in centre]


class WaterTemperature:
    """The field ``T(p)`` of the module docstring over ``terrain``."""

    def __init__(self, terrain: Terrain, config: WaterTemperatureConfig) -> None:
        self.terrain = terrain
        self.config = config

    def temperature(self, xy) -> np.ndarray:
        """Noise-free temperature (N,) °C at the (N, 2) points ``xy`` (m, on the terrain)."""
        points = as_points(xy)
        c = self.config
        layer = 0.5 * (1.0 + np.tanh((self.terrain.elevation(points) - c.thermocline_elevation)
                                     / c.thermocline_thickness))
        squared = np.sum((points - np.asarray(c.anomaly_center)) ** 2, axis=1)
        anomaly = c.anomaly_amplitude * np.exp(-squared / (2.0 * c.anomaly_radius ** 2))
        return c.deep_temperature + (c.surface_temperature - c.deep_temperature) * layer + anomaly


class TemperatureSensor(FieldSensor):
    """Readings of a :class:`WaterTemperature` at the vehicle's position with Gaussian noise
    of ``noise_std``."""

    name = CHANNEL

    def truth(self, points: np.ndarray) -> np.ndarray:
        return self.field.temperature(points)

    def measure(self, truth: np.ndarray) -> np.ndarray:
        return truth + self.rng.normal(0.0, self.field.config.noise_std, size=truth.shape)


def temperature_sensor(field: WaterTemperature, seed: int) -> TemperatureSensor:
    """The simulator's sensor of ``field``, drawing its noise from the stream ``[seed, 1]``
    (``seed``: the simulator's), so that the echo sounder's noise, and with it the
    soundings, are those of a survey without it. The ROS-free mission and the
    ``simulated_auv`` node build it here, so both read the same values."""
    return TemperatureSensor(field, np.random.default_rng([seed, 1]))
