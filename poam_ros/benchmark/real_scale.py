"""A km-scale survey, ROS-free: wall time, peak memory and map accuracy in metres.

The terrain is a synthetic 1″ GeoTIFF tile of depths (EPSG:4326, float32, 0.1° × 0.1° about
47.5° N, 123.5° W: km-scale ridges 120 m high on a slope, around 1500 m deep) that the
benchmark writes itself, cut to a 5 km × 5 km survey box and placed through a local
transverse Mercator anchor at the box's centre (``terrain.placement: georeferenced``). The
AUV holds 50 m altitude at 2 m/s with a 20 m turning radius; the planner's distance term
follows that radius. Reports SMSE and MSLL (the mission's scoring) and the RMSE of the
posterior mean in metres on the evaluation grid, the wall time and the peak resident memory.

Run::

    poam-ros bench real-scale [--samples 10000] [--num-inducing 500] [--train-steps 10]

``tests/core/test_real_scale_mission.py`` runs the same mission sized for CI, and
``tests/ros/test_real_scale_graph.py`` runs it through the ROS graph (``poam-ros sim``) to a
GeoTIFF; ``poam-ros bench export`` times the export of this mission's map.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from poam_ros.cli.common import ArgumentParser
from poam_ros.geo import GeoReference
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.workspace import WorkspaceConfig

ORIGIN = (47.5, -123.5)   # latitude, longitude of the map origin and the tile's centre
ARC_SECOND = 1.0 / 3600.0
TILE_SIDE = 360           # samples: 0.1° at 1″
HALF_BOX = 2500.0         # m: a 5 km × 5 km survey box
MARGIN = 100.0            # m between the workspace and the box's edge (the vehicle's turns)


def synthetic_depth(lon, lat):
    """Depths (m, negative, mean sea level) at lon/lat degrees: ridges of 3 km × 4 km
    wavelength and 120 m amplitude on a 2 % slope, about 1500 m deep."""
    east = (np.asarray(lon) - ORIGIN[1]) * 111_320.0 * math.cos(math.radians(ORIGIN[0]))
    north = (np.asarray(lat) - ORIGIN[0]) * 111_132.0
    return (-1500.0 + 0.02 * east + 120.0 * np.sin(2 * math.pi * east / 3000.0)
            * np.cos(2 * math.pi * north / 4000.0))


def write_synthetic_tile(path) -> Path:
    """The 1″ tile as a float32 EPSG:4326 GeoTIFF at ``path`` (first row north)."""
    import rasterio
    from rasterio.transform import Affine

    west, north = ORIGIN[1] - TILE_SIDE * ARC_SECOND / 2, ORIGIN[0] + TILE_SIDE * ARC_SECOND / 2
    centres = (np.arange(TILE_SIDE) + 0.5) * ARC_SECOND
    lon, lat = np.meshgrid(west + centres, north - centres)
    with rasterio.open(path, "w", driver="GTiff", width=TILE_SIDE, height=TILE_SIDE, count=1,
                       dtype="float32", crs="EPSG:4326",
                       transform=Affine(ARC_SECOND, 0, west, 0, -ARC_SECOND, north)) as tif:
        tif.write(synthetic_depth(lon, lat).astype(np.float32), 1)
    return Path(path)


def survey_box() -> list[float]:
    """[lon_min, lon_max, lat_min, lat_max] of the 5 km × 5 km box about the origin."""
    lon, lat = GeoReference.local(*ORIGIN).to_lonlat([-HALF_BOX, HALF_BOX],
                                                    [-HALF_BOX, HALF_BOX])
    return [float(lon[0]), float(lon[1]), float(lat[0]), float(lat[1])]


def real_scale_setup(tile, samples: int, num_inducing: int, train_steps: int,
                     sonar_rate: float = 0.1) -> MissionSetup:
    """The mission over ``tile``: the anchor, the box, an altitude-holding torpedo AUV."""
    setup = MissionSetup()
    setup.geo = setup.geo.replace(anchor="latlon", origin_latitude=ORIGIN[0],
                                  origin_longitude=ORIGIN[1])
    setup.terrain = setup.terrain.replace(path=str(tile), placement="georeferenced",
                                          survey_box=survey_box())
    inner = HALF_BOX - MARGIN
    setup.workspace = WorkspaceConfig(vertices=[-inner, -inner, inner, -inner, inner, inner,
                                                -inner, inner])
    setup.ingest_workspace = setup.workspace  # a remap of the mission's bag keeps its samples
    # 1 Hz control at 2 m/s: 2 m a step; max_speed * speed_gain / rate < 2 (no overshoot).
    setup.vehicle = setup.vehicle.replace(
        vertical_mode="altitude", altitude=50.0, control_rate=1.0, max_speed=2.0,
        max_yaw_rate=0.2, turning_radius=20.0, goal_radius=5.0, speed_gain=0.5,
        heading_gain=1.0)
    setup.sonar = setup.sonar.replace(rate=sonar_rate, noise_std=0.5)
    # The pilot survey is one batch (its legs fly hours): no batch is cut on time in lockstep.
    setup.ingest = setup.ingest.replace(goal_radius=5.0, sonar_rate=sonar_rate,
                                        max_pose_gap=2.0, batch_timeout=43200.0)
    # Over ROS the planner judges the plan's end too: at least the vehicle's radius.
    setup.planner_node = setup.planner_node.replace(goal_radius=5.0)
    setup.max_entropy = setup.max_entropy.replace(turning_radius=setup.vehicle.turn_radius)
    setup.mission = setup.mission.replace(eval_grid=50)
    setup.mission_control = setup.mission_control.replace(max_samples=samples)
    setup.grid = setup.grid.replace(resolution=50.0)  # the mapper's maps: 96 × 96 cells
    setup.mapping = setup.mapping.replace(num_inducing=num_inducing, train_steps=train_steps,
                                          device="cpu")
    return setup


def add_mission_arguments(parser: ArgumentParser) -> None:
    """The real-scale mission's options, shared with ``poam-ros bench export``."""
    parser.add_argument("--samples", type=int, default=10_000, help="sample budget")
    parser.add_argument("--num-inducing", type=int, default=500, help="M")
    parser.add_argument("--train-steps", type=int, default=10)
    parser.add_argument("--sonar-rate", type=float, default=0.5, help="soundings per second")
    parser.add_argument("--seed", type=int, default=0)


