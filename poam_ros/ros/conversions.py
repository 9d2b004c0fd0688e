"""Message builders of the whole stack, as pure functions: numpy arrays -> ROS messages.

Nodes build their messages with these functions; they read messages with the ROS-free
readers of :mod:`poam_ros.messages`, which the offline remap shares. Nothing here creates a
node or needs ``rclpy.init``: message classes are plain Python objects, so the tests build
messages directly.

Large buffers (point clouds, grids) are filled from numpy without Python loops or
``.tolist()``. Conventions:

* planar poses are ``(x, y)`` in metres with a yaw in radians about +z (REP-103: x east,
  y north, counter-clockwise positive);
* times are float seconds; ``builtin_interfaces/Time`` keeps integer nanoseconds.
"""

from __future__ import annotations

import array
import math

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Quaternion
from nav_msgs.msg import MapMetaData, OccupancyGrid, Odometry, Path
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import PointCloud2, PointField, Range, Temperature
from std_msgs.msg import Header

from poam_ros import diagnostics
from poam_ros.attitude import quaternion_from_rpy
from poam_ros.mapping.binary import ChannelSpread
from poam_ros.messages import NANOSECONDS_PER_SECOND, PLANNED, XYZ, seconds_to_nanoseconds

# --------------------------------------------------------------------------- time


def seconds_to_time(seconds: float) -> Time:
    """``Time`` nearest to ``seconds`` (:func:`poam_ros.messages.seconds_to_nanoseconds`)."""
    return nanoseconds_to_time(seconds_to_nanoseconds(seconds))


def yaw_to_quaternion(yaw: float) -> Quaternion:
    """Rotation by ``yaw`` radians about +z."""
    half = 0.5 * float(yaw)
    return Quaternion(x=0.0, y=0.0, z=math.sin(half), w=math.cos(half))


# -------------------------------------------------------------------------- poses

def pose_stamped_from_xy(header: Header, xy, yaw: float = 0.0, z: float = 0.0) -> PoseStamped:
    """``PoseStamped`` at ``xy`` (2,) [m], depth coordinate ``z`` [m], heading ``yaw`` [rad]."""
    x, y = _planar_point(xy)
    pose = PoseStamped(header=header)
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = x, y, float(z)
    pose.pose.orientation = yaw_to_quaternion(yaw)
    return pose


def path_from_waypoints(header: Header, waypoints, yaws=None, z: float = 0.0,
                        pose_frame: str | None = None) -> Path:
    """``Path`` through ``waypoints`` (K, 2) [m], each pose at height ``z`` [m] (the
    planner's vertical setpoint) and in ``pose_frame`` (None: the path's frame).

    ``yaws`` (K,) [rad] defaults to the heading of the leg leaving each waypoint (the last
    waypoint keeps the heading of the leg arriving at it), which is how RViz should draw a
    plan. K is a plan's length, small, so the per-pose loop is not a hot path.
    """
    points = np.asarray(waypoints, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"waypoints must have shape (K, 2), got {points.shape}")
    if yaws is None:
        yaws = _leg_headings(points)
    yaws = np.asarray(yaws, dtype=float)
    if yaws.shape != (len(points),):
        raise ValueError(f"yaws must have shape ({len(points)},), got {yaws.shape}")
    pose_header = header if pose_frame is None else Header(stamp=header.stamp,
                                                           frame_id=pose_frame)
    return Path(header=header, poses=[pose_stamped_from_xy(pose_header, p, w, z)
                                      for p, w in zip(points, yaws)])


def odometry_from_state(header: Header, child_frame_id: str, xy, yaw: float,
                        speed: float = 0.0, yaw_rate: float = 0.0, z: float = 0.0,
                        roll: float = 0.0, pitch: float = 0.0) -> Odometry:
    """``Odometry`` of a vehicle: pose in ``header.frame_id`` at height ``z`` [m] with the
    attitude ``roll``, ``pitch``, ``yaw`` [rad] (:mod:`poam_ros.attitude`), twist in the body
    frame ``child_frame_id`` (forward ``speed`` [m/s], ``yaw_rate`` [rad/s])."""
    x, y = _planar_point(xy)
    odometry = Odometry(header=header, child_frame_id=child_frame_id)
    odometry.pose.pose.position.x, odometry.pose.pose.position.y = x, y
    odometry.pose.pose.position.z = float(z)
    qx, qy, qz, qw = quaternion_from_rpy(float(roll), float(pitch), float(yaw))
    odometry.pose.pose.orientation = Quaternion(x=qx, y=qy, z=qz, w=qw)
    odometry.twist.twist.linear.x = float(speed)
    odometry.twist.twist.angular.z = float(yaw_rate)
    return odometry


