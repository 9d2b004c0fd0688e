"""The live view over a real WebSocket: a client speaking the Foxglove protocol (``websockets``
and the schemas' own protobuf descriptors) watches a small ROS-free mission."""

from __future__ import annotations

import base64
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("websockets")
pytest.importorskip("google.protobuf")
from poam_ros.geo import GeoConfig, GeoReference  # noqa: E402
from poam_ros.mission import Mission  # noqa: E402
from poam_ros.view import frames, topics  # noqa: E402
from poam_ros.view.config import ViewConfig  # noqa: E402
from poam_ros.view.mission_feed import MissionFeed  # noqa: E402
from poam_ros.view.server import LiveView  # noqa: E402
from tests.core.test_mission import small_setup  # noqa: E402
from tests.core.view.foxglove_client import (  # noqa: E402
    SUBPROTOCOL,
    grid_values,
    watch_in_thread,
)

TIMEOUT = 60.0  # s for the last frame to arrive


def last_status(watcher) -> dict:
    return watcher.received[topics.STATUS][-1]


@pytest.fixture
def setup():
    s = small_setup()  # the mission tests' small mission, with a geodetic anchor
    s.geo = GeoConfig(anchor="latlon", origin_latitude=43.5, origin_longitude=-70.2)
    return s


def test_a_client_watches_the_mission_live(setup):
    mission = Mission(setup)
    georeference = GeoReference.from_config(setup.geo)
    with LiveView(ViewConfig(port=0), np.reshape(setup.workspace.vertices, (-1, 2)),
                  georeference, std_scale_max=20.0) as view:
        feed = MissionFeed(view, mission, cells=24)
        watcher, done, client = watch_in_thread(view.port)
        while not watcher.channels:  # the client is in before the mission starts
            client.join(0.05)
        result = mission.run(feed)
        final_map = mission.loop.layers(feed.grid, lengthscale=False)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and not any(
                status["samples"] == result.final.num_samples
                for status in watcher.received.get(topics.STATUS, [])):
            client.join(0.1)
        done.set()
        client.join(TIMEOUT)
    assert not client.is_alive() and not watcher.errors

    advertised = {channel["topic"]: channel for channel in watcher.channels.values()}
    assert advertised[topics.MEAN]["schemaName"] == "foxglove.Grid"
    assert advertised[topics.STATUS]["encoding"] == "json"
    assert {topics.POSE, topics.FIX, topics.SCENE, topics.STD, topics.INDUCING} <= \
        set(advertised)
    # the last map shown is the mission's final map, to float32, on fixed colour ranges
    mean, std = (grid_values(watcher.received[topic][-1]) for topic in (topics.MEAN, topics.STD))
    np.testing.assert_allclose(mean, final_map.mean.astype(np.float32), equal_nan=True)
    np.testing.assert_allclose(std, final_map.std.astype(np.float32), equal_nan=True)
    assert view.ranges[topics.STD] == (0.0, 20.0)
    assert last_status(watcher)["colour_ranges"][topics.STD] == [0.0, 20.0]
    pose = watcher.received[topics.POSE][-1].pose.position
    assert (pose.x, pose.y) == pytest.approx(tuple(mission.auv.pose[:2]))
    fix = watcher.received[topics.FIX][-1]
    lon, lat = georeference.to_lonlat(pose.x, pose.y)
    assert (fix.latitude, fix.longitude) == pytest.approx((float(lat), float(lon)))
    plan = next(entity for entity in watcher.received[topics.SCENE][-1].entities
                if entity.id == "plan")
    goal = plan.lines[0].points[-1]
    assert (goal.x, goal.y) == pytest.approx(tuple(mission.last_plan[-1][:2]))
    states = [status["state"] for status in watcher.received[topics.STATUS]]
    assert states[0] == "pilot" and "adaptive" in states and states[-1] == "done"
    last = watcher.received[topics.STATUS][-1]
    assert last["samples"] == result.final.num_samples and last["mean_std"] > 0
    assert last["mission"]["ended_by"] == "samples"  # the budget that ended it


def half_a_message(port: int) -> None:
    """Open a Foxglove WebSocket by hand, send the first bytes of a masked text frame that
    announces 100 bytes, and drop the connection."""
    key = base64.b64encode(b"poam-ros-viewkey").decode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                     f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n"
                     f"\r\n").encode())
        assert raw.recv(4096).startswith(b"HTTP/1.1 101")
        raw.sendall(bytes([0x81, 0x80 | 100]) + b"mask" + b'{"op": "subs')


def test_the_view_survives_a_client_that_drops_mid_message():
    with LiveView(ViewConfig(port=0)) as view:
        half_a_message(view.port)
        view.show(frames.ViewFrame(stamp=1.0, pose=(1.0, 2.0, 0.0, 0.0)))
        watcher, done, client = watch_in_thread(view.port)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and topics.POSE not in watcher.received:
            view.show(frames.ViewFrame(stamp=2.0, pose=(3.0, 4.0, 0.0, 0.0)))
            client.join(0.1)
        done.set()
        client.join(TIMEOUT)
    assert watcher.received[topics.POSE][-1].pose.position.x == 3.0


def test_a_busy_view_drops_frames_and_never_blocks(monkeypatch):
    with LiveView(ViewConfig(port=0)) as view:
        release, stuck = threading.Event(), threading.Event()

        def slow_log(frame):  # a view that cannot keep up
            stuck.set()
            release.wait(TIMEOUT)
            stuck.clear()

        monkeypatch.setattr(view, "_log", slow_log)
        view.show(frames.ViewFrame(stamp=0.0))
        assert stuck.wait(TIMEOUT)
        for stamp in range(1, 6):
            view.show(frames.ViewFrame(stamp=float(stamp)))
            assert stuck.is_set()  # handed over while the view was still busy
        view.show(frames.ViewFrame(stamp=6.0, pose=(1.0, 2.0, 0.0, 0.5)))
        view.show(frames.ViewFrame(stamp=7.0, status={"state": "pilot"}))
        waiting = view._slots[""]
        assert view.frames_dropped == 6 and waiting.stamp == 7.0
        assert waiting.pose == (1.0, 2.0, 0.0, 0.5)  # kept: the newer frame had no pose
        release.set()


def test_the_last_frame_sent_carries_the_newest_status(monkeypatch):
    """Frames wait per vehicle, each with the status as it was shown; a vehicle's newer frame
    merged into its waiting one is sent after the other vehicles' older frames, so that the
    last status a client reads is the newest (a fleet's ``done`` after a pose's ``adaptive``)."""
    with LiveView(ViewConfig(port=0), vehicles=("/auv0", "/auv1")) as view:
        release, stuck, sent = threading.Event(), threading.Event(), []

        def slow_log(frame):
            sent.append((frame.vehicle, frame.status.get("state")))
            stuck.set()
            release.wait(TIMEOUT)

        monkeypatch.setattr(view, "_log", slow_log)
        view.show(frames.ViewFrame(stamp=0.0, status={"state": "pilot"}))
        assert stuck.wait(TIMEOUT)
        pose = (1.0, 2.0, 0.0, 0.0)
        view.show(frames.ViewFrame(stamp=1.0, vehicle="/auv0", pose=pose,
                                   status={"state": "adaptive"}))
        view.show(frames.ViewFrame(stamp=2.0, vehicle="/auv1", pose=pose,
                                   status={"state": "adaptive"}))
        view.show(frames.ViewFrame(stamp=3.0, vehicle="/auv0", status={"state": "done"}))
        release.set()
    assert sent == [("", "pilot"), ("/auv1", "adaptive"), ("/auv0", "done")]
