"""The viewer node over real DDS: the stack's topics in, the Foxglove view out to a real
WebSocket client on loopback."""


import json

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)
pytest.importorskip("websockets")
pytest.importorskip("google.protobuf")

from nav_msgs.msg import Odometry, Path  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.mapping.map_grid import MapGrid  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.viewer_node import ViewerNode  # noqa: E402
from poam_ros.view import topics  # noqa: E402
from tests.core.view.foxglove_client import grid_values, watch_in_thread  # noqa: E402

TIMEOUT = 30.0


def stamped(seconds: float) -> Header:
    header = Header(frame_id="map")
    header.stamp.sec = int(seconds)
    return header


def test_the_viewer_shows_what_the_stack_publishes(start_node, make_node, spin_until):
    viewer = start_node(ViewerNode, **{"view.port": 0, "std_scale_max": 30.0,
                                       "channels": ["temperature"], "geo.anchor": "latlon",
                                       "geo.origin_latitude": 43.5,
                                       "geo.origin_longitude": -70.2,
                                       "workspace.vertices": [0.0, 0.0, 8.0, 0.0, 8.0, 6.0]})
    stack = make_node("viewer_test_stack")
    odom = stack.create_publisher(Odometry, "odom", qos.ODOMETRY)
    plan = stack.create_publisher(Path, "plan", qos.LATCHED)
    maps = stack.create_publisher(PointCloud2, "map", qos.LATCHED)
    watcher, done, client = watch_in_thread(viewer.view.port)
    try:
        assert spin_until(lambda: len(watcher.channels) >= 6, viewer, stack, timeout=TIMEOUT)
        grid = MapGrid((0.0, 8.0, 0.0, 6.0), 2.0)
        x, y = grid.coordinates()
        mean, std = -50.0 + x * y, 1.0 + 0.1 * x
        temperature = np.stack([[4.0 + 0.01 * y, 0.2 + 0 * y]])
        maps.publish(cv.map_to_cloud(stamped(3.0), x, y, mean, std, None, ("temperature",),
                                     temperature[:, 0], temperature[:, 1]))
        plan.publish(cv.path_from_waypoints(stamped(3.0), np.array([[1.0, 1.0], [7.0, 5.0]])))
        for k in range(3):
            odom.publish(cv.odometry_from_state(stamped(4.0 + k), "base_link",
                                                (1.0 + k, 2.0), 0.25))
        assert spin_until(lambda: all(topic in watcher.received for topic in (
            topics.MEAN, topics.STD, "/map/temperature/mean", topics.POSE, topics.SCENE,
            topics.FIX, topics.WORKSPACE)),
            viewer, stack, timeout=TIMEOUT)
        assert spin_until(lambda: watcher.received[topics.POSE][-1].pose.position.x == 3.0,
                          viewer, stack, timeout=TIMEOUT)
    finally:
        done.set()
        client.join(TIMEOUT)
    np.testing.assert_allclose(grid_values(watcher.received[topics.MEAN][-1]),
                               mean.astype(np.float32))
    np.testing.assert_allclose(grid_values(watcher.received[topics.STD][-1]),
                               std.astype(np.float32))
    np.testing.assert_allclose(grid_values(watcher.received["/map/temperature/mean"][-1]),
                               temperature[0, 0].astype(np.float32))
    shown = watcher.received[topics.MEAN][-1]
    assert (shown.pose.position.x, shown.pose.position.y, shown.cell_size.x) == (0.0, 0.0, 2.0)
    plans = [entity for update in watcher.received[topics.SCENE] for entity in update.entities
             if entity.id == "plan"]
    assert (plans[-1].lines[0].points[-1].x, plans[-1].lines[0].points[-1].y) == (7.0, 5.0)
    assert viewer.view.ranges[topics.STD] == (0.0, 30.0)
    fix = watcher.received[topics.FIX][-1]  # the anchor's: the vehicle on the world map
    assert (fix.latitude, fix.longitude) == pytest.approx((43.5, -70.2), abs=1e-3)
    outline = json.loads(watcher.received[topics.WORKSPACE][-1].geojson)
    assert len(outline["features"][0]["geometry"]["coordinates"][0]) == 4  # closed triangle
    assert not watcher.errors
