"""The simulator's truth for a mission setup: its terrain placed by the map frame's anchor, the
fields its sensors measure, and their values at evaluation points.

The ROS-free mission, ``poam-ros sim``'s monitor, the remap's ground truth, a recorded survey
and the benchmarks score against these, so every one of them is scored against one truth.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from poam_ros.geo.georeference import GeoReference
from poam_ros.mapping.channels import DEPTH
from poam_ros.setup.mission_setup import MissionError, MissionSetup
from poam_ros.setup.terrain import terrain_from_config
from poam_ros.sim import Terrain, WaterTemperature
from poam_ros.sim.seabed_class import CHANNEL as SEABED_CLASS
from poam_ros.sim.seabed_class import SeabedClass, seabed_class_sensor
from poam_ros.sim.water_temperature import CHANNEL as TEMPERATURE
from poam_ros.sim.water_temperature import temperature_sensor


class SimulatedChannel(NamedTuple):
    """A channel the simulator measures besides the depth: its ``truth`` ((G, 2) m -> (G,):
    the temperature [°C], a seabed class's P(y = 1)) and its ``sensor(seed)`` (the sensor
    the simulated AUV carries, from the simulator's seed)."""

    truth: Callable[[np.ndarray], np.ndarray]
    sensor: Callable[[int], object]


def mission_terrain(setup: MissionSetup) -> Terrain:
    """The setup's terrain, placed by the map frame's anchor (``setup.geo``) where its placement
    is ``georeferenced``: the one terrain of the mission, the graph, a recorded survey and a
    remap's ground truth."""
    return terrain_from_config(setup.terrain, GeoReference.from_config(setup.geo))


def simulated_channels(setup: MissionSetup, terrain: Terrain) -> dict[str, SimulatedChannel]:
    """Channel name -> its :class:`SimulatedChannel` over ``terrain``, for each channel the
    simulator of ``setup`` has besides the depth (``temperature.enabled``,
    ``seabed_class.enabled``), in that order (the ``simulated_auv`` node's)."""
    channels = {}
    if setup.temperature.enabled:
        temperature = WaterTemperature(terrain, setup.temperature)
        channels[TEMPERATURE] = SimulatedChannel(
            temperature.temperature, lambda seed: temperature_sensor(temperature, seed))
    if setup.seabed_class.enabled:
        seabed = SeabedClass(terrain, setup.seabed_class)
        channels[SEABED_CLASS] = SimulatedChannel(
            seabed.probability, lambda seed: seabed_class_sensor(seabed, seed))
    return channels


def survey_fields(setup: MissionSetup,
                  terrain: Terrain) -> tuple[dict[str, Callable], list[SimulatedChannel]]:
    """Channel name -> its true field ((G, 2) m -> (G,)), depth first, then the ingest's
    ``channels`` in order, each one the simulator measures; and the simulated channels
    whose sensors the vehicle carries. The ROS-free mission and ``poam-ros sim``'s monitor
    score against these."""
    fields = {DEPTH: terrain.elevation}
    simulated = simulated_channels(setup, terrain)
    channels = setup.ingest.channels
    unknown = [name for name in channels if name not in simulated]
    unread = [name for name in simulated if name not in channels]
    if unknown or unread:
        raise MissionError(f"ingest.channels {channels!r} must name exactly the channels "
                           f"the simulator measures ({list(simulated)!r}; enable one with "
                           f"temperature.enabled or seabed_class.enabled)")
    fields.update((name, simulated[name].truth) for name in channels)
    return fields, list(simulated.values())


def field_truth(fields: dict[str, Callable], points: np.ndarray) -> np.ndarray:
    """The true values at ``points`` (G, 2) m of :func:`survey_fields`' ``fields``: (G,) for
    the depth alone, (G, D) with channels, depth first."""
    truths = [field(points) for field in fields.values()]
    return truths[0] if len(truths) == 1 else np.column_stack(truths)
