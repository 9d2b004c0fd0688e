"""Settings of the mapper and planner nodes beyond their components' configurations.

Frames, files, the planner's mode and the like: the nodes declare these as their own
(unprefixed) parameters, the parameter file carries them in the node's section, and
:class:`poam_ros.setup.mission_setup.MissionSetup` loads them with the rest. ROS-free, like every
configuration dataclass, so that parameter files load and check without ROS.
"""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.params import Params, param

LOCKSTEP = "lockstep"
REALTIME = "realtime"
NODE_TOKEN = "{node}"  # in a file path: the node's fully qualified name (auv1/mapper)


def for_node(path: str, node_name: str) -> str:
    """``path`` with :data:`NODE_TOKEN` replaced by ``node_name`` (fully qualified) without its
    leading slash, so that two nodes, or two robots' namespaced stacks on one computer, write
    files of their own by default: ``~/.ros/poam_ros/{node}/map.tif`` is
    ``~/.ros/poam_ros/auv1/mapper/map.tif`` for ``/auv1/mapper``. ``~`` stays for the caller."""
    return path.replace(NODE_TOKEN, node_name.strip("/"))


@dataclass
class LifecycleSettings(Params):
    """What a managed node (sensor_ingest, mapper, planner; :mod:`poam_ros.ros.managed`) does
    at start, beside its own parameters."""

    autostart: bool = param(True, "configure and activate at start, as a plain node would; "
                                  "false: stay unconfigured until a supervisor drives the "
                                  "lifecycle_msgs transitions (~/change_state)")


DEPTH, ALTITUDE = "depth", "altitude"


@dataclass
class MapperSettings(Params):
    """The mapper node's own parameters (its model is ``mapping.*``, its grid ``grid.*``)."""

    map_frame: str = param("map", "frame of the samples it accepts and the maps it publishes")
    state_file: str = param("", "model state to resume from at start (a file written by "
                                "~/save; ~ and {node} as in save_path); empty: start with "
                                "an empty model. A crash journal left by a mapper that did "
                                "not shut down in order is resumed instead (journal.*)")
    save_path: str = param("~/.ros/poam_ros/{node}/map_state.pt",
                           "where ~/save writes the model state (~ is expanded, {node} is the "
                           "node's fully qualified name: one file per node and robot); the "
                           "crash journal's default directory is named after it")
    export_path: str = param("~/.ros/poam_ros/{node}/map.tif",
                             "where ~/export writes the map as a georeferenced cloud-optimised "
                             "GeoTIFF (needs geo.anchor; ~ and {node} as in save_path)")
    publish_lengthscale: bool = param(True, "add the learned lengthscale field to the map")
    std_includes_noise: bool = param(False, "the map's std is that of a new measurement "
                                            "(field plus observation noise) rather than of "
                                            "the field")
    diagnostics_period: float = param(1.0, "seconds between periodic /diagnostics messages",
                                      unit="s", low=0.05, high=3600.0)
    evaluation_grid: int = param(0, "> 0: after each map, publish on map/evaluation the "
                                    "predictive mean and the std of a new measurement at "
                                    "the mission's evaluation points (this many per axis "
                                    "over the workspace, as mission.eval_grid), so that a "
                                    "monitor scores the map as the ROS-free mission does; "
                                    "0: off", low=0, high=2000)
    idle_share: float = param(1.0, "the share of the wall time that idle training "
                                   "(mapping.idle_steps) may take between updates: after a "
                                   "round of train_steps steps that took t s, the next waits "
                                   "t (1/share - 1) s; 1: back to back", low=0.01, high=1.0)
    torch_threads: int = param(0, "torch's intra-op threads in the mapper's process (process "
                                  "wide); 0 keeps torch's default, one per core. 1 avoids "
                                  "threads spinning against other busy processes on a "
                                  "shared CPU", low=0, high=1024)
    channels: list[str] = param([], "the samples cloud's channels besides the depth, in "
                                    "order: the ingest's channels (poam-ros sim passes "
                                    "them); with any, the model maps 1 + C outputs "
                                    "(mapping.method poam-mt or cmogp) and the map gains "
                                    "mean_<channel> and std_<channel> layers; empty: depth "
                                    "only")

    def use_torch_threads(self, override: int | None = None) -> int:
        """Set this process's torch threads as the mapper does (``override``, else
        ``torch_threads``; 0 keeps torch's default) and return the count in use. The count
        changes the sums' rounding: a live map is reproduced to the bit only with it."""
        import torch

        threads = self.torch_threads if override is None else override
        if threads:
            torch.set_num_threads(threads)
        return torch.get_num_threads()


@dataclass
class PlannerSettings(Params):
    """The planner node's own parameters (its components are ``planning.*``, ``pilot.*``...)."""

    seed: int = param(0, "seed of the planner's random stream; a mission launcher passes "
                         "mission_seeds(mission.seed)['planner']", low=0, high=2**63 - 1)
    mode: str = param(LOCKSTEP, "lockstep: replan once the goal is reached and a map newer "
                                "than that moment has arrived; realtime: replan as soon as "
                                "the goal is reached, with the map at hand",
                      choices=(LOCKSTEP, REALTIME))
    goal_radius: float = param(0.5, "the plan's end counts as reached within this distance; "
                                    "keep it at least the vehicle's own goal radius",
                               unit="m", low=1e-3)
    query_timeout: float = param(10.0, "seconds to wait for the mapper's answer to an "
                                       "uncertainty query before trying again", unit="s",
                                 low=0.01, high=3600.0)
    map_frame: str = param("map", "frame of the odometry it accepts and the plans it publishes")
    diagnostics_period: float = param(1.0, "seconds between periodic /diagnostics messages",
                                      unit="s", low=0.05, high=3600.0)
    autostart_mission: bool = param(True, "start the mission (publish the pilot survey) at "
                                          "once; false: publish no plan until ~/start")
    skip_pilot: bool = param(False, "a planner restarted on a map its mapper restored (a "
                                    "vehicle rejoining its fleet): at the first map it counts, "
                                    "cut the pilot survey short and plan informatively, not "
                                    "fly the pilot again (its first leg is flown until then)")
    mapper_name: str = param("mapper", "the mapper whose /diagnostics status (<name>: mapping) "
                                       "gives the sample count that mission.max_samples bounds; "
                                       "a relative name is in the planner's namespace")
    vertical_mode: str = param(DEPTH, "what each plan pose's z holds: depth: z = -depth in "
                                      "map_frame (REP-103, z up, 0 at the surface); altitude: "
                                      "z = altitude above the seabed, each pose in the frame "
                                      "<map_frame>_altitude", choices=(DEPTH, ALTITUDE))
    depth: float = param(0.0, "the depth setpoint (vertical_mode depth)", unit="m", low=0.0)
    altitude: float = param(0.0, "the altitude setpoint above the seabed (vertical_mode "
                                 "altitude)", unit="m", low=0.0)

    @property
    def vertical(self) -> tuple[float, str]:
        """(z [m], frame id) of every plan pose: the vertical setpoint as ``vertical_mode``
        says, in ``map_frame`` for a depth, in ``<map_frame>_altitude`` for an altitude."""
        if self.vertical_mode == DEPTH:
            return 0.0 - self.depth, self.map_frame
        return self.altitude, f"{self.map_frame}_altitude"
