"""The viewer node over real DDS: the stack's topics in, the Foxglove view out to a real
WebSocket client on loopback."""


import json

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)
pytest.importorskip("websockets")
pytest.importorskip("google.protobuf")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.diagnostics import ScoreStatus  # noqa: E402
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


def mission_state(state: str) -> DiagnosticStatus:
    return DiagnosticStatus(name="planner: mission", message=state,
                            values=[KeyValue(key="reason", value=f"{state} for a test")])


def test_a_fleet_viewer_shows_every_vehicle_apart(start_node, make_node, spin_until):
    """With ``vehicles``, each vehicle's odometry, plan and mission state come from its
    namespace and go out on its own pose channel, frames and scene entities; the status holds
    each vehicle's state and the fleet's."""
    vehicles = ["/auv0", "/auv1"]
    viewer = start_node(ViewerNode, **{"view.port": 0, "vehicles": vehicles,
                                       "trail_spacing": 0.0})
    stack = make_node("viewer_test_fleet")
    odoms = [stack.create_publisher(Odometry, f"{ns}/odom", qos.ODOMETRY) for ns in vehicles]
    plans = [stack.create_publisher(Path, f"{ns}/plan", qos.LATCHED) for ns in vehicles]
    states = [stack.create_publisher(DiagnosticStatus, f"{ns}/mission/state", qos.LATCHED)
              for ns in vehicles]
    watcher, done, client = watch_in_thread(viewer.view.port)
    poses = [f"{ns}{topics.POSE}" for ns in vehicles]
    try:
        assert spin_until(lambda: set(poses) <= {c["topic"] for c in watcher.channels.values()},
                          viewer, stack, timeout=TIMEOUT)
        for k, (odom, plan, state) in enumerate(zip(odoms, plans, states)):
            plan.publish(cv.path_from_waypoints(stamped(2.0), np.array([[0.0, 0.0],
                                                                        [5.0 + k, 5.0]])))
            state.publish(mission_state("done" if k == 0 else "pilot"))
            for t in range(3):
                odom.publish(cv.odometry_from_state(stamped(3.0 + t), "base_link",
                                                    (10.0 * k + t, 1.0), 0.0))

        def entities() -> set[str]:
            return {entity.id for update in watcher.received.get(topics.SCENE, [])
                    for entity in update.entities}

        def shown() -> bool:
            status = (watcher.received.get(topics.STATUS) or [{}])[-1]
            return (all(watcher.received.get(topic) and
                        watcher.received[topic][-1].pose.position.x == 10.0 * k + 2
                        for k, topic in enumerate(poses))
                    and {"auv0/trail", "auv0/plan", "auv1/trail", "auv1/plan"} <= entities()
                    and len(status.get("vehicles", {})) == 2)
        assert spin_until(shown, viewer, stack, timeout=TIMEOUT)
    finally:
        done.set()
        client.join(TIMEOUT)
    assert topics.POSE not in watcher.received  # no single vehicle's pose
    plans_shown = {entity.id: entity for update in watcher.received[topics.SCENE]
                   for entity in update.entities}
    assert plans_shown["auv1/plan"].lines[0].points[-1].x == 6.0
    colours = {plans_shown[f"{ns.strip('/')}/plan"].lines[0].color.r for ns in vehicles}
    assert len(colours) == 2  # each vehicle its own colour
    frames_seen = {transform.child_frame_id for message in watcher.received[topics.TRANSFORMS]
                   for transform in message.transforms}
    assert {"auv0/base_link", "auv1/base_link"} <= frames_seen
    status = watcher.received[topics.STATUS][-1]
    assert status["state"] == "pilot"  # the fleet flies while one vehicle does
    assert {ns: s["state"] for ns, s in status["vehicles"].items()} == {"/auv0": "done",
                                                                       "/auv1": "pilot"}
    assert not watcher.errors


def test_a_viewer_that_stops_shows_the_last_state_its_readers_hold(ros_context, make_node,
                                                                   spin_until):
    """A mission's end published just before the viewer stops reaches the client: the
    viewer takes what its readers hold before it closes (``poam-ros sim`` stops it last)."""
    from rclpy.parameter import Parameter

    viewer = ViewerNode(context=ros_context, parameter_overrides=[Parameter("view.port", value=0)])
    stack = make_node("viewer_test_end")
    state = stack.create_publisher(DiagnosticStatus, "mission/state", qos.LATCHED)
    watcher, done, client = watch_in_thread(viewer.view.port)
    try:
        assert spin_until(lambda: topics.STATUS in {c["topic"] for c in watcher.channels.values()},
                          viewer, stack, timeout=TIMEOUT)
        state.publish(mission_state("adaptive"))

        def last_state() -> str | None:
            return (watcher.received.get(topics.STATUS) or [{}])[-1].get("state")
        assert spin_until(lambda: last_state() == "adaptive", viewer, stack, timeout=TIMEOUT)
        state.publish(mission_state("done"))  # the viewer spins no more
        viewer.destroy_node()
        assert spin_until(lambda: last_state() == "done", stack, timeout=TIMEOUT)
    finally:
        done.set()
        client.join(TIMEOUT)


def test_scores_after_the_mission_ends_reach_the_status(start_node, make_node, spin_until):
    """The monitor's and mapper's last diagnostics can come after the mission's ``done``,
    with nothing else left to show: the status goes out for them alone."""
    viewer = start_node(ViewerNode, **{"view.port": 0})
    stack = make_node("viewer_test_scores")
    state = stack.create_publisher(DiagnosticStatus, "mission/state", qos.LATCHED)
    diagnostics = stack.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
    watcher, done, client = watch_in_thread(viewer.view.port)

    def last() -> dict:
        return (watcher.received.get(topics.STATUS) or [{}])[-1]
    try:
        assert spin_until(lambda: topics.STATUS in {c["topic"] for c in watcher.channels.values()},
                          viewer, stack, timeout=TIMEOUT)
        state.publish(mission_state("done"))
        assert spin_until(lambda: last().get("state") == "done", viewer, stack, timeout=TIMEOUT)
        score = ScoreStatus(epoch=7, samples=650, smse=0.03, msll=-1.2)
        diagnostics.publish(DiagnosticArray(status=[cv.diagnostic_status(
            "monitor", DiagnosticStatus.OK, "scores", score)]))
        assert spin_until(lambda: last().get("epoch") == 7, viewer, stack, timeout=TIMEOUT)
    finally:
        done.set()
        client.join(TIMEOUT)
    assert (last()["state"], last()["smse"]) == ("done", pytest.approx(0.03))
