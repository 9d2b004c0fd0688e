"""The ``viewer`` node: the live Foxglove view (:mod:`poam_ros.view`) of a running stack.

It subscribes to what the stack publishes, as a user's tool would: ``odom`` (the vehicle's
pose and trail), ``plan``, ``samples`` (the last batch), ``map`` (the organised cloud: the
mean and std of every channel), ``map/inducing``, ``map/memory`` (a dual GP's), ``mission/state``
and ``/diagnostics`` (the ingest's drop counts, the mapper's last update time, a simulated
mission's SMSE and MSLL), and hands the view a frame per message.
The frames' messages are built and sent on the view's own thread; the callbacks only copy
arrays out of the messages. Pose frames are thinned to ``pose_rate``, the trail to a point
every ``trail_spacing`` metres. ``poam-ros sim --view`` starts it beside the other nodes; on a
robot, ``ros2 run poam_ros viewer`` (the parameters of :class:`ViewerSettings`; ``view.*``:
where it listens, :class:`~poam_ros.view.config.ViewConfig`; ``geo.*`` and ``workspace.*``, the
mapper's, for the fix and the workspace on the world map).

A fleet's viewer (``vehicles``: the namespaces, as ``poam-ros sim --robots N --view`` and
fleet.launch.xml's ``view:=true`` start it in the root namespace) subscribes to each vehicle's
``<ns>/odom``, ``<ns>/plan`` and ``<ns>/mission/state`` and shows each on its own pose channel
and scene entities; its ``map``, ``samples``, ... are remapped to the fleet's map
(``/fleet/map``, or the first vehicle's own), and the status holds each vehicle's state and
the fleet's (:func:`~poam_ros.planners.fleet_state.fleet_state`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry, Path
from sensor_msgs.msg import PointCloud2

from poam_ros import messages as msg
from poam_ros.dependencies import MissingDependency
from poam_ros.diagnostics import DiagnosticsError, IngestStatus, MapperStatus, ScoreStatus
from poam_ros.geo import GeoConfig, GeoReference, resolve_workspace
from poam_ros.params import Params, param
from poam_ros.planners.fleet_state import fleet_state
from poam_ros.ros import qos
from poam_ros.ros.parameters import declare_config
from poam_ros.ros.run import StartingNode, drain, run_node
from poam_ros.view.config import ViewConfig
from poam_ros.workspace import WorkspaceConfig


@dataclass
class ViewerSettings(Params):
    """What the viewer shows and how often."""

    channels: list[str] = param([], "the samples' channels besides the depth (the ingest's "
                                    "channels): their grids are shown too")
    std_scale_max: float = param(50.0, "the std grids' colour range is 0 .. this; set it to "
                                       "the mapper's grid.std_scale_max", unit="m", low=1e-9)
    pose_rate: float = param(5.0, "pose frames per second at most (sim time)", unit="Hz",
                             low=1e-3)
    trail_spacing: float = param(5.0, "a trail point every this far", unit="m", low=0.0)
    vehicles: list[str] = param([], "a fleet's vehicles' namespaces (/auv0, ...): each one's "
                                    "odom, plan and mission/state; empty: the single "
                                    "vehicle's, relative names")


@dataclass
class _Track:
    """One vehicle's trail [m] and the time of its last pose frame [s]."""

    trail: list[tuple[float, float]] = field(default_factory=list)
    last_pose_time: float = -math.inf