# -------------------------------------------------------------------------- clock

def clock_from_seconds(seconds: float) -> Clock:
    """``rosgraph_msgs/Clock`` at ``seconds`` of sim time."""
    return Clock(clock=seconds_to_time(seconds))


# ------------------------------------------------------------------------- ranges

def range_from_reading(header: Header, distance: float, *, min_range: float, max_range: float,
                       field_of_view: float, variance: float = 0.0,
                       radiation_type: int = Range.ULTRASOUND) -> Range:
    """``Range`` of a single-beam sensor (an altimeter); REP-117 says a miss is ``+inf``."""
    return Range(header=header, radiation_type=radiation_type,
                 field_of_view=float(field_of_view), min_range=float(min_range),
                 max_range=float(max_range), range=float(distance), variance=float(variance))


def temperature_from_reading(header: Header, value: float, *, variance: float = 0.0
                             ) -> Temperature:
    """``sensor_msgs/Temperature`` of one reading ``value`` [°C] with its ``variance``
    [°C²] (0: unknown); NaN is passed on as measured (no reading off the terrain)."""
    return Temperature(header=header, temperature=float(value), variance=float(variance))


def channel_reading_cloud(header: Header, channel: str, value: float) -> PointCloud2:
    """A one-point ``PointCloud2`` whose one field ``channel`` holds ``value`` (a reading of
    a ``cloud`` or ``binary`` channel: a seabed class 0/1), float32, NaN passed on."""
    return fields_to_cloud(header, {channel: np.array([float(value)])}, required=())


# ------------------------------------------------------------------------ grids

def grid_from_array(header: Header, values, *, resolution: float, origin,
                    value_range=None) -> OccupancyGrid:
    """``OccupancyGrid`` showing a scalar map (e.g. a standard-deviation map) as 0..100.

    ``values`` (rows, cols) is in map order: row 0 is the southern-most row and column 0 the
    western-most (REP-103, as OccupancyGrid stores it); flip an image-ordered array with
    ``np.flipud`` first. Cell (r, c) covers ``origin + (c, r) * resolution`` onwards, where
    ``origin`` (2,) [m] is the south-west corner of the grid in ``header.frame_id``.
    ``value_range`` (low, high) maps linearly onto 0..100 (values outside are clipped); it
    defaults to the finite values' range. NaN cells become -1 (unknown).
    """
    grid = np.asarray(values, dtype=float)
    if grid.ndim != 2:
        raise ValueError(f"values must be a 2-D array, got shape {grid.shape}")
    if not resolution > 0:
        raise ValueError(f"resolution must be > 0, got {resolution}")
    low, high = value_range if value_range is not None else _finite_range(grid)
    if not high >= low:
        raise ValueError(f"value_range must have low <= high, got ({low}, {high})")
    span = high - low
    with np.errstate(invalid="ignore"):
        scaled = np.zeros_like(grid) if span == 0 else (grid - low) * (100.0 / span)
        occupancy = np.clip(np.rint(scaled), 0, 100)
    occupancy[np.isnan(grid)] = -1

    info = MapMetaData(map_load_time=header.stamp, resolution=float(resolution),
                       width=grid.shape[1], height=grid.shape[0])
    info.origin.position.x, info.origin.position.y = _planar_point(origin)
    info.origin.orientation.w = 1.0
    message = OccupancyGrid(header=header, info=info)
    message.data = array.array("b", occupancy.astype(np.int8).tobytes())
    return message


# ------------------------------------------------------------------- point clouds

def xyz_fields_to_cloud(header: Header, points) -> PointCloud2:
    """Little-endian float32 ``PointCloud2`` from named per-point arrays.

    ``points`` is a mapping name -> array or a structured array; it must hold ``x``, ``y``
    and ``z`` and may hold any extra scalar fields (``mean``, ``std``, ...). All arrays
    share one shape: (N,) gives an unorganised cloud (height 1, width N), (H, W) an
    organised one (height H, width W, row-major). Fields are stored packed, x, y, z first,
    then the extras in the given order. ``is_dense`` is true when every x, y, z is finite.
    """
    return fields_to_cloud(header, points, required=XYZ)


