"""The simulator: terrain from elevation maps, AUV kinematics and sonar models (no ROS).

Typical use, the POAM paper's setting::

    from poam_ros.sim import SurveySimulator, default_terrain, lower_right_start
    terrain = default_terrain((-31, 31, -31, 31))
    sim = SurveySimulator(terrain, seed=0, start_pose=lower_right_start((-30, 30, -30, 30)))
    log = sim.follow([[0.0, 0.0], [-20.0, 10.0]])   # log.positions, log.elevations, ...
"""

from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.depth_keeping import HeightKeeper
from poam_ros.sim.fetch import FetchError, fetch_tile
from poam_ros.sim.multibeam import MultibeamConfig, MultibeamSonar, MultibeamStreamConfig, Swath
from poam_ros.sim.simulated_auv import (
    MODES,
    Odom,
    Ping,
    Reading,
    SimulatedAuv,
    SimulatedAuvConfig,
    Sounding,
)
from poam_ros.sim.simulator import SimulationError, SurveyLog, SurveySimulator, lower_right_start
from poam_ros.sim.sonar import SingleBeamSonar, SonarConfig, Soundings
from poam_ros.sim.terrain import Terrain, TerrainError, grid_points
from poam_ros.sim.terrain_io import load_terrain
from poam_ros.sim.vehicle import Unicycle, VehicleConfig, forward_path_length, wrap_angle
from poam_ros.sim.water_temperature import (
    TemperatureSensor,
    WaterTemperature,
    WaterTemperatureConfig,
)

__all__ = [
    "MODES", "FetchError", "HeightKeeper", "MultibeamConfig", "MultibeamSonar",
    "MultibeamStreamConfig", "Odom", "Ping", "Reading", "SimulatedAuv", "SimulatedAuvConfig",
    "SimulationError", "SingleBeamSonar",
    "SonarConfig", "Sounding", "Soundings", "SurveyLog", "SurveySimulator", "Swath", "Terrain",
    "TemperatureSensor", "TerrainError", "Unicycle", "VehicleConfig",
    "WaterTemperature", "WaterTemperatureConfig", "default_terrain",
    "fetch_tile", "forward_path_length", "grid_points", "load_terrain", "lower_right_start",
    "wrap_angle",
]