class ViewerNode(StartingNode):
    """Feeds a :class:`~poam_ros.view.LiveView` from the stack's topics."""

    def __init__(self, node_name: str = "viewer", **node_kwargs) -> None:
        super().__init__(node_name, **node_kwargs)

    def _start(self, node_name: str) -> None:
        self.settings = declare_config(self, ViewerSettings, read_only=("channels", "vehicles"))
        config = declare_config(self, ViewConfig, "view",
                                read_only=[spec.name for spec in ViewConfig.specs()])
        channels = tuple(self.settings.channels)
        layers = ("mean", "std", *(f"{name}/{layer}" for name in channels
                                   for layer in ("mean", "std")))
        # With the map's anchor (geo.*, as the mapper's): the vehicle's fix and the workspace
        # on Foxglove's world map.
        georeference = GeoReference.from_config(declare_config(
            self, GeoConfig, "geo", read_only=[spec.name for spec in GeoConfig.specs()]))
        workspace = resolve_workspace(declare_config(
            self, WorkspaceConfig, "workspace",
            read_only=[spec.name for spec in WorkspaceConfig.specs()]), georeference)
        from poam_ros.view.server import LiveView  # MissingDependency without the SDK

        vehicles = tuple(self.settings.vehicles)
        self.view = LiveView(config, np.reshape(workspace.vertices, (-1, 2)), georeference,
                             std_scale_max=self.settings.std_scale_max, layers=layers,
                             vehicles=vehicles)
        self._channels = channels
        self._tracks = {vehicle: _Track() for vehicle in vehicles or ("",)}
        self._states: dict[str, dict] = {}  # a fleet's: per vehicle, its state and mission
        self._status: dict = {}
        subscribe = self.create_subscription
        for vehicle in self._tracks:
            prefix = f"{vehicle.rstrip('/')}/" if vehicle else ""
            subscribe(Odometry, f"{prefix}odom", partial(self._on_odom, vehicle), qos.ODOMETRY)
            subscribe(Path, f"{prefix}plan", partial(self._on_plan, vehicle), qos.LATCHED)
            subscribe(DiagnosticStatus, f"{prefix}mission/state",
                      partial(self._on_state, vehicle), qos.LATCHED)
        subscribe(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        subscribe(PointCloud2, "map", self._on_map, qos.LATCHED)
        subscribe(PointCloud2, "map/inducing", self._on_inducing, qos.LATCHED)
        subscribe(PointCloud2, "map/memory", self._on_memory, qos.LATCHED)
        subscribe(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.get_logger().info(f"live view on {self.view.address}")

    def destroy_node(self) -> None:
        drain(self)  # the peers' last messages (a mission's end) before the view closes
        self.view.close()
        super().destroy_node()

    # ---------------------------------------------------------------- callbacks
    def _on_odom(self, vehicle: str, message: Odometry) -> None:
        t, x, y, z, yaw = msg.odometry_to_pose(message)
        track = self._tracks[vehicle]
        if not track.trail or math.dist(track.trail[-1], (x, y)) >= self.settings.trail_spacing:
            track.trail.append((x, y))
        if t - track.last_pose_time >= 1.0 / self.settings.pose_rate:
            track.last_pose_time = t
            self._show(t, vehicle=vehicle, pose=(x, y, z, yaw), trail=np.array(track.trail))

    def _on_plan(self, vehicle: str, message: Path) -> None:
        self._show(msg.time_to_seconds(message.header.stamp), vehicle=vehicle,
                   plan=msg.path_to_waypoints(message))

    def _on_samples(self, message: PointCloud2) -> None:
        xy, z = msg.cloud_to_samples(message)
        self._show(msg.time_to_seconds(message.header.stamp),
                   soundings=np.column_stack([xy, z]))

    def _on_inducing(self, message: PointCloud2) -> None:
        xy, _ = msg.cloud_to_samples(message)
        self._show(msg.time_to_seconds(message.header.stamp), inducing=xy)

    def _on_memory(self, message: PointCloud2) -> None:
        xy, z = msg.cloud_to_samples(message)
        self._show(msg.time_to_seconds(message.header.stamp), memory=np.column_stack([xy, z]))

    def _on_map(self, message: PointCloud2) -> None:
        if message.width * message.height == 0:  # a reset's empty map
            return
        self._show(msg.time_to_seconds(message.header.stamp),
                   map=map_from_cloud(message, self._channels))

    def _on_state(self, vehicle: str, status: DiagnosticStatus) -> None:
        mission = {kv.key: kv.value for kv in status.values}
        if not vehicle:
            self._status.update({"state": status.message, "mission": mission})
        else:  # a fleet's: every vehicle's, and the fleet's state from them
            self._states[vehicle] = {"state": status.message, "mission": mission}
            self._status.update(
                state=fleet_state({ns: self._states.get(ns, {}).get("state", "")
                                   for ns in self._tracks}),
                vehicles=dict(self._states))
        self._show(self.get_clock().now().nanoseconds * 1e-9)

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        shown = dict(self._status)
        for status in message.status:
            try:
                record = msg.status_record(status)
            except DiagnosticsError:
                continue
            if isinstance(record, IngestStatus):
                self._status["drops"] = {reason: n for reason, n in record.dropped.items() if n}
            elif isinstance(record, MapperStatus):
                self._status.update(samples=record.samples,
                                    last_update_s=record.update_time)
            elif isinstance(record, ScoreStatus):  # a simulated mission's score (poam-ros sim)
                self._status.update(epoch=record.epoch, smse=record.smse, msll=record.msll)
        if self._status != shown:  # a status alone: the mission's last scores come after its end
            self._show(self.get_clock().now().nanoseconds * 1e-9)

    def _show(self, stamp: float, **parts) -> None:
        from poam_ros.view.frames import ViewFrame

        self.view.show(ViewFrame(stamp=stamp, status=dict(self._status), **parts))


def map_from_cloud(cloud: PointCloud2, channels: tuple[str, ...] = ()):
    """The mapper's ``map`` (an organised cloud of ``height`` rows from the south, cell
    centres x, y; fields ``mean``, ``std``, ``mean_<channel>``, ``std_<channel>``) as the
    view's layers (:class:`~poam_ros.view.frames.MapView`)."""
    from poam_ros.view.frames import MapView

    arrays = msg.cloud_to_arrays(cloud)
    shape = (cloud.height, cloud.width)
    x, y = arrays["x"].reshape(shape), arrays["y"].reshape(shape)
    resolution = (float(x[0, 1] - x[0, 0]) if cloud.width > 1 else
                  float(y[1, 0] - y[0, 0]) if cloud.height > 1 else 1.0)  # one cell: any
    origin = np.array([x[0, 0], y[0, 0]]) - resolution / 2
    layers = {"mean": arrays["mean"].reshape(shape), "std": arrays["std"].reshape(shape)}
    for name in channels:
        for layer in ("mean", "std"):
            layers[f"{name}/{layer}"] = arrays[f"{layer}_{name}"].reshape(shape)
    return MapView(origin, resolution, layers)


def main(args=None) -> None:
    run_node(ViewerNode, "viewer", args, start_errors=(MissingDependency,))


if __name__ == "__main__":
    main()
