"""Readers of the stack's messages, free of ROS: the numbers the core takes from a message.

One module for every reader, whoever holds the message: the nodes (rclpy message objects),
the offline remap (``rosbags``' deserialized dataclasses) and the tests. Both kinds of
object carry the ROS field names (``header.stamp.sec``, ``pose.pose.position``,
``PointCloud2.data``), so the same function reads either, bit for bit; nothing here
imports a message class. The builders, which need the classes, are
:mod:`poam_ros.ros.conversions`.

Conventions: planar poses are ``(x, y)`` in metres with a yaw in radians about +z (REP-103:
x east, y north, counter-clockwise positive); times are float seconds, or integer
nanoseconds where a stamp identifies a message.
"""

from __future__ import annotations

import math

import numpy as np

from poam_ros import diagnostics
from poam_ros.attitude import yaw_from_quaternion

NANOSECONDS_PER_SECOND = 1_000_000_000
XYZ = ("x", "y", "z")
PLANNED = "planned"  # the field of an uncertainty query that marks planned sample points

# sensor_msgs/PointField datatype constants (INT8 = 1 … FLOAT64 = 8) -> numpy scalar codes
POINT_FIELD_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
FLOAT64 = 8

#: ns a samples stamp may fall behind a map's before the data clock counts as reset (the
#: ingest's default stamp_jump_threshold: the ingest itself follows such a clock change): the
#: mapper's maps then follow the new clock, and a planner takes a map stamped within this of
#: its newest, but not newer, for that map again (the same samples).
MAP_CLOCK_RESET = 10_000_000_000


def not_newer(stamp: int, newest: int) -> bool:
    """Whether a map stamp (ns) is no newer than ``newest`` on the same data clock: at most
    :data:`MAP_CLOCK_RESET` before it (further back, the clock was reset)."""
    return newest - MAP_CLOCK_RESET < stamp <= newest


# --------------------------------------------------------------------------- time

def time_to_seconds(stamp) -> float:
    """``builtin_interfaces/Time`` in seconds."""
    return stamp.sec + stamp.nanosec / NANOSECONDS_PER_SECOND


def time_to_nanoseconds(stamp) -> int:
    """Exact integer nanoseconds of a ``Time`` (to compare stamps that identify messages)."""
    return stamp.sec * NANOSECONDS_PER_SECOND + stamp.nanosec


def seconds_to_nanoseconds(seconds: float) -> int:
    """Integer nanoseconds nearest to ``seconds``: the ``Time`` a node stamps ``seconds``
    with. ``seconds - floor(seconds)`` is exact in binary floating point, so the only
    rounding is the final one to whole nanoseconds."""
    whole = math.floor(seconds)
    return int(whole) * NANOSECONDS_PER_SECOND + round((seconds - whole) * NANOSECONDS_PER_SECOND)


# -------------------------------------------------------------------------- poses

def quaternion_to_yaw(q) -> float:
    """z-y-x Euler yaw [rad] in (-pi, pi] of a ``geometry_msgs/Quaternion``."""
    return yaw_from_quaternion((q.x, q.y, q.z, q.w))


def pose_to_xy_yaw(pose) -> tuple[float, float, float]:
    """``(x [m], y [m], yaw [rad])`` of a ``geometry_msgs/Pose``."""
    return pose.position.x, pose.position.y, quaternion_to_yaw(pose.orientation)


def odometry_to_state(odometry) -> tuple[float, float, float, float]:
    """``(x [m], y [m], yaw [rad], t [s])`` of a ``nav_msgs/Odometry``."""
    x, y, yaw = pose_to_xy_yaw(odometry.pose.pose)
    return x, y, yaw, time_to_seconds(odometry.header.stamp)


def odometry_to_pose(odometry) -> tuple[float, float, float, float, float]:
    """``(t [s], x [m], y [m], z [m], yaw [rad])`` of a ``nav_msgs/Odometry``'s pose."""
    position = odometry.pose.pose.position
    return (time_to_seconds(odometry.header.stamp), position.x, position.y, position.z,
            quaternion_to_yaw(odometry.pose.pose.orientation))


def odometry_to_orientation(odometry) -> tuple[float, float, float, float]:
    """``(x, y, z, w)`` of a ``nav_msgs/Odometry``'s orientation quaternion, as sent (not
    normalised: whether it is a rotation at all is the ingest's to judge)."""
    q = odometry.pose.pose.orientation
    return q.x, q.y, q.z, q.w