def fields_to_cloud(header: Header, points, *, required=("x", "y"),
                    datatype: int = PointField.FLOAT32) -> PointCloud2:
    """Little-endian ``PointCloud2`` of one scalar ``datatype`` (FLOAT32 or FLOAT64) from
    named per-point arrays, as :func:`xyz_fields_to_cloud` but with the ``required``
    fields first (and present) instead of x, y, z. ``is_dense`` is true when every
    required field is finite. FLOAT64 carries world coordinates and model outputs exactly.
    """
    if datatype not in (PointField.FLOAT32, PointField.FLOAT64):
        raise ValueError(f"datatype must be FLOAT32 or FLOAT64, got {datatype}")
    columns = _named_columns(points)
    missing = [name for name in required if name not in columns]
    if missing:
        raise ValueError(f"points lack field(s) {', '.join(missing)}")
    names = [*required, *(name for name in columns if name not in required)]
    shape = columns[names[0]].shape
    for name in names:
        if columns[name].shape != shape:
            raise ValueError(f"field {name!r} has shape {columns[name].shape}, "
                             f"but {names[0]} has {shape}")
    if len(shape) not in (1, 2):
        raise ValueError(f"point arrays must be 1-D or 2-D, got shape {shape}")
    height, width = (1, shape[0]) if len(shape) == 1 else shape

    size = 4 if datatype == PointField.FLOAT32 else 8
    layout = np.dtype({"names": names, "formats": [f"<f{size}"] * len(names),
                       "offsets": [size * i for i in range(len(names))],
                       "itemsize": size * len(names)})
    packed = np.empty(shape, dtype=layout)
    for name in names:
        packed[name] = columns[name]

    cloud = PointCloud2(header=header, height=height, width=width, is_bigendian=False,
                        point_step=layout.itemsize, row_step=layout.itemsize * width,
                        is_dense=bool(all(np.isfinite(packed[n]).all() for n in required)))
    cloud.fields = [PointField(name=name, offset=size * i, datatype=datatype, count=1)
                    for i, name in enumerate(names)]
    cloud.data = array.array("B")
    cloud.data.frombytes(packed.reshape(-1).view(np.uint8))
    return cloud


