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

from poam_ros.mapping.binary import BINARY_SCALES, binary_channels, binary_layers
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
    std_scale_max: float = param(50.0, "the standard deviation that map/std's cell value 100 "
                                       "stands for: every map's std grid shows 0 .. this "
                                       "linearly (clipped above), so a value means the same "
                                       "on every map", unit="m", low=1e-9)
    channel_scales: list = param([], "per channel besides the depth, in the ingest's order, "
                                     "three numbers in the channel's unit: the low and high "
                                     "that its mean grid's 0 and 100 stand for, and the std "
                                     "that its std grid's 100 stands for; empty: each "
                                     "channel's default (temperature: -3, 40, 5 degC; "
                                     "seabed_class: its probability 0, 1 and entropy "
                                     "ln 2 nats)")

    def validate(self) -> None:
        if len(self.channel_scales) % 3 or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                for v in self.channel_scales):
            raise ConfigError(f"MapGridConfig.channel_scales must be finite numbers, three per "
                              f"channel (mean low, mean high, std max), got "
                              f"{self.channel_scales!r}")
        self.channel_scales = [float(v) for v in self.channel_scales]
        for low, high, std_max in zip(*[iter(self.channel_scales)] * 3):
            if not (low < high and std_max > 0):
                raise ConfigError(f"MapGridConfig.channel_scales needs mean low < mean high "
                                  f"and std max > 0 per channel, got {(low, high, std_max)}")
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


#: the fixed grid scales (mean low, mean high, std max) of channels named by their quantity:
#: degC, the ingest's plausibility limits; a binary channel's probability and entropy [nats]
CHANNEL_SCALES = {"temperature": (-3.0, 40.0, 5.0),
                  "seabed_class": (*BINARY_SCALES[0], BINARY_SCALES[1][1])}


@dataclass(frozen=True)
class GridScales:
    """What the cell values 0 and 100 of the published occupancy grids stand for, fixed per
    configuration so that a colour means the same on every map: ``std`` (low, high) of the
    depth's std grid [m]; ``channels`` the (mean range, std range) of each further channel,
    in its unit."""

    std: tuple[float, float]
    channels: tuple[tuple[tuple[float, float], tuple[float, float]], ...] = ()

    @classmethod
    def from_config(cls, config: MapGridConfig, channels: tuple[str, ...] = ()) -> GridScales:
        """``config``'s scales for ``channels`` (the ingest's, besides the depth); raises
        ``ConfigError`` for a channel with neither a configured nor a default scale."""
        given = list(zip(*[iter(config.channel_scales)] * 3))
        if given and len(given) != len(channels):
            raise ConfigError(f"grid.channel_scales gives {len(given)} channel(s) for the "
                              f"{len(channels)} channel(s) {list(channels)}")
        if not given:
            missing = [name for name in channels if name not in CHANNEL_SCALES]
            if missing:
                raise ConfigError(f"grid.channel_scales: no default scale for channel(s) "
                                  f"{missing}; give mean low, mean high, std max for each "
                                  f"channel")
            given = [CHANNEL_SCALES[name] for name in channels]
        return cls((0.0, config.std_scale_max),
                   tuple(((low, high), (0.0, std_max)) for low, high, std_max in given))


class MapGrid:
    """Cell centres of a (rows, cols) grid covering ``extent`` with square cells.

    ``cols = ceil((xmax - xmin) / resolution)`` (at least 1), likewise ``rows``; the grid
    starts at (xmin, ymin), so it covers the extent and overshoots the east and north edges
    by less than one cell. ``inside`` (rows, cols) marks the cells whose centre lies in the
    workspace's free area (all True without a workspace); ``scales`` are what its published
    occupancy grids' values stand for (default: :class:`MapGridConfig`'s).
    """

    def __init__(self, extent: Extent | tuple, resolution: float,
                 workspace: Workspace | None = None, scales: GridScales | None = None) -> None:
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
        self.scales = scales or GridScales.from_config(MapGridConfig())

    @classmethod
    def from_config(cls, config: MapGridConfig, workspace: Workspace,
                    channels: tuple[str, ...] = ()) -> MapGrid:
        """The grid ``config`` describes for the samples' ``channels`` (besides the depth);
        the workspace gives the default extent and the mask."""
        extent = config.extent or workspace.bounds
        return cls(extent, config.resolution, workspace if config.clip_to_workspace else None,
                   GridScales.from_config(config, tuple(channels)))

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
    (C = 0 for one channel; NaN too where a channel is not in the model yet). A binary
    channel's (a Bernoulli one, :mod:`~poam_ros.mapping.binary`) are its probability
    P(y = 1) and that probability's entropy [nats], not its latent's mean and std.
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
    and the mean at the inducing inputs; a binary channel's probability and entropy.

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
    binary = np.flatnonzero(binary_channels(model)[1:]) + 1  # the ingest's binary channels
    layers[binary], layers[channels + binary] = binary_layers(layers[binary],
                                                              layers[channels + binary])
    if lengthscale:
        layers[-1, inside] = model.lengthscale_map(points)
    shaped = layers.reshape(len(layers), *grid.shape)
    return MapLayers(shaped[0], shaped[channels], shaped[-1] if lengthscale else None,
                     inducing, mean[len(points):, 0], time.perf_counter() - start,
                     shaped[1:channels], shaped[channels + 1:2 * channels])
