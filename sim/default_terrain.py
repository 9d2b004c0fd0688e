"""A real bathymetry that needs no download: matplotlib's ``topobathy.npz`` sample data.

matplotlib ships ``mpl-data/sample_data/topobathy.npz`` (the topography and bathymetry
grid of its ``TwoSlopeNorm`` gallery example): 91 × 120 elevations in metres relative to
sea level, -1437 to 2205 m, for latitudes 48.0-50.0° N and longitudes 126.0-122.0° W
(Vancouver Island, the Strait of Juan de Fuca and the Salish Sea), with ascending
latitude rows. The grid is regular in web Mercator (EPSG:3857): 2′ of longitude, 3,710.7
Mercator metres each way, which is about 2.48 km on the ground at 48° N (Mercator's scale
there is 1 / cos 48° = 1.49).

Two placements:

* :func:`poam_ros.geo.embedded.default_geo_terrain`, the embedded default world: the grid at
  its true place and size on the Earth, cut to a survey box through the map frame's anchor.
* :func:`default_terrain`, the POAM paper's placement (``terrain.placement: extent``): the
  largest square block that is all seafloor, the south-western 28 × 28 cells (48.0-48.6° N,
  126.0-125.1° W, about 68 km across) off the mouth of the Strait of Juan de Fuca, where
  the continental shelf (about -100 m in the north-east) falls to the slope (-1437 m in
  the south-west), stretched over the paper's 62 m workspace.

A flat shelf beside a steep slope is the non-stationary field the attentive kernel is made
for.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib import cbook

from poam_ros.sim.terrain import Terrain, TerrainError

PAPER_EXTENT = (-31.0, 31.0, -31.0, 31.0)
SEAFLOOR_BLOCK = (slice(0, 28), slice(0, 28))
NAME = "topobathy Juan de Fuca shelf"


def topobathy() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(elevation (91, 120) m with ascending latitude rows, longitude (120,) deg east in
    [-180, 180), latitude (91,) deg) of the sample data."""
    try:
        with np.load(cbook.get_sample_data("topobathy.npz", asfileobj=False)) as data:
            elevation, longitude, latitude = data["topo"], data["longitude"], data["latitude"]
    except OSError as exc:
        raise TerrainError(f"matplotlib's sample data topobathy.npz is not installed ({exc}); "
                           f"install matplotlib with its sample data (pip ships it) or load "
                           f"a terrain file") from exc
    if latitude[0] > latitude[-1]:
        elevation, latitude = elevation[::-1], latitude[::-1]
    longitude = (longitude.astype(float) + 180.0) % 360.0 - 180.0
    return elevation.astype(float), longitude, latitude.astype(float)


def default_terrain(extent: Sequence[float] = PAPER_EXTENT) -> Terrain:
    """The shelf-and-slope block (28 × 28 cells, metres) stretched over ``extent``."""
    elevation = topobathy()[0]
    return Terrain(elevation[SEAFLOOR_BLOCK], extent, name=NAME)