def path_to_waypoints(path) -> np.ndarray:
    """(K, 2) [m] positions of a ``nav_msgs/Path``'s poses, in the path's frame."""
    points = np.empty((len(path.poses), 2))
    for k, stamped in enumerate(path.poses):
        points[k] = stamped.pose.position.x, stamped.pose.position.y
    return points


def range_to_reading(reading) -> tuple[float, float, str]:
    """``(range [m], t [s], frame_id)`` of a ``sensor_msgs/Range``; the range is passed on
    as sent, inf and NaN included (REP-117)."""
    return reading.range, time_to_seconds(reading.header.stamp), reading.header.frame_id


def temperature_to_reading(reading) -> tuple[float, float, str]:
    """``(temperature [°C], t [s], frame_id)`` of a ``sensor_msgs/Temperature``, as sent
    (NaN included: the ingest judges it)."""
    return reading.temperature, time_to_seconds(reading.header.stamp), reading.header.frame_id


def fluid_pressure_to_reading(reading) -> tuple[float, float, str]:
    """``(pressure [Pa], t [s], frame_id)`` of a ``sensor_msgs/FluidPressure``, as sent."""
    return (reading.fluid_pressure, time_to_seconds(reading.header.stamp),
            reading.header.frame_id)


def cloud_to_channel_readings(cloud, channels) -> tuple[float, dict[str, np.ndarray]]:
    """``(t [s], {channel: values (N,)})`` of a stamped ``PointCloud2`` from any other scalar
    sensor: one field per channel (one point per reading, usually one), the fields named
    in ``channels`` that it carries; ``ValueError`` when it carries none of them."""
    arrays = cloud_to_fields(cloud, required=())
    values = {name: arrays[name] for name in channels if name in arrays}
    if not values:
        raise ValueError(f"PointCloud2 with fields {', '.join(arrays) or 'none'} carries "
                         f"none of the channels {', '.join(channels)}")
    return time_to_seconds(cloud.header.stamp), values


def imu_to_orientation(imu) -> tuple[float, tuple[float, float, float, float], str, bool]:
    """``(t [s], orientation (x, y, z, w), frame_id, known)`` of a ``sensor_msgs/Imu``: the
    quaternion as sent (not normalised: the ingest judges it); ``known`` is False where the
    IMU gives no orientation (``orientation_covariance[0]`` is -1, as the message defines)."""
    q = imu.orientation
    return (time_to_seconds(imu.header.stamp), (q.x, q.y, q.z, q.w), imu.header.frame_id,
            imu.orientation_covariance[0] != -1.0)


def navsatfix_to_fix(fix) -> tuple[float, float, float, int, float | None]:
    """``(t [s], latitude [deg], longitude [deg], status, horizontal std [m] or None)`` of a
    ``sensor_msgs/NavSatFix``, passed on as sent (NaN included): the ingest judges them.

    ``status`` is ``NavSatStatus.status`` (-1 NO_FIX, -2 never set, 0 … 2 a fix). The std is
    the square root of the larger of the east and north variances of the ENU
    ``position_covariance`` [m²], None when its type is ``COVARIANCE_TYPE_UNKNOWN`` (0), NaN
    when either is negative or NaN (no variance: the ingest refuses it).
    """
    east, north = fix.position_covariance[0], fix.position_covariance[4]
    std = (None if not fix.position_covariance_type
           else math.sqrt(max(east, north)) if east >= 0.0 and north >= 0.0 else math.nan)
    return (time_to_seconds(fix.header.stamp), fix.latitude, fix.longitude,
            int(fix.status.status), std)


# ------------------------------------------------------------------------- grids

def grid_to_array(grid, value_range=None) -> np.ndarray:
    """(rows, cols) array in map order (row 0 south) of a ``nav_msgs/OccupancyGrid``.

    Cells hold 0..100, or are mapped back onto ``value_range`` (low, high) when it is given
    (the inverse of ``conversions.grid_from_array``, up to its 1 % quantisation); unknown
    (-1) cells are NaN. The geometry stays in ``grid.info``.
    """
    rows, cols = grid.info.height, grid.info.width
    if len(grid.data) != rows * cols:
        raise ValueError(f"OccupancyGrid has {len(grid.data)} cells, expected "
                         f"height*width = {rows}*{cols}")
    cells = np.frombuffer(_buffer(grid.data), dtype=np.int8).reshape(rows, cols).astype(float)
    cells[cells < 0] = np.nan
    if value_range is not None:
        low, high = value_range
        cells = low + cells * ((high - low) / 100.0)
    return cells


