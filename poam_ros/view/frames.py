"""One moment of a mission as the live view shows it, and its Foxglove messages.

A :class:`ViewFrame` holds plain arrays in the ``map`` frame (REP-103: x east, y north, z up,
metres; times in seconds of the mission's clock), so that the ROS-free mission and the ROS
graph's monitor fill it alike. :func:`frame_messages` turns it into the messages of the
view's channels (:data:`TOPICS`), the costly part, which runs on the view's own thread.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from poam_ros.dependencies import import_optional

import_optional("foxglove", "the live view")
from foxglove.messages import (  # noqa: E402
    Color,
    FrameTransform,
    FrameTransforms,
    GeoJson,
    Grid,
    LinePrimitive,
    LinePrimitiveLineType,
    LocationFix,
    PackedElementField,
    PackedElementFieldNumericType,
    Point3,
    PointCloud,
    Pose,
    PoseInFrame,
    Quaternion,
    SceneEntity,
    SceneUpdate,
    SpherePrimitive,
    Timestamp,
    Vector2,
    Vector3,
)

from poam_ros.view.topics import (  # noqa: E402
    BASE_FRAME,
    FIX,
    MAP_FRAME,
    POSE,
    SONAR_FRAME,
    TRANSFORMS,
)


@dataclass
class MapView:
    """A map's layers on its grid: ``origin`` (2,) [m] the south-west corner of cell (0, 0),
    ``resolution`` [m], ``layers`` name -> (rows, cols) in map order (row 0 south), NaN
    where nothing is predicted; names ``mean``, ``std`` and ``<channel>/mean``, ..."""

    origin: np.ndarray
    resolution: float
    layers: dict[str, np.ndarray]


@dataclass
class ViewFrame:
    """What the view shows at ``stamp`` [s]; ``None`` leaves a channel as it was. ``vehicle``:
    whose pose, trail and plan these are (a fleet's namespace, ``/auv1``; "" the single
    vehicle's)."""

    stamp: float
    vehicle: str = ""
    pose: tuple[float, float, float, float] | None = None  # x, y, z [m], yaw [rad]
    trail: np.ndarray | None = None  # (P, 2) the path flown [m]
    plan: np.ndarray | None = None  # (W, 2) or (W, 3) the plan's waypoints, the goal last
    soundings: np.ndarray | None = None  # (S, 3) x, y, elevation of the last batch [m]
    inducing: np.ndarray | None = None  # (M, 2) inducing inputs
    memory: np.ndarray | None = None  # (K, 3) a dual GP's memory: x, y, elevation
    map: MapView | Callable[[], MapView] | None = None  # a callable runs on the view's thread
    status: dict = field(default_factory=dict)  # the mission's state, budgets, scores

    def merged(self, newer: ViewFrame) -> ViewFrame:
        """This frame brought up to date by ``newer``: its parts where it has them, this
        frame's elsewhere, the status keys of both (so that a frame the view had no time for
        loses nothing that a newer one does not replace); both of one vehicle."""
        parts = {name: getattr(newer, name) if getattr(newer, name) is not None
                 else getattr(self, name)
                 for name in ("pose", "trail", "plan", "soundings", "inducing", "memory",
                              "map")}
        return ViewFrame(stamp=newer.stamp, vehicle=newer.vehicle,
                         status={**self.status, **newer.status}, **parts)


def timestamp(seconds: float) -> Timestamp:
    whole = math.floor(seconds)
    return Timestamp(sec=int(whole), nsec=int(round((seconds - whole) * 1e9)) % 1_000_000_000)


def grid_message(stamp: float, view: MapView, name: str) -> Grid:
    """Layer ``name`` of ``view`` as a float32 ``foxglove.Grid`` field named ``value``."""
    values = np.ascontiguousarray(view.layers[name], dtype=np.float32)
    rows, cols = values.shape
    return Grid(timestamp=timestamp(stamp), frame_id=MAP_FRAME,
                pose=_pose(view.origin[0], view.origin[1]), column_count=cols,
                cell_size=Vector2(x=view.resolution, y=view.resolution),
                row_stride=4 * cols, cell_stride=4,
                fields=[PackedElementField(name="value", offset=0,
                                           type=PackedElementFieldNumericType.Float32)],
                data=values.tobytes())


def cloud_message(stamp: float, points: np.ndarray) -> PointCloud:
    """``points`` (N, 2) or (N, 3) as a float32 x, y, z ``foxglove.PointCloud``."""
    xyz = np.zeros((len(points), 3), dtype=np.float32)
    xyz[:, :points.shape[1]] = points[:, :3]
    fields = [PackedElementField(name=axis, offset=4 * i,
                                 type=PackedElementFieldNumericType.Float32)
              for i, axis in enumerate("xyz")]
    return PointCloud(timestamp=timestamp(stamp), frame_id=MAP_FRAME, pose=_pose(0.0, 0.0),
                      point_stride=12, fields=fields, data=xyz.tobytes())


def vehicle_topic(vehicle: str, topic: str) -> str:
    """A vehicle's view topic: ``topic`` (``/vehicle/pose``) under a fleet's vehicle's
    namespace (``/auv1/vehicle/pose``), as it is for the single vehicle ("")."""
    return f"{vehicle.rstrip('/')}{topic}"


def vehicle_frame(vehicle: str, frame: str) -> str:
    """A vehicle's frame: ``auv1/base_link`` in a fleet (tf's prefix), ``base_link`` alone."""
    return f"{vehicle.strip('/')}/{frame}" if vehicle.strip("/") else frame


def vehicle_messages(stamp: float, pose: tuple[float, float, float, float],
                     georeference, vehicle: str = "") -> dict[str, object]:
    """The vehicle's pose, its frames (map -> base_link -> sonar_link: the simulated sonar
    sits at the vehicle's origin) and, with a ``georeference``, its ``LocationFix``; a fleet's
    ``vehicle`` (``/auv1``) on its own topics and frames (:func:`vehicle_topic`,
    :func:`vehicle_frame`)."""
    x, y, z, yaw = pose
    time = timestamp(stamp)
    base, sonar = vehicle_frame(vehicle, BASE_FRAME), vehicle_frame(vehicle, SONAR_FRAME)
    messages: dict[str, object] = {
        vehicle_topic(vehicle, POSE): PoseInFrame(timestamp=time, frame_id=MAP_FRAME,
                                                  pose=_pose(x, y, z, yaw)),
        TRANSFORMS: FrameTransforms(transforms=[
            FrameTransform(timestamp=time, parent_frame_id=MAP_FRAME, child_frame_id=base,
                           translation=Vector3(x=float(x), y=float(y), z=float(z)),
                           rotation=_yaw(yaw)),
            FrameTransform(timestamp=time, parent_frame_id=base, child_frame_id=sonar,
                           translation=Vector3(), rotation=Quaternion(w=1.0))])}
    if georeference is not None:
        lon, lat = (float(v) for v in georeference.to_lonlat(x, y))
        messages[vehicle_topic(vehicle, FIX)] = LocationFix(
            timestamp=time, frame_id=base, latitude=lat, longitude=lon, altitude=float(z))
    return messages


#: a fleet's vehicles' colours (r, g, b), vehicle k the k-th (then again from the first)
FLEET_COLOURS = ((0.12, 0.47, 0.71), (1.0, 0.5, 0.05), (0.17, 0.63, 0.17), (0.84, 0.15, 0.16),
                 (0.58, 0.4, 0.74), (0.09, 0.75, 0.81))
SINGLE_COLOURS = ((1.0, 1.0, 1.0), (1.0, 0.55, 0.0))  # the single vehicle's trail and plan


def scene_message(stamp: float, trail: np.ndarray | None, plan: np.ndarray | None,
                  vehicle: str = "", index: int | None = None) -> SceneUpdate:
    """The trail and the plan (its goal a sphere) as scene entities: the single vehicle's
    ``trail`` (white) and ``plan`` (orange); a fleet's vehicle ``index`` (namespace
    ``vehicle``) its ``auv<k>/trail`` and ``auv<k>/plan`` in its colour
    (:data:`FLEET_COLOURS`), the trail lighter."""
    if index is None:
        (trail_rgb, plan_rgb), prefix = SINGLE_COLOURS, ""
    else:
        plan_rgb = FLEET_COLOURS[index % len(FLEET_COLOURS)]
        trail_rgb, prefix = tuple(0.5 + 0.5 * c for c in plan_rgb), f"{vehicle.strip('/')}/"
    entities = []
    if trail is not None and len(trail) > 1:
        entities.append(_line(stamp, f"{prefix}trail", trail, _colour(trail_rgb)))
    if plan is not None and len(plan):
        goal = plan[-1]
        marker = SpherePrimitive(pose=_pose(goal[0], goal[1], goal[2] if len(goal) > 2 else 0.0),
                                 size=Vector3(x=1.0, y=1.0, z=1.0),
                                 color=Color(r=1.0, g=0.2, b=0.0, a=1.0) if index is None
                                 else _colour(plan_rgb))
        entities.append(_line(stamp, f"{prefix}plan", plan, _colour(plan_rgb), [marker]))
    return SceneUpdate(entities=entities)


def _colour(rgb: tuple[float, float, float]) -> Color:
    return Color(r=rgb[0], g=rgb[1], b=rgb[2], a=1.0)


def workspace_geojson(vertices: np.ndarray, georeference) -> GeoJson:
    """The workspace's outline (V, 2) [m] as a GeoJSON polygon in longitude, latitude."""
    ring = [[float(v) for v in georeference.to_lonlat(x, y)] for x, y in vertices]
    ring.append(ring[0])
    feature = {"type": "Feature", "properties": {"name": "workspace"},
               "geometry": {"type": "Polygon", "coordinates": [ring]}}
    return GeoJson(geojson=json.dumps({"type": "FeatureCollection", "features": [feature]}))


def _line(stamp: float, name: str, points: np.ndarray, color: Color,
          spheres: list | None = None) -> SceneEntity:
    """Entity ``name``: a line through ``points`` (N, 2 or 3) [m], and ``spheres``."""
    line = LinePrimitive(type=LinePrimitiveLineType.LineStrip, thickness=3.0,
                         scale_invariant=True, color=color, pose=_pose(0.0, 0.0),
                         points=[Point3(x=float(p[0]), y=float(p[1]),
                                        z=float(p[2]) if len(p) > 2 else 0.0) for p in points])
    return SceneEntity(timestamp=timestamp(stamp), frame_id=MAP_FRAME, id=name, lines=[line],
                       spheres=spheres or [])


def _pose(x: float, y: float, z: float = 0.0, yaw: float = 0.0) -> Pose:
    return Pose(position=Vector3(x=float(x), y=float(y), z=float(z)), orientation=_yaw(yaw))


def _yaw(yaw: float) -> Quaternion:
    """The rotation by ``yaw`` [rad] about z (REP-103: counter-clockwise from east)."""
    return Quaternion(z=math.sin(yaw / 2), w=math.cos(yaw / 2))
