"""The embedded bathymetry (:mod:`poam_ros.sim.default_terrain`, matplotlib's
``topobathy.npz``) at its true place and size on the Earth: the default world of the
georeferenced survey.

The sample grid is regular in web Mercator (EPSG:3857), so it is written as an in-memory
EPSG:3857 GeoTIFF and read like any raster (:func:`poam_ros.geo.raster.geo_terrain_from_dataset`),
cut to a survey box through the map frame's anchor, in metres.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from poam_ros.geo.georeference import GeoReference
from poam_ros.geo.raster import GeoTerrain, geo_terrain_from_dataset
from poam_ros.sim.default_terrain import NAME, topobathy


@contextmanager
def topobathy_dataset() -> Iterator:
    """The sample grid as an open in-memory GeoTIFF in EPSG:3857, first row north.

    The cell size is the mean Mercator spacing of the longitudes (their centres are 2′
    apart); the latitudes' Mercator spacing agrees with it to 0.1 %
    (``tests/sim/test_default_terrain.py``)."""
    import pyproj
    from affine import Affine
    from rasterio.io import MemoryFile

    elevation, longitude, latitude = topobathy()
    to_mercator = pyproj.Transformer.from_crs(4326, 3857, always_xy=True)
    x = to_mercator.transform(longitude, np.full_like(longitude, latitude[0]))[0]
    y = to_mercator.transform(np.full_like(latitude, longitude[0]), latitude)[1]
    cell = (x[-1] - x[0]) / (x.size - 1)
    west, north = x[0] - cell / 2, y[0] - cell / 2 + latitude.size * cell
    with MemoryFile() as memory, memory.open(
            driver="GTiff", width=longitude.size, height=latitude.size, count=1,
            dtype="float32", crs="EPSG:3857",
            transform=Affine(cell, 0.0, west, 0.0, -cell, north)) as dataset:
        dataset.write(elevation[::-1].astype(np.float32), 1)
        yield dataset


def default_geo_terrain(georeference: GeoReference, area=None, *,
                        resolution: float | None = None) -> GeoTerrain:
    """The sample grid at its true place and size, cut to ``area`` (a lon/lat box or polygon,
    as :func:`poam_ros.geo.load_geo_terrain` takes; None: the whole grid) in the map frame of
    ``georeference``; ``resolution`` m per cell, None keeps the grid's 2.5 km spacing."""
    with topobathy_dataset() as dataset:
        return geo_terrain_from_dataset(dataset, georeference, area, resolution=resolution,
                                        name=NAME)