# ------------------------------------------------------------------- point clouds

def cloud_to_fields(cloud, *, required=("x", "y")) -> dict[str, np.ndarray]:
    """Every field of a ``sensor_msgs/PointCloud2`` as a float64 array, points row-major.

    Each field gives an (N,) array, N = height * width (reshape to (height, width) for an
    organised cloud), or (N, count) when its count is above 1. Any field order, offsets,
    per-point and per-row padding and every PointField datatype are read; big-endian data
    is converted. Raises ``ValueError`` for a message whose sizes do not add up, whose
    fields overrun the point or repeat, or which lacks a field of ``required``.
    """
    height, width, point_step, row_step = (cloud.height, cloud.width, cloud.point_step,
                                           cloud.row_step)
    if height * width and point_step == 0:
        raise ValueError("PointCloud2 has points but point_step 0")
    if row_step < width * point_step:
        raise ValueError(f"PointCloud2 row_step {row_step} < width*point_step "
                         f"{width}*{point_step}")
    if len(cloud.data) != row_step * height:
        raise ValueError(f"PointCloud2 data has {len(cloud.data)} bytes, expected "
                         f"row_step*height = {row_step}*{height}")
    layout = _cloud_layout(cloud)
    missing = [name for name in required if name not in layout.names]
    if missing:
        raise ValueError(f"PointCloud2 lacks field(s) {', '.join(missing)}")
    # A strided view reads padded points and padded rows in place; astype copies once.
    view = np.ndarray((height, width), dtype=layout, buffer=_buffer(cloud.data),
                      strides=(row_step, point_step))
    arrays = {}
    for name in layout.names:
        column = view[name].astype(np.float64)
        arrays[name] = column.reshape(height * width, *column.shape[2:])
    return arrays


def cloud_to_arrays(cloud) -> dict[str, np.ndarray]:
    """:func:`cloud_to_fields` of a cloud that must hold x, y and z."""
    return cloud_to_fields(cloud, required=XYZ)


def cloud_to_points(cloud, channels=()) -> np.ndarray:
    """(N, 3 + C) float64 x, y, z and the fields named in ``channels`` (C of them, a
    ``samples`` cloud's channels) of any ``PointCloud2``; other fields are ignored."""
    names = (*XYZ, *channels)
    arrays = cloud_to_fields(cloud, required=names)
    return np.column_stack([arrays[name] for name in names]) if len(arrays["x"]) else \
        np.empty((0, len(names)))


def cloud_is_float64(cloud) -> bool:
    """Whether a cloud's x, y and z are float64 fields (a ``samples`` batch of an ingest
    with ``float64_samples``)."""
    return all(field.datatype == FLOAT64 for field in cloud.fields if field.name in XYZ)


def cloud_to_samples(cloud, channels=()) -> tuple[np.ndarray, np.ndarray]:
    """Positions (N, 2) [m] and elevations (N,) of a ``samples`` cloud (any datatype), as
    float64; non-finite values are passed on for the model to count and drop. With
    ``channels`` (the ingest's), the values (N, 1 + C), elevation first, NaN where a sample
    did not measure a channel: a multi-channel model's targets."""
    if channels:
        points = cloud_to_points(cloud, channels)
        return points[:, :2], points[:, 2:]
    arrays = cloud_to_arrays(cloud)
    return np.column_stack([arrays["x"], arrays["y"]]), arrays["z"]


def cloud_to_query(cloud) -> np.ndarray:
    """Candidate points (N, 2) [m] of an ``uncertainty/query`` cloud."""
    return cloud_to_query_sets(cloud)[0]


def cloud_to_query_sets(cloud) -> tuple[np.ndarray, np.ndarray]:
    """Candidate points (N, 2) and planned sample points (T, 2) [m] of an
    ``uncertainty/query`` cloud: the points whose field ``planned`` is nonzero are where a
    fleet's teammates will sample (T = 0 without the field)."""
    arrays = cloud_to_fields(cloud)
    points = np.column_stack([arrays["x"], arrays["y"]])
    planned = arrays.get(PLANNED, np.zeros(len(points))) != 0.0
    return points[~planned], points[planned]