def points_to_cloud(header: Header, points, float64: bool = False,
                    channels=()) -> PointCloud2:
    """Unorganised x, y, z cloud from (N, 3) ``points`` [m] in ``header.frame_id``:
    little-endian float32 fields, or float64 ones (no rounding) when ``float64``. With C
    ``channels`` (the ``samples`` cloud of an ingest with channels), ``points`` is (N, 3 + C)
    and each channel's column becomes a field of its name after x, y, z (NaN where a sample
    did not measure it)."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 + len(channels):
        raise ValueError(f"points must have shape (N, {3 + len(channels)}) for the channels "
                         f"{list(channels)!r}, got {points.shape}")
    if channels:
        names = (*XYZ, *channels)
        return fields_to_cloud(header, {name: points[:, i] for i, name in enumerate(names)},
                               required=XYZ, datatype=PointField.FLOAT64 if float64 else
                               PointField.FLOAT32)
    if not float64:
        return xyz_fields_to_cloud(header, {"x": points[:, 0], "y": points[:, 1],
                                            "z": points[:, 2]})
    cloud = PointCloud2(header=header, height=1, width=len(points), is_bigendian=False,
                        point_step=24, row_step=24 * len(points),
                        is_dense=bool(np.isfinite(points).all()))
    cloud.fields = [PointField(name=name, offset=8 * i, datatype=PointField.FLOAT64, count=1)
                    for i, name in enumerate(XYZ)]
    cloud.data = array.array("B")
    cloud.data.frombytes(np.ascontiguousarray(points, dtype="<f8").view(np.uint8).ravel())
    return cloud


def _named_columns(points) -> dict[str, np.ndarray]:
    if isinstance(points, np.ndarray):
        if points.dtype.names is None:
            raise ValueError("points must be a mapping or a structured array")
        return {name: points[name] for name in points.dtype.names}
    return {name: np.asarray(column) for name, column in points.items()}


# ------------------------------------------------------- samples, maps, uncertainty

def samples_to_cloud(header: Header, xy, z, *,
                     datatype: int = PointField.FLOAT32) -> PointCloud2:
    """``samples`` cloud: positions ``xy`` (N, 2) [m] and elevations ``z`` (N,).

    FLOAT32 is the graph contract's type; FLOAT64 keeps the samples bit-identical to the
    simulator's (a lockstep run then reproduces the ROS-free mission exactly).
    """
    xy, z = _points_and_values(xy, z, "z")
    return fields_to_cloud(header, {"x": xy[:, 0], "y": xy[:, 1], "z": z}, required=XYZ,
                           datatype=datatype)


def map_to_cloud(header: Header, x, y, mean, std, lengthscale=None, channels=(),
                 channel_means=(), channel_stds=()) -> PointCloud2:
    """The ``map`` cloud: an organised grid of float32 x, y, z (= mean), mean, std and
    optionally lengthscale, each (rows, cols) with row 0 the southern-most row; a
    multi-channel map adds ``mean_<channel>`` and ``std_<channel>`` for each of
    ``channels`` (C names; ``channel_means``, ``channel_stds``: (C, rows, cols)).

    NaN marks cells without a prediction (outside the workspace); ``is_dense`` is then
    false, and RViz skips those points.
    """
    fields = {"x": x, "y": y, "z": mean, "mean": mean, "std": std}
    if lengthscale is not None:
        fields["lengthscale"] = lengthscale
    if not len(channels) == len(channel_means) == len(channel_stds):
        raise ValueError(f"one mean and one std layer per channel {list(channels)!r}")
    for name, channel_mean, channel_std in zip(channels, channel_means, channel_stds):
        fields[f"mean_{name}"], fields[f"std_{name}"] = channel_mean, channel_std
    shapes = {name: np.shape(value) for name, value in fields.items()}
    if len(set(shapes.values())) != 1 or len(shapes["x"]) != 2:
        raise ValueError(f"map layers must share one 2-D shape, got {shapes}")
    return fields_to_cloud(header, fields, required=XYZ)


def inducing_to_cloud(header: Header, xy, mean) -> PointCloud2:
    """``map/inducing``: inducing inputs (M, 2) [m] at height z = predicted mean (M,)."""
    xy, mean = _points_and_values(xy, mean, "mean")
    return fields_to_cloud(header, {"x": xy[:, 0], "y": xy[:, 1], "z": mean}, required=XYZ)


def query_to_cloud(header: Header, xy, planned=None) -> PointCloud2:
    """``uncertainty/query``: candidate points (N, 2) [m] as float64 fields x, y.

    float64, so that the mapper scores exactly the candidates the planner drew. With
    ``planned`` points (T, 2) [m] (where a fleet's teammates will sample, T > 0), they follow
    the candidates and a field ``planned`` marks them 1, the candidates 0: the mapper
    answers for the candidates, conditioned on samples at the planned points
    (:func:`poam_ros.messages.cloud_to_query_sets`).
    """
    xy = _points(xy)
    planned = np.empty((0, 2)) if planned is None else _points(planned)
    if not len(planned):
        return fields_to_cloud(header, {"x": xy[:, 0], "y": xy[:, 1]},
                               datatype=PointField.FLOAT64)
    points = np.vstack([xy, planned])
    flags = np.concatenate([np.zeros(len(xy)), np.ones(len(planned))])
    return fields_to_cloud(header, {"x": points[:, 0], "y": points[:, 1], PLANNED: flags},
                           datatype=PointField.FLOAT64)


def response_to_cloud(header: Header, xy, spread) -> PointCloud2:
    """``uncertainty/response``: the query's points (N, 2) [m] and their predictive
    standard deviation (N,), float64 fields x, y, std. ``header.stamp`` is the query's.

    A multi-channel map's ``spread`` is the channels' predictive covariance (N, D, D),
    depth first: ``std`` is then the depth's and the fields ``cov_<d>_<e>`` (d ≤ e, channel
    indices) carry the covariance exactly (:func:`poam_ros.messages.cloud_to_response`); a
    :class:`~poam_ros.mapping.binary.ChannelSpread` adds each binary channel d's predictive
    probability as ``p_<d>`` (:func:`poam_ros.messages.cloud_to_probability`)."""
    probability = None
    if isinstance(spread, ChannelSpread):
        spread, probability = spread
    spread = np.asarray(spread, dtype=float)
    if spread.ndim != 3:
        xy, std = _points_and_values(xy, spread, "std")
        return fields_to_cloud(header, {"x": xy[:, 0], "y": xy[:, 1], "std": std},
                               datatype=PointField.FLOAT64)
    xy, channels = _points(xy), spread.shape[1]
    if spread.shape != (len(xy), channels, channels):
        raise ValueError(f"covariances must have shape ({len(xy)}, D, D), got {spread.shape}")
    fields = {"x": xy[:, 0], "y": xy[:, 1], "std": np.sqrt(spread[:, 0, 0])}
    fields.update({f"cov_{d}_{e}": spread[:, d, e]
                   for d in range(channels) for e in range(d, channels)})
    if probability is not None:
        fields.update({f"p_{d}": probability[:, d] for d in range(channels)
                       if not np.isnan(probability[:, d]).all()})
    return fields_to_cloud(header, fields, datatype=PointField.FLOAT64)


def evaluation_to_cloud(header: Header, xy, mean, std, channels=()) -> PointCloud2:
    """``map/evaluation``: evaluation points (N, 2) [m] with the predictive mean (N,) and
    the standard deviation of a new measurement (N,), float64 fields x, y, mean, std, so
    that a monitor scores exactly the model's predictions. With C ``channels``, ``mean``
    and ``std`` are (N, 1 + C), depth first, and each channel adds ``mean_<channel>`` and
    ``std_<channel>``."""
    mean, std = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
    if channels:
        if mean.shape != std.shape or mean.ndim != 2 or mean.shape[1] != 1 + len(channels):
            raise ValueError(f"mean and std must have shape (N, {1 + len(channels)}) for the "
                             f"channels {list(channels)!r}, got {mean.shape}, {std.shape}")
        mean, std, channel_means, channel_stds = mean[:, 0], std[:, 0], mean[:, 1:], std[:, 1:]
    xy, mean = _points_and_values(xy, mean, "mean")
    _, std = _points_and_values(xy, std, "std")
    fields = {"x": xy[:, 0], "y": xy[:, 1], "mean": mean, "std": std}
    for c, name in enumerate(channels):
        fields[f"mean_{name}"], fields[f"std_{name}"] = channel_means[:, c], channel_stds[:, c]
    return fields_to_cloud(header, fields, datatype=PointField.FLOAT64)


def nanoseconds_to_time(nanoseconds: int) -> Time:
    whole, rest = divmod(int(nanoseconds), NANOSECONDS_PER_SECOND)
    return Time(sec=whole, nanosec=rest)


def arrival_headings(start, waypoints) -> np.ndarray:
    """Heading [rad] (K,) of the leg arriving at each waypoint (K, 2), the first leg from
    ``start`` (2,): how a goal's pose should face when it is reached by driving to it."""
    points = np.vstack([_planar_point(start), _points(waypoints)])
    legs = np.diff(points, axis=0)
    return np.arctan2(legs[:, 1], legs[:, 0])


