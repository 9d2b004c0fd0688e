"""The survey product's cost at real scale: a km-scale model exported as a GeoTIFF.

The model is the one :mod:`poam_ros.benchmark.real_scale` builds (the synthetic 1″ tile,
the 5 km × 5 km box, 10,000 soundings, M = 500 by default); its map is then exported
(:func:`poam_ros.mapping.survey_product.export_map`: mean, std, learned lengthscale and
sample density predicted on the grid, written as a cloud-optimised GeoTIFF in the anchor's
CRS) at ``--resolution`` over the workspace (4.8 km × 4.8 km: 480 × 480 cells at 10 m).
Reports the export's wall time, the process's peak resident memory before and after it,
and the file's size. Run::

    poam-ros bench export [--samples 10000] [--num-inducing 500] [--resolution 10]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from poam_ros.benchmark.real_scale import add_mission_arguments, run_mission
from poam_ros.cli.common import ArgumentParser


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench export", description=__doc__.split("\n")[0])
    add_mission_arguments(parser)
    parser.add_argument("--resolution", type=float, default=10.0, help="cell size [m]")
    args = parser.parse_args(argv)

    from poam_ros.benchmark.core_speed import peak_rss  # with torch: after the options
    from poam_ros.geo import GeoReference
    from poam_ros.mapping.map_grid import MapGrid
    from poam_ros.mapping.survey_product import export_map
    from poam_ros.workspace import Workspace

    setup, result, mission_wall = run_mission(args)
    model = result.model
    grid = MapGrid.from_config(setup.grid.replace(resolution=args.resolution),
                               Workspace.from_config(setup.workspace))
    georeference = GeoReference.from_config(setup.geo)
    with tempfile.TemporaryDirectory() as directory:
        before = peak_rss() / 2**20  # MiB
        start = time.perf_counter()
        path = export_map(Path(directory) / "map.tif", model, grid, georeference)
        export_wall = time.perf_counter() - start
        after = peak_rss() / 2**20
        size = path.stat().st_size / 2**20
    rows, cols = grid.shape
    print(f"model: {model.num_samples} soundings, {model.method} M = {args.num_inducing}, "
          f"{args.train_steps} training steps (the mission {mission_wall:.1f} s)")
    print(f"export: {rows} x {cols} cells of {args.resolution:g} m, 4 layers, {size:.1f} MiB "
          f"COG in {georeference.crs.name}")
    print(f"export wall {export_wall:.2f} s; peak RSS {before:.0f} MiB before the export, "
          f"{after:.0f} MiB after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
