"""The live view's server: a Foxglove WebSocket on loopback, fed frames off the mission's thread.

:meth:`LiveView.show` only hands a :class:`~poam_ros.view.frames.ViewFrame` over: the newest
frame waits in a one-place slot (a frame the view had no time for is merged into the next and
counted as dropped), and the view's own thread builds the messages and logs them to the
server, which keeps at most ``backlog`` messages per client and drops a slow client's
oldest. The mission never waits for the view or for a client.

Colours: the status message states every grid's fixed colour range (``colour_ranges``, in
the layer's unit: metres for the depth). The std layers span 0 .. the map grid's
``std_scale_max``, as the mapper's ``map/std`` occupancy grid; the mean layers the first
map's range widened by ``margin`` on each side, fixed from then on (or ``mean_range``).
:func:`~poam_ros.view.layout.layout` gives the Foxglove layout with those ranges.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from poam_ros.dependencies import import_optional

foxglove = import_optional("foxglove", "the live view")
from foxglove.channels import (  # noqa: E402
    FrameTransformsChannel,
    GeoJsonChannel,
    GridChannel,
    LocationFixChannel,
    PointCloudChannel,
    PoseInFrameChannel,
    SceneUpdateChannel,
)

from poam_ros.mapping.map_grid import CHANNEL_SCALES  # noqa: E402
from poam_ros.view import frames, topics  # noqa: E402
from poam_ros.view.config import ViewConfig  # noqa: E402
from poam_ros.view.frames import ViewFrame  # noqa: E402

log = logging.getLogger(__name__)

STATUS_SCHEMA = {"type": "object", "properties": {
    "state": {"type": "string"}, "reason": {"type": "string"},
    "samples": {"type": "number"}, "epoch": {"type": "number"},
    "smse": {"type": "number"}, "msll": {"type": "number"}, "mean_std": {"type": "number"},
    "last_update_s": {"type": "number"}, "budgets": {"type": "object"},
    "drops": {"type": "object"}, "frames_dropped": {"type": "number"},
    "colour_ranges": {"type": "object"}, "vehicles": {"type": "object"}}}


class LiveView:
    """The view of one mission: the workspace's outline ``workspace_vertices`` (V, 2) [m] on
    the Map panel with a ``georeference`` (else no location is shown); the map's ``layers``
    (``mean``, ``std``, ``<channel>/mean``, ...), the std layers coloured over
    0 .. ``std_scale_max`` [m] (the map grid's), a channel with a fixed grid scale
    (:data:`~poam_ros.mapping.map_grid.CHANNEL_SCALES`: a seabed class's probability over
    0 .. 1 and its entropy over 0 .. ln 2) on that scale. A fleet's ``vehicles``
    (namespaces, ``/auv0``, ...) each on its own pose and fix channels
    (``/auv0/vehicle/pose``), frames (``auv0/base_link``) and scene entities
    (``auv0/trail``, ``auv0/plan``, in its colour); none: the single vehicle's."""

    def __init__(self, config: ViewConfig, workspace_vertices: np.ndarray | None = None,
                 georeference=None, std_scale_max: float = 50.0,
                 layers: tuple[str, ...] = ("mean", "std"),
                 vehicles: tuple[str, ...] = ()) -> None:
        self.config = config
        self._std_scale_max = std_scale_max
        self._georeference = georeference
        self._context = foxglove.Context()
        self._server = foxglove.start_server(name="poam_ros", host=config.host,
                                             port=config.port, context=self._context,
                                             message_backlog_size=config.backlog)
        self.port = self._server.port
        context = {"context": self._context}
        self._vehicles = {vehicle: k for k, vehicle in enumerate(vehicles)}
        poses = [frames.vehicle_topic(vehicle, topics.POSE) for vehicle in vehicles or ("",)]
        self._channels: dict[str, object] = {
            **{topic: PoseInFrameChannel(topic, **context) for topic in poses},
            topics.TRANSFORMS: FrameTransformsChannel(topics.TRANSFORMS, **context),
            topics.SCENE: SceneUpdateChannel(topics.SCENE, **context),
            topics.SOUNDINGS: PointCloudChannel(topics.SOUNDINGS, **context),
            topics.INDUCING: PointCloudChannel(topics.INDUCING, **context),
            topics.MEMORY: PointCloudChannel(topics.MEMORY, **context),
            topics.STATUS: foxglove.Channel(topics.STATUS, schema=STATUS_SCHEMA,
                                            message_encoding="json", **context)}
        # Every channel is advertised from the start: a client then subscribes once, and no
        # channel appears while the mission runs.
        for name in layers:
            topic = f"/map/{name}"
            self._channels[topic] = GridChannel(topic, **context)
        if georeference is not None:
            for vehicle in vehicles or ("",):
                topic = frames.vehicle_topic(vehicle, topics.FIX)
                self._channels[topic] = LocationFixChannel(topic, **context)
            self._channels[topics.WORKSPACE] = GeoJsonChannel(topics.WORKSPACE, **context)
        # The outline does not change: converted to lon/lat once, re-sent with every pose so
        # that a client who joins late sees it too.
        self._outline = (frames.workspace_geojson(workspace_vertices, georeference)
                         if georeference is not None and workspace_vertices is not None
                         else None)
        self.ranges: dict[str, tuple[float, float]] = {}  # grid topic -> colour range
        self.frames_shown = self.frames_dropped = 0
        self._slots: dict[str, ViewFrame] = {}  # per vehicle, the frame waiting
        self._wake = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._publish, name="live_view", daemon=True)
        self._thread.start()
        log.info("live view on ws://%s:%d", config.host, self.port)

    @property
    def address(self) -> str:
        return f"ws://{self.config.host}:{self.port}"

    def show(self, frame: ViewFrame) -> None:
        """Hand ``frame`` to the view's thread; a frame of the same vehicle still waiting is
        merged into it (:meth:`ViewFrame.merged`) and counted as dropped. The merged frame
        waits behind the other vehicles' frames: each carries the status as it was shown, and
        the last one sent is the newest status a client reads."""
        with self._wake:
            waiting = self._slots.pop(frame.vehicle, None)
            if waiting is not None:
                self.frames_dropped += 1
                frame = waiting.merged(frame)
            self._slots[frame.vehicle] = frame
            self._wake.notify()

    def close(self) -> None:
        """Publish the frame still waiting, then stop the thread and the server."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._thread.join(timeout=10.0)
        self._server.stop()

    def __enter__(self) -> LiveView:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _publish(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._slots or self._closing)
                waiting, self._slots = list(self._slots.values()), {}
            for frame in waiting:
                try:
                    self._log(frame)
                except Exception:  # the view must never end the mission
                    log.exception("the live view could not show a frame")
                self.frames_shown += 1
            if not waiting and self._closing:
                return

    def _log(self, frame: ViewFrame) -> None:
        stamp = frame.stamp
        if frame.pose is not None:
            for topic, message in frames.vehicle_messages(stamp, frame.pose, self._georeference,
                                                          frame.vehicle).items():
                self._channels[topic].log(message)
            if self._outline is not None:
                self._channels[topics.WORKSPACE].log(self._outline)
        if frame.trail is not None or frame.plan is not None:
            self._channels[topics.SCENE].log(frames.scene_message(
                stamp, frame.trail, frame.plan, frame.vehicle, self._vehicles.get(frame.vehicle)))
        if frame.soundings is not None:
            self._channels[topics.SOUNDINGS].log(frames.cloud_message(stamp, frame.soundings))
        if frame.inducing is not None:
            self._channels[topics.INDUCING].log(frames.cloud_message(stamp, frame.inducing))
        if frame.memory is not None:
            self._channels[topics.MEMORY].log(frames.cloud_message(stamp, frame.memory))
        status = {**frame.status, "frames_dropped": self.frames_dropped,
                  "colour_ranges": {topic: list(span) for topic, span in self.ranges.items()}}
        if frame.map is not None:
            view = frame.map() if callable(frame.map) else frame.map
            for name, values in view.layers.items():
                self._grid_channel(name, values).log(frames.grid_message(stamp, view, name))
            if np.isfinite(view.layers["std"]).any():
                status["mean_std"] = float(np.nanmean(view.layers["std"]))
        self._channels[topics.STATUS].log(status)

    def _grid_channel(self, name: str, values: np.ndarray) -> GridChannel:
        """Layer ``name``'s channel; its colour range is fixed at its first map."""
        topic = f"/map/{name}"
        if topic not in self.ranges:
            self.ranges[topic] = self._colour_range(name, values)
        return self._channels[topic]

    def _colour_range(self, name: str, values: np.ndarray) -> tuple[float, float]:
        channel, _, layer = name.rpartition("/")
        if channel in CHANNEL_SCALES:  # the map grid's fixed scales: a seabed class's 0 .. 1
            low, high, std_max = CHANNEL_SCALES[channel]
            return (low, high) if layer == "mean" else (0.0, std_max)
        if name.endswith("std"):
            return (0.0, self._std_scale_max)
        if self.config.mean_range and "/" not in name:
            return tuple(float(v) for v in self.config.mean_range)
        finite = values[np.isfinite(values)]
        if not len(finite):
            return (0.0, 1.0)
        low, high = float(finite.min()), float(finite.max())
        pad = self.config.margin * max(high - low, 1e-6)
        return (low - pad, high + pad)
