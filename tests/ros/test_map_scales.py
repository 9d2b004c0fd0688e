"""The published occupancy grids' fixed scales: a cell value means the same on every map."""

import numpy as np
import pytest
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.mapping.map_grid import GridScales, MapGrid, MapGridConfig, MapLayers
from poam_ros.params import ConfigError
from poam_ros.ros.map_publishers import MapPublishers

EXTENT = (0.0, 4.0, 0.0, 2.0)


@pytest.fixture
def lifecycle_node(ros_context, nodes_to_destroy):
    """``lifecycle_node(name)``: a lifecycle node (the mapper's publishers are lifecycle
    publishers), destroyed after the test."""
    from rclpy.lifecycle import Node as LifecycleNode

    def make(name: str) -> LifecycleNode:
        nodes_to_destroy.append(LifecycleNode(name, context=ros_context))
        return nodes_to_destroy[-1]

    return make


def layers(std: np.ndarray, channel_mean=None, channel_std=None) -> MapLayers:
    return MapLayers(mean=np.zeros_like(std), std=std, lengthscale=None,
                     inducing=np.empty((0, 2)), inducing_mean=np.empty(0), predict_time=0.0,
                     channel_means=None if channel_mean is None else channel_mean[None],
                     channel_stds=None if channel_std is None else channel_std[None])


def test_the_same_std_gives_the_same_cells_on_two_maps(lifecycle_node):
    publishers = MapPublishers(lifecycle_node("scales_probe"))
    grid = MapGrid(EXTENT, 1.0, scales=GridScales((0.0, 20.0)))
    calm = np.full(grid.shape, 2.0)
    rough = calm.copy()
    rough[0, 0] = 15.0  # a second map with a larger spread elsewhere
    cells = [msg.grid_to_array(publishers.messages(Header(), grid, layers(std)).std_grid)
             for std in (calm, rough)]
    np.testing.assert_array_equal(cells[0][1:], cells[1][1:])
    assert cells[0][1, 1] == 10.0  # 2 m of 0 .. 20 m
    assert cells[1][0, 0] == 75.0
    over = msg.grid_to_array(publishers.messages(Header(), grid,
                                                 layers(np.full(grid.shape, 99.0))).std_grid)
    assert (over == 100).all()  # clipped above the scale


def test_channel_grids_follow_their_scales(lifecycle_node):
    config = MapGridConfig(resolution=1.0, channel_scales=[0.0, 10.0, 2.0])
    grid = MapGrid(EXTENT, 1.0, scales=GridScales.from_config(config, ("salinity",)))
    publishers = MapPublishers(lifecycle_node("channel_scales_probe"), ("salinity",))
    mean, std = np.full(grid.shape, 5.0), np.full(grid.shape, 0.5)
    mean_grid, std_grid = publishers.messages(Header(), grid,
                                              layers(std, mean, std)).channel_grids
    assert (msg.grid_to_array(mean_grid) == 50).all()
    assert (msg.grid_to_array(std_grid) == 25).all()


def test_scales_are_checked():
    assert GridScales.from_config(MapGridConfig(), ("temperature",)).channels == (
        ((-3.0, 40.0), (0.0, 5.0)),)
    with pytest.raises(ConfigError, match="no default scale for channel"):
        GridScales.from_config(MapGridConfig(), ("methane",))
    with pytest.raises(ConfigError, match="gives 1 channel"):
        GridScales.from_config(MapGridConfig(channel_scales=[0, 1, 1]), ("a", "b"))
    with pytest.raises(ConfigError, match="three per channel"):
        MapGridConfig(channel_scales=[0.0, 1.0])
    with pytest.raises(ConfigError, match="mean low < mean high"):
        MapGridConfig(channel_scales=[2.0, 1.0, 1.0])