# -------------------------------------------------------------------- diagnostics

def diagnostic_status(node_name: str, level: int, message: str, record,
                      hardware_id: str = "") -> DiagnosticStatus:
    """``DiagnosticStatus`` ``<node_name>: <kind>`` of a :mod:`poam_ros.diagnostics` record,
    one ``KeyValue`` per pair of its encoding.

    ``level`` is one of ``DiagnosticStatus.OK/WARN/ERROR/STALE`` (bytes) or the same as int.
    """
    if isinstance(level, int):
        level = bytes([level])
    return DiagnosticStatus(level=level, name=diagnostics.status_name(node_name, type(record)),
                            message=message, hardware_id=hardware_id,
                            values=[KeyValue(key=key, value=value)
                                    for key, value in diagnostics.encode(record)])


def diagnostic_array(stamp_seconds: float, statuses) -> DiagnosticArray:
    """``DiagnosticArray`` of ``statuses`` stamped ``stamp_seconds``."""
    return DiagnosticArray(header=Header(stamp=seconds_to_time(stamp_seconds)),
                           status=list(statuses))


# ------------------------------------------------------------------------ helpers

def _planar_point(xy) -> tuple[float, float]:
    point = np.asarray(xy, dtype=float)
    if point.shape != (2,):
        raise ValueError(f"expected an (x, y) point of shape (2,), got {point.shape}")
    return float(point[0]), float(point[1])


def _points(xy) -> np.ndarray:
    points = np.asarray(xy, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"points must have shape (N, 2), got {points.shape}")
    return points


def _points_and_values(xy, values, name: str) -> tuple[np.ndarray, np.ndarray]:
    points, values = _points(xy), np.asarray(values, dtype=float)
    if values.shape != (len(points),):
        raise ValueError(f"{name} must have shape ({len(points)},), got {values.shape}")
    return points, values


def _leg_headings(points: np.ndarray) -> np.ndarray:
    if len(points) < 2:
        return np.zeros(len(points))
    legs = np.diff(points, axis=0)
    headings = np.arctan2(legs[:, 1], legs[:, 0])
    return np.append(headings, headings[-1])


def _finite_range(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