def cloud_to_response(cloud) -> tuple[np.ndarray, np.ndarray]:
    """Points (N, 2) [m] and the predictive spread of an ``uncertainty/response``: the
    standard deviations (N,), or the channels' covariances (N, D, D) of a multi-channel
    map (its fields ``cov_<d>_<e>``, d ≤ e)."""
    arrays = cloud_to_fields(cloud, required=("x", "y", "std"))
    points = np.column_stack([arrays["x"], arrays["y"]])
    channels = sum(1 for name in arrays if name.startswith("cov_"))
    if not channels:
        return points, arrays["std"]
    size = int(round((math.sqrt(8 * channels + 1) - 1) / 2))  # D(D + 1)/2 fields
    names = [(d, e) for d in range(size) for e in range(d, size)]
    if len(names) != channels or any(f"cov_{d}_{e}" not in arrays for d, e in names):
        raise ValueError(f"uncertainty response with covariance fields that are not "
                         f"cov_<d>_<e> for d <= e < D: {sorted(arrays)}")
    cov = np.empty((len(points), size, size))
    for d, e in names:
        cov[:, d, e] = cov[:, e, d] = arrays[f"cov_{d}_{e}"]
    return points, cov


def cloud_to_probability(cloud, channels: int) -> np.ndarray | None:
    """The binary channels' predictive probabilities of an ``uncertainty/response`` of
    ``channels`` (D) channels, (N, D), NaN in the other channels' columns (fields ``p_<d>``);
    None when it carries none."""
    arrays = cloud_to_fields(cloud, required=())
    names = [name for name in arrays if name.startswith("p_")]
    if not names:
        return None
    probability = np.full((cloud.width * cloud.height, channels), np.nan)
    for name in names:
        d = int(name[2:])
        if not 0 < d < channels:
            raise ValueError(f"uncertainty response with a probability field {name!r} not of "
                             f"a channel 1 … {channels - 1}")
        probability[:, d] = arrays[name]
    return probability


def cloud_to_evaluation(cloud, channels=()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points (N, 2) [m], means (N,) and standard deviations (N,) of a ``map/evaluation``;
    with ``channels`` (the ingest's) means and stds (N, 1 + C), depth first."""
    names = ("mean", "std", *(f"{kind}_{name}" for name in channels
                              for kind in ("mean", "std")))
    arrays = cloud_to_fields(cloud, required=("x", "y", *names))
    points = np.column_stack([arrays["x"], arrays["y"]])
    if not channels:
        return points, arrays["mean"], arrays["std"]
    return points, *(np.column_stack([arrays[kind]] + [arrays[f"{kind}_{name}"]
                                                       for name in channels])
                     for kind in ("mean", "std"))


def status_record(status):
    """The :mod:`poam_ros.diagnostics` record a ``DiagnosticStatus`` holds (picked by its
    name), None for a status of no node of this stack; raises
    :class:`~poam_ros.diagnostics.DiagnosticsError` for one that does not read."""
    return diagnostics.read(status.name, ((kv.key, kv.value) for kv in status.values))


def _cloud_layout(cloud) -> np.dtype:
    """Structured dtype of one point as the message describes it."""
    order = ">" if cloud.is_bigendian else "<"
    names, formats, offsets = [], [], []
    for field in cloud.fields:
        if field.datatype not in POINT_FIELD_TYPES:
            raise ValueError(f"field {field.name!r} has unknown datatype {field.datatype}")
        if field.name in names:
            raise ValueError(f"field {field.name!r} appears twice")
        count = max(field.count, 1)
        scalar = np.dtype(order + POINT_FIELD_TYPES[field.datatype])
        if field.offset + scalar.itemsize * count > cloud.point_step:
            raise ValueError(f"field {field.name!r} (offset {field.offset}, "
                             f"{scalar.itemsize * count} bytes) overruns point_step "
                             f"{cloud.point_step}")
        names.append(field.name)
        formats.append(scalar if count == 1 else (scalar, (count,)))
        offsets.append(field.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": cloud.point_step})


def _buffer(data):
    """The bytes of a message's ``uint8[]``/``int8[]`` field without a copy: rclpy holds an
    ``array.array``, rosbags a numpy array, a test may hand a list."""
    if isinstance(data, (list, tuple)):
        return np.asarray(data, dtype=np.uint8)
    return memoryview(data).cast("B")
