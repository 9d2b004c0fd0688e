"""The published map: a regular grid of cells over the workspace and the model's layers on it.

The grid is in the ``map`` frame, cells of ``resolution`` metres, row 0 the southern-most and
column 0 the western-most (the storage order of ``nav_msgs/OccupancyGrid``). Layers are
(rows, cols) arrays sampled at the cell centres; cells outside the workspace's free area can
be left out (NaN), so that the map shows the area the robot may survey and costs no
predictions elsewhere.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from poam_ros.models import OnlineSparseGP
from poam_ros.params import ConfigError, Params, param
from poam_ros.workspace import Extent, Workspace

# A grid this large would take minutes to predict and hundreds of MB per message.
MAX_CELLS = 4_000_000


@dataclass
class MapGridConfig(Params):
    """Where the map is sampled."""

    resolution: float = param(2.0, "edge length of a map cell; every map predicts every "
                                   "cell, so its cost grows with 1 / resolution^2",
                              unit="m", low=1e-3)
    extent: list = param([], "xmin, xmax, ymin, ymax of the grid in the map frame; empty: "
                             "the workspace bounds", unit="m")
    clip_to_workspace: bool = param(True, "leave cells outside the workspace's free area "
                                          "empty (NaN) instead of predicting there")

    def validate(self) -> None:
        if not self.extent:
            return
        if len(self.extent) != 4 or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                        or not math.isfinite(v) for v in self.extent):
            raise ConfigError(f"MapGridConfig.extent must be empty or 4 finite numbers "
                              f"xmin, xmax, ymin, ymax, got {self.extent!r}")
        self.extent = [float(v) for v in self.extent]
        xmin, xmax, ymin, ymax = self.extent
        if not (xmin < xmax and ymin < ymax):
            raise ConfigError(f"MapGridConfig.extent needs xmin < xmax and ymin < ymax, got "
                              f"{self.extent}")


class MapGrid:
    """Cell centres of a (rows, cols) grid covering ``extent`` with square cells.

    ``cols = ceil((xmax - xmin) / resolution)`` (at least 1), likewise ``rows``; the grid
    starts at (xmin, ymin), so it covers the extent and overshoots the east and north edges
    by less than one cell. ``inside`` (rows, cols) marks the cells whose centre lies in the
    workspace's free area (all True without a workspace).
    """

    def __init__(self, extent: Extent | tuple, resolution: float,
                 workspace: Workspace | None = None) -> None:
        xmin, xmax, ymin, ymax = (float(v) for v in extent)
        if not (resolution > 0 and math.isfinite(resolution)):
            raise ValueError(f"resolution must be a positive number, got {resolution}")
        cols = max(1, math.ceil((xmax - xmin) / resolution - 1e-9))
        rows = max(1, math.ceil((ymax - ymin) / resolution - 1e-9))
        if rows * cols > MAX_CELLS:
            raise ValueError(f"a {rows} x {cols} grid exceeds {MAX_CELLS} cells: use a "
                             f"coarser resolution than {resolution} m")
        self.resolution = float(resolution)
        self.origin = np.array([xmin, ymin])  # south-west corner of cell (0, 0)
        self.x = xmin + (np.arange(cols) + 0.5) * resolution  # (cols,) cell-centre eastings
        self.y = ymin + (np.arange(rows) + 0.5) * resolution  # (rows,) cell-centre northings
        grid_x, grid_y = np.meshgrid(self.x, self.y)
        self.points = np.column_stack([grid_x.ravel(), grid_y.ravel()])  # (rows * cols, 2)
        inside = workspace.contains(self.points) if workspace is not None else \
            np.ones(len(self.points), dtype=bool)
        self.inside = inside.reshape(rows, cols)

    @classmethod
    def from_config(cls, config: MapGridConfig, workspace: Workspace) -> MapGrid:
        """The grid ``config`` describes; the workspace gives the default extent and the mask."""
        extent = config.extent or workspace.bounds
        return cls(extent, config.resolution, workspace if config.clip_to_workspace else None)

    @property
    def shape(self) -> tuple[int, int]:
        return self.inside.shape

    def coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """Cell-centre x and y, each (rows, cols)."""
        return self.points[:, 0].reshape(self.shape), self.points[:, 1].reshape(self.shape)


@dataclass
class MapLayers:
    """The model's map on a grid, each layer (rows, cols) with NaN outside the grid's mask.

    ``mean`` and ``std`` are in target units (elevation, metres), ``lengthscale`` in metres
    (None when not asked for); ``inducing`` (M, 2) are the inducing inputs [m] and
    ``inducing_mean`` (M,) the predicted mean (elevation) there; ``predict_time`` is the
    wall-clock seconds all of it took. A multi-channel model's other channels (the ingest's,
    in order) are ``channel_means`` and ``channel_stds``, (C, rows, cols) in their units
    (C = 0 for one channel; NaN too where a channel is not in the model yet).
    """

    mean: np.ndarray
    std: np.ndarray
    lengthscale: np.ndarray | None
    inducing: np.ndarray
    inducing_mean: np.ndarray
    predict_time: float
    channel_means: np.ndarray | None = None
    channel_stds: np.ndarray | None = None

    def __post_init__(self) -> None:
        empty = np.empty((0, *np.shape(self.mean)))
        self.channel_means = empty if self.channel_means is None else self.channel_means
        self.channel_stds = empty if self.channel_stds is None else self.channel_stds


def predict_map(model: OnlineSparseGP, grid: MapGrid, include_noise: bool = False,
                lengthscale: bool = True) -> MapLayers:
    """Predictive mean and standard deviation (and the learned lengthscale) on ``grid``,
    and the mean at the inducing inputs.

    ``include_noise`` adds the observation noise to the standard deviation (the spread of a
    new measurement rather than of the field). Only cells inside the grid's mask are
    predicted, in one call with the inducing inputs: a prediction has a fixed cost per
    call besides its cost per point. Raises the model's errors (not ready, numerical
    failure).
    """
    start = time.perf_counter()
    inside = grid.inside.ravel()
    points = grid.points[inside]
    inducing = model.inducing_inputs
    mean, std = model.predict(np.concatenate([points, inducing]), include_noise=include_noise)
    mean, std = mean.reshape(len(mean), -1), std.reshape(len(std), -1)  # (N, D)
    channels = mean.shape[1]
    layers = np.full((2 * channels + 1, len(inside)), np.nan)
    layers[:channels, inside] = mean[:len(points)].T
    layers[channels:2 * channels, inside] = std[:len(points)].T
    if lengthscale:
        layers[-1, inside] = model.lengthscale_map(points)
    shaped = layers.reshape(len(layers), *grid.shape)
    return MapLayers(shaped[0], shaped[channels], shaped[-1] if lengthscale else None,
                     inducing, mean[len(points):, 0], time.perf_counter() - start,
                     shaped[1:channels], shaped[channels + 1:2 * channels])
