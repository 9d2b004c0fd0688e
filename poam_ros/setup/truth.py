"""The simulator's truth for a mission setup: its terrain placed by the map frame's anchor, the
fields its sensors measure, and their values at evaluation points.

The ROS-free mission, ``poam-ros sim``'s monitor, the remap's ground truth, a recorded survey
and the benchmarks score against these, so every one of them is scored against one truth.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from poam_ros.geo.georeference import GeoReference
from poam_ros.mapping.channels import DEPTH
from poam_ros.setup.mission_setup import MissionError, MissionSetup
from poam_ros.setup.terrain import terrain_from_config
from poam_ros.sim import Terrain, WaterTemperature
from poam_ros.sim.water_temperature import CHANNEL as TEMPERATURE


def mission_terrain(setup: MissionSetup) -> Terrain:
    """The setup's terrain, placed by the map frame's anchor (``setup.geo``) where its placement
    is ``georeferenced``: the one terrain of the mission, the graph, a recorded survey and a
    remap's ground truth."""
    return terrain_from_config(setup.terrain, GeoReference.from_config(setup.geo))


def simulated_channels(setup: MissionSetup, terrain: Terrain) -> dict[str, WaterTemperature]:
    """Channel name -> the simulated field its sensor measures over ``terrain``, for each
    channel the simulator of ``setup`` has besides the depth (``temperature.enabled``)."""
    if not setup.temperature.enabled:
        return {}
    return {TEMPERATURE: WaterTemperature(terrain, setup.temperature)}


def survey_fields(setup: MissionSetup,
                  terrain: Terrain) -> tuple[dict[str, Callable], list[WaterTemperature]]:
    """Channel name -> its true field ((G, 2) m -> (G,)), depth first, then the ingest's
    ``channels`` in order, each one the simulator measures; and the simulated fields that
    sensors measure. The ROS-free mission and ``poam-ros sim``'s monitor score against
    these."""
    fields = {DEPTH: terrain.elevation}
    simulated = simulated_channels(setup, terrain)
    channels = setup.ingest.channels
    unknown = [name for name in channels if name not in simulated]
    unread = [name for name in simulated if name not in channels]
    if unknown or unread:
        raise MissionError(f"ingest.channels {channels!r} must name exactly the channels "
                           f"the simulator measures ({list(simulated)!r}; enable one with "
                           f"temperature.enabled)")
    fields.update((name, simulated[name].temperature) for name in channels)
    return fields, list(simulated.values())


def field_truth(fields: dict[str, Callable], points: np.ndarray) -> np.ndarray:
    """The true values at ``points`` (G, 2) m of :func:`survey_fields`' ``fields``: (G,) for
    the depth alone, (G, D) with channels, depth first."""
    truths = [field(points) for field in fields.values()]
    return truths[0] if len(truths) == 1 else np.column_stack(truths)
