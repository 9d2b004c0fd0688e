"""The mapper's map topics: their publishers and the messages built from a map's layers.

``map`` (the grid as an organised cloud: mean, std, lengthscale; with channels each one's mean
and std), ``map/std`` and each channel's ``map/<channel>/mean`` and ``map/<channel>/std``
(occupancy grids on the grid's fixed scales, :class:`~poam_ros.mapping.map_grid.GridScales`:
cell value 100 is ``grid.std_scale_max`` metres of std on every map), ``map/inducing``,
``map/memory`` (a ``dual-gp``'s memory) and
``map/evaluation`` (with ``evaluation_grid``: the same model's mean and std of a new
measurement, float64, at the mission's evaluation points, which
:class:`~poam_ros.mission.Mission` scores, so that a monitor with the ground truth scores the
live maps like for like), all latched. Messages are built (:meth:`MapPublishers.messages`, the
costly part) apart from publishing them, so that the mapper builds them outside its locks and
publishes under them; the conversions are :mod:`poam_ros.ros.conversions`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from nav_msgs.msg import OccupancyGrid
from rclpy.lifecycle import Node as LifecycleNode
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header

from poam_ros.mapping.map_grid import MapGrid, MapLayers
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos


@dataclass
class MapMessages:
    """One map's messages, ready to publish."""

    cloud: PointCloud2
    std_grid: OccupancyGrid
    channel_grids: list[OccupancyGrid]  # each channel's mean, then std, in channel order
    inducing: PointCloud2
    memory: PointCloud2 | None  # a dual-gp's memory; None for other methods


class MapPublishers:
    """The latched map topics of ``node`` for the samples' ``channels``: lifecycle
    publishers, which publish only while the node is active (:mod:`poam_ros.ros.managed`)."""

    def __init__(self, node: LifecycleNode, channels: Sequence[str] = ()) -> None:
        self._channels = tuple(channels)
        publisher = node.create_lifecycle_publisher
        self._map = publisher(PointCloud2, "map", qos.LATCHED)
        self._std = publisher(OccupancyGrid, "map/std", qos.LATCHED)
        # map/<channel>/mean and map/<channel>/std of each channel, in order
        self._channel_grids = [publisher(OccupancyGrid, f"map/{name}/{layer}", qos.LATCHED)
                               for name in self._channels for layer in ("mean", "std")]
        self._inducing = publisher(PointCloud2, "map/inducing", qos.LATCHED)
        self._memory = publisher(PointCloud2, "map/memory", qos.LATCHED)
        self._evaluation = publisher(PointCloud2, "map/evaluation", qos.LATCHED)

    def messages(self, header: Header, grid: MapGrid, layers: MapLayers,
                 memory: tuple[np.ndarray, np.ndarray] | None = None) -> MapMessages:
        """The messages of ``layers`` predicted on ``grid``; ``memory``: a dual-gp's (xy, z)."""
        grid_x, grid_y = grid.coordinates()

        def occupancy(layer: np.ndarray, value_range: tuple[float, float]) -> OccupancyGrid:
            return cv.grid_from_array(header, layer, resolution=grid.resolution,
                                      origin=grid.origin, value_range=value_range)

        return MapMessages(
            cloud=cv.map_to_cloud(header, grid_x, grid_y, layers.mean, layers.std,
                                  layers.lengthscale, self._channels, layers.channel_means,
                                  layers.channel_stds),
            std_grid=occupancy(layers.std, grid.scales.std),
            channel_grids=[occupancy(layer, value_range)
                           for mean, std, ranges in zip(layers.channel_means, layers.channel_stds,
                                                        grid.scales.channels)
                           for layer, value_range in zip((mean, std), ranges)],
            inducing=cv.inducing_to_cloud(header, layers.inducing, layers.inducing_mean),
            memory=None if memory is None else cv.samples_to_cloud(header, *memory))

    def publish(self, messages: MapMessages) -> None:
        self._map.publish(messages.cloud)
        self._std.publish(messages.std_grid)
        for publisher, channel_grid in zip(self._channel_grids, messages.channel_grids):
            publisher.publish(channel_grid)
        self._inducing.publish(messages.inducing)
        if messages.memory is not None:
            self._memory.publish(messages.memory)

    def evaluation(self, header: Header, points: np.ndarray, mean: np.ndarray,
                   std: np.ndarray) -> PointCloud2:
        """``map/evaluation``'s cloud: the mean and std (P,) or (P, D) at ``points`` (P, 2)."""
        return cv.evaluation_to_cloud(header, points, mean, std, self._channels)

    def publish_evaluation(self, cloud: PointCloud2) -> None:
        self._evaluation.publish(cloud)

    def publish_empty(self, header: Header) -> None:
        """An empty map on every grid topic (``~/reset``): no map until new samples."""
        empty = np.empty((0, 0))
        self._map.publish(cv.map_to_cloud(header, empty, empty, empty, empty))
        empty_grid = cv.grid_from_array(header, empty, resolution=1.0, origin=(0.0, 0.0))
        self._std.publish(empty_grid)
        for publisher in self._channel_grids:
            publisher.publish(empty_grid)
        self._inducing.publish(cv.inducing_to_cloud(header, np.empty((0, 2)), np.empty(0)))
