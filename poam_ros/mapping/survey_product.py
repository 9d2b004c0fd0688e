"""The survey product: a model's map on a grid as a georeferenced, cloud-optimised GeoTIFF.

One route for every writer of the product (``poam-ros export``, ``poam-ros remap`` and the
mapper's ``~/export``), so that the three files of one model and grid are the same: the
map the mapper publishes (:meth:`MappingLoop.layers`, with the lengthscale always), plus the
soundings the model holds counted per cell. Written by
:func:`poam_ros.geo.export.export_map_product` in the anchor's CRS, with its vertical
reference; NaN (nodata) outside the grid's mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from poam_ros.geo.export import export_map_product, sample_density
from poam_ros.geo.georeference import GeoReference
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.models import OnlineSparseGP

#: The product's file name beside a remap's other outputs.
PRODUCT_NAME = "map.tif"


def product_layers(model: OnlineSparseGP, grid: MapGrid, include_noise: bool = False,
                   channels: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """``mean`` and ``std`` [m], the learned ``lengthscale`` [m] and ``sample_density``
    (soundings the model holds per cell), each (rows, cols), row 0 south, NaN outside the
    grid's mask; with the samples' ``channels`` (the ingest's) each one's ``mean_<channel>``
    and ``std_<channel>`` as the ``map`` cloud has them (a binary channel's probability in
    0 … 1 and its entropy in 0 … ln 2 nats). ``include_noise``: the std of a new measurement
    rather than of the field (the mapper's ``std_includes_noise``). Raises the model's errors
    (not ready, numerical failure)."""
    layers = MappingLoop(model).layers(grid, include_noise, lengthscale=True)
    density = sample_density(model.buffer.x, grid.origin, grid.resolution, grid.shape)
    density[~grid.inside] = np.nan
    product = {"mean": layers.mean, "std": layers.std, "lengthscale": layers.lengthscale,
               "sample_density": density}
    for name, mean, std in zip(channels, layers.channel_means, layers.channel_stds):
        product[f"mean_{name}"], product[f"std_{name}"] = mean, std
    return product


def export_map(path, model: OnlineSparseGP, grid: MapGrid, georeference: GeoReference,
               include_noise: bool = False, channels: Sequence[str] = ()) -> Path:
    """Write :func:`product_layers` of ``model`` on ``grid`` (with the samples' ``channels``)
    at ``path`` (a COG in ``georeference``'s CRS); raises :class:`~poam_ros.geo.GeoError`
    naming the path when it cannot be written, and the model's errors."""
    return export_map_product(path, product_layers(model, grid, include_noise, channels),
                              grid.origin, grid.resolution, georeference)
