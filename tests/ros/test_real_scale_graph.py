"""A km-scale survey through the ROS graph, sized for CI: ``poam-ros sim`` runs the
georeferenced real-scale mission of :mod:`poam_ros.benchmark.real_scale` (the synthetic 1″
tile of depths in metres, the 5 km × 5 km box placed through the map's anchor, 1,500
soundings, M = 40, 3 training steps; tests/core/test_real_scale_mission.py runs it ROS-free)
through every node, recorded to a bag; ``poam-ros export`` then writes the bag's map as a
GeoTIFF, which rasterio reads back: its CRS and transform put the mapped depths where the
tile has them on the Earth.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

import pyproj  # noqa: E402
import rasterio  # noqa: E402
from affine import Affine  # noqa: E402
from graph_helpers import ROOT, RUN_LIMIT, poam_ros_sim  # noqa: E402

from poam_ros.benchmark.real_scale import (  # noqa: E402
    real_scale_setup,
    synthetic_depth,
    write_synthetic_tile,
)
from poam_ros.geo import GeoReference  # noqa: E402
from poam_ros.mission import Mission  # noqa: E402

BUDGET = 1500  # soundings
NODES = ("sensor_ingest", "mapper", "planner", "simulated_auv", "recorder")


@pytest.fixture(scope="module")
def survey(ros_domain_id, small_parameter_file, tmp_path_factory):
    """The setup, the command's folder, and the export's completed process and GeoTIFF."""
    folder = tmp_path_factory.mktemp("real_scale")
    tile = write_synthetic_tile(folder / "synthetic_1arcsec.tif")
    setup = real_scale_setup(tile, samples=BUDGET, num_inducing=40, train_steps=3)
    setup.mission = setup.mission.replace(eval_grid=30)
    setup.mapper_node = setup.mapper_node.replace(torch_threads=1)
    # The small file's nodes (no crash journal) under the real-scale mission.
    params = setup.to_file(folder / "real_scale.yaml", base=small_parameter_file())
    # 1,500 soundings at 0.1 Hz are 4.6 h of survey: 300 times faster than real time is
    # 300 poses a second (the default mission makes 200 at its time scale of 20); as fast
    # as possible overflows the subscribers' queues.
    process = poam_ros_sim(["--params", str(params), "--time-scale", "300",
                            "--record", str(folder / "bag")], folder / "out")
    try:
        out, err = process.communicate(timeout=RUN_LIMIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, f"poam-ros sim exited with {process.returncode}:\n" \
                                    f"{out}\n{err}"
    geotiff = folder / "map.tif"
    export = subprocess.run([sys.executable, "-m", "poam_ros", "export", str(folder / "bag"),
                             "--params", str(params), "-o", str(geotiff)], cwd=ROOT,
                            capture_output=True, text=True, timeout=RUN_LIMIT)
    return setup, folder / "out", export, geotiff


def test_the_graph_surveys_the_box_to_its_budget(survey):
    setup, out, _, _ = survey
    summary = json.loads((out / "sim.json").read_text())
    assert summary["outcome"] == "budget"
    assert summary["exit_codes"] == dict.fromkeys(NODES, 0)
    final = summary["final"]
    assert final["num_samples"] >= BUDGET and summary["epochs"] >= 3
    assert final["smse"] < 0.2  # the km-scale ridges are learned
    # In lockstep the graph replays the ROS-free mission decision for decision.
    alone = Mission(setup).run()
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert [e["num_samples"] for e in epochs] == [r.num_samples for r in alone.records]
    assert final["smse"] == pytest.approx(alone.final.smse, rel=1e-6)
    ingest = summary["diagnostics"]["sensor_ingest: samples"]
    assert int(ingest["samples_published"]) >= BUDGET


def test_the_exported_geotiff_puts_the_depths_where_the_tile_has_them(survey):
    setup, out, export, geotiff = survey
    assert export.returncode == 0, export.stderr
    # The bag re-mapped with the file's ingest: every sounding the mission mapped, or more
    # (the graph runs on while it stops).
    mapped = int(re.search(r"from (\d+) samples", export.stdout).group(1))
    assert mapped >= json.loads((out / "sim.json").read_text())["final"]["num_samples"]
    georeference = GeoReference.from_config(setup.geo)
    with rasterio.open(geotiff) as dataset:
        assert pyproj.CRS.from_wkt(dataset.crs.to_wkt()) == georeference.crs
        # The workspace (±2,400 m about the anchor) in 50 m cells, north up.
        assert dataset.transform == Affine(50.0, 0.0, -2400.0, 0.0, -50.0, 2400.0)
        assert (dataset.height, dataset.width) == (96, 96)
        assert dataset.descriptions == ("mean", "std", "lengthscale", "sample_density")
        assert dataset.tags()["VERTICAL_REFERENCE"] == setup.geo.vertical_reference
        mean = dataset.read(1, masked=True)
        std = dataset.read(2, masked=True)
        density = dataset.read(4, masked=True)
        rows, cols = np.mgrid[:dataset.height, :dataset.width]
        east, north = rasterio.transform.xy(dataset.transform, rows.ravel(), cols.ravel())
        to_lonlat = pyproj.Transformer.from_crs(dataset.crs.to_wkt(), "EPSG:4326",
                                                always_xy=True)
    lon, lat = to_lonlat.transform(np.asarray(east), np.asarray(north))
    truth = synthetic_depth(lon, lat).reshape(mean.shape)
    inside = ~np.ma.getmaskarray(mean)
    assert inside.mean() > 0.95
    assert (-1700 < mean[inside]).all() and (mean[inside] < -1300).all()  # metres, not scaled
    assert (std[inside] > 0).all()
    # The soundings the online model still holds (its last batch), counted per cell.
    assert (density[inside] >= 0).all() and (density[inside] % 1 == 0).all()
    rmse = math.sqrt(np.mean((mean[inside] - truth[inside]) ** 2))
    assert rmse < 0.45 * np.std(truth[inside]), rmse
