"""Seabed class: a binary survey channel with a known truth, from the terrain's slope (no ROS).

Steep seabed sheds its sediment and is hard (rock, class 1); gentle seabed holds it and is
soft (class 0). At a seafloor point ``p`` the slope is the elevation's gradient magnitude by
central differences over ``slope_step`` metres (points clipped into the terrain),

    s(p) = ‖(h(p + δe_x) − h(p − δe_x), h(p + δe_y) − h(p − δe_y))‖ / (2δ)     [m/m]

and the class is c(p) = 1 where s(p) ≥ ``slope_threshold``, else 0. A classifier on the
vehicle (a backscatter or grab-sample label) reads c at the vehicle's (x, y) and is wrong
with the stated ``flip_probability`` ε, independently per reading, so a reading y has

    P(y = 1 | p) = ε + (1 − 2ε) c(p)

which is the channel's truth a probability map is scored against (:meth:`SeabedClass.
probability`). The slope is of the terrain as gridded: the default terrain is a shelf
scaled to the workspace, whose slopes are tens of metres per metre; the default threshold
(8 m/m) splits its workspace about in half.

A :class:`SeabedClassSensor` reads at its own rate with its own generator (stream
``[seed, 2]``), so that neither the echo sounder's noise nor the temperature's depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poam_ros.params import Params, param
from poam_ros.sim.field_sensor import FieldSensor
from poam_ros.sim.terrain import Terrain, as_points

#: the channel's name: the ingest's ``channels`` entry, the samples cloud's field and topic
CHANNEL = "seabed_class"


@dataclass
class SeabedClassConfig(Params):
    """The simulated seabed class (hard where steep) and the classifier that reads it."""

    enabled: bool = param(False, "simulate the seabed classifier (a binary survey channel)")
    rate: float = param(0.5, "readings per second of simulated time (reading k at k / rate)",
                        unit="Hz", low=0.001, high=1000.0)
    slope_threshold: float = param(8.0, "slope at and above which the seabed is hard (class "
                                        "1): the elevation's gradient magnitude",
                                   unit="m/m", low=0.0)
    slope_step: float = param(2.0, "half-baseline of the central differences that measure "
                                   "the slope", unit="m", low=1e-6)
    flip_probability: float = param(0.05, "probability that a reading is the other class "
                                          "(the classifier's error, independent per reading)",
                                    low=0.0, high=0.5)


class SeabedClass:
    """The class field c(p) of the module docstring over ``terrain``."""

    def __init__(self, terrain: Terrain, config: SeabedClassConfig) -> None:
        self.terrain = terrain
        self.config = config

    def slope(self, xy) -> np.ndarray:
        """s(p) (N,) [m/m] at the (N, 2) points ``xy`` (m, on the terrain)."""
        points = as_points(xy)
        step = self.config.slope_step
        xmin, xmax, ymin, ymax = self.terrain.extent
        low, high = np.array([xmin, ymin]), np.array([xmax, ymax])

        def height(offset) -> np.ndarray:
            return self.terrain.elevation(np.clip(points + offset, low, high))

        east = height([step, 0.0]) - height([-step, 0.0])
        north = height([0.0, step]) - height([0.0, -step])
        return np.hypot(east, north) / (2.0 * step)

    def hard(self, xy) -> np.ndarray:
        """c(p) (N,): 1.0 where the seabed at ``xy`` (N, 2) is hard, else 0.0."""
        return (self.slope(xy) >= self.config.slope_threshold).astype(float)

    def probability(self, xy) -> np.ndarray:
        """P(y = 1 | p) = ε + (1 − 2ε) c(p) (N,): a reading's chance of saying hard."""
        flip = self.config.flip_probability
        return flip + (1.0 - 2.0 * flip) * self.hard(xy)


class SeabedClassSensor(FieldSensor):
    """Class readings of a :class:`SeabedClass` at the vehicle's position (0.0 or 1.0), each
    flipped with probability ε."""

    name = CHANNEL

    def truth(self, points: np.ndarray) -> np.ndarray:
        return self.field.hard(points)

    def measure(self, truth: np.ndarray) -> np.ndarray:
        flipped = self.rng.random(len(truth)) < self.field.config.flip_probability
        return np.where(flipped, 1.0 - truth, truth)


def seabed_class_sensor(field: SeabedClass, seed: int) -> SeabedClassSensor:
    """The simulator's classifier of ``field``, drawing from the stream ``[seed, 2]``
    (``seed``: the simulator's; the temperature sensor's is ``[seed, 1]``). The ROS-free
    mission and the ``simulated_auv`` node build it here, so both read the same classes."""
    return SeabedClassSensor(field, np.random.default_rng([seed, 2]))
