"""A real bathymetry that needs no download: matplotlib's ``topobathy.npz`` sample data.

matplotlib ships ``mpl-data/sample_data/topobathy.npz`` (the topography and bathymetry
grid of its ``TwoSlopeNorm`` gallery example): 91 × 120 elevations in metres relative to
sea level, -1437 to 2205 m, for latitudes 48.0-50.0° N and longitudes 126.0-122.0° W
(Vancouver Island, the Strait of Juan de Fuca and the Salish Sea), with ascending
latitude rows. The default terrain is its largest square block that is all seafloor:
the south-western 28 × 28 cells (48.0-48.6° N, 126.0-125.1° W, about 68 km across) off
the mouth of the Strait of Juan de Fuca, where the continental shelf (about -100 m in
the north-east) falls to the slope (-1437 m in the south-west). A flat shelf beside a
steep slope is the non-stationary field the attentive kernel is made for.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib import cbook

from poam_ros.sim.terrain import Terrain, TerrainError

PAPER_EXTENT = (-31.0, 31.0, -31.0, 31.0)
SEAFLOOR_BLOCK = (slice(0, 28), slice(0, 28))


def default_terrain(extent: Sequence[float] = PAPER_EXTENT) -> Terrain:
    """The shelf-and-slope bathymetry (28 × 28 cells, metres) placed over ``extent``."""
    try:
        with np.load(cbook.get_sample_data("topobathy.npz", asfileobj=False)) as data:
            elevation, latitude = data["topo"], data["latitude"]
    except OSError as exc:
        raise TerrainError(f"matplotlib's sample data topobathy.npz is not installed ({exc}); "
                           f"install matplotlib with its sample data (pip ships it) or load "
                           f"a terrain file") from exc
    if latitude[0] > latitude[-1]:
        elevation = elevation[::-1]
    return Terrain(elevation[SEAFLOOR_BLOCK], extent, name="topobathy Juan de Fuca shelf")