def run_mission(args):
    """The real-scale mission of :func:`add_mission_arguments`' options on the synthetic
    tile, with one torch thread: (setup, its MissionResult, wall seconds of the mission)."""
    import torch

    from poam_ros.mission import Mission

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as directory:
        tile = write_synthetic_tile(Path(directory) / "synthetic_1arcsec.tif")
        setup = real_scale_setup(tile, args.samples, args.num_inducing, args.train_steps,
                                 args.sonar_rate)
        setup.mission = setup.mission.replace(seed=args.seed)
        start = time.perf_counter()
        result = Mission(setup).run()
        return setup, result, time.perf_counter() - start


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench real-scale", description=__doc__.split("\n")[0])
    add_mission_arguments(parser)
    args = parser.parse_args(argv)
    from poam_ros.benchmark.core_speed import peak_rss  # with torch: after the options

    _, result, wall = run_mission(args)
    mean = result.model.predict(result.eval_points)[0]
    rmse = math.sqrt(float(np.mean((mean - result.truth) ** 2)))
    peak = peak_rss() / 2**20  # MiB
    final = result.final
    xmin, xmax, ymin, ymax = result.terrain.extent
    print(f"terrain {result.terrain.shape[0]} x {result.terrain.shape[1]} cells over "
          f"{xmax - xmin:.0f} x {ymax - ymin:.0f} m; M = {args.num_inducing}, "
          f"{args.train_steps} training steps; {len(result.records)} epochs, "
          f"{final.num_samples} samples, {result.path.shape[0]} s of survey")
    print(f"wall {wall:.1f} s, peak RSS {peak:.0f} MiB; SMSE {final.smse:.4f}, "
          f"MSLL {final.msll:.3f}, RMSE {rmse:.2f} m (depth std {np.std(result.truth):.1f} m)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
