"""The numbers in stored messages, without ROS: what the nodes read from the same messages.

Bags are decoded with ``rosbags``' CDR deserializer into plain dataclasses whose fields
mirror the ROS messages. The functions here turn them into the numbers the ingest and the
mapper take, with exactly the arithmetic of :mod:`poam_ros.ros.conversions` (the nodes'
side), so that a remap feeds the core bit for bit what the live nodes fed it; a test holds
the two sides equal on the same serialized messages.
"""

from __future__ import annotations

import math

import numpy as np

NANOSECONDS_PER_SECOND = 1_000_000_000

# sensor_msgs/PointField datatypes -> numpy scalar codes
_POINT_FIELD_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


def stamp_seconds(stamp) -> float:
    """``builtin_interfaces/Time`` in seconds (as ``conversions.time_to_seconds``)."""
    return stamp.sec + stamp.nanosec / NANOSECONDS_PER_SECOND


def stamp_nanoseconds(stamp) -> int:
    return stamp.sec * NANOSECONDS_PER_SECOND + stamp.nanosec


def seconds_to_nanoseconds(seconds: float) -> int:
    """The integer ns of the ``Time`` ``conversions.seconds_to_time`` makes of ``seconds``."""
    whole = math.floor(seconds)
    nanoseconds = round((seconds - whole) * NANOSECONDS_PER_SECOND)
    if nanoseconds == NANOSECONDS_PER_SECOND:
        whole, nanoseconds = whole + 1, 0
    return int(whole) * NANOSECONDS_PER_SECOND + int(nanoseconds)


def quaternion_yaw(q) -> float:
    """z-y-x Euler yaw in (-pi, pi] (as ``conversions.quaternion_to_yaw``)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def odometry_pose(odometry) -> tuple[float, float, float, float, float]:
    """``(t [s], x, y, z [m], yaw [rad])`` of ``nav_msgs/Odometry``."""
    position = odometry.pose.pose.position
    return (stamp_seconds(odometry.header.stamp), position.x, position.y, position.z,
            quaternion_yaw(odometry.pose.pose.orientation))


def path_waypoints(path) -> np.ndarray:
    """(K, 2) [m] positions of ``nav_msgs/Path``'s poses."""
    points = np.empty((len(path.poses), 2))
    for k, stamped in enumerate(path.poses):
        points[k] = stamped.pose.position.x, stamped.pose.position.y
    return points


def cloud_fields(cloud) -> dict[str, np.ndarray]:
    """Every field of ``sensor_msgs/PointCloud2`` as float64 (N,) arrays, row-major.

    Raises ``ValueError`` where the sizes do not add up or a field overruns the point (as
    ``conversions.cloud_to_arrays``)."""
    height, width, point_step, row_step = (cloud.height, cloud.width, cloud.point_step,
                                           cloud.row_step)
    data = np.asarray(cloud.data, dtype=np.uint8)
    if height * width and point_step == 0:
        raise ValueError("PointCloud2 has points but point_step 0")
    if row_step < width * point_step:
        raise ValueError(f"PointCloud2 row_step {row_step} < width*point_step "
                         f"{width}*{point_step}")
    if len(data) != row_step * height:
        raise ValueError(f"PointCloud2 data has {len(data)} bytes, expected "
                         f"row_step*height = {row_step}*{height}")
    order = ">" if cloud.is_bigendian else "<"
    names, formats, offsets = [], [], []
    for field in cloud.fields:
        if field.datatype not in _POINT_FIELD_TYPES:
            raise ValueError(f"field {field.name!r} has unknown datatype {field.datatype}")
        scalar = np.dtype(order + _POINT_FIELD_TYPES[field.datatype])
        count = max(field.count, 1)
        if field.offset + scalar.itemsize * count > point_step:
            raise ValueError(f"field {field.name!r} overruns point_step {point_step}")
        names.append(field.name)
        formats.append(scalar if count == 1 else (scalar, (count,)))
        offsets.append(field.offset)
    layout = np.dtype({"names": names, "formats": formats, "offsets": offsets,
                       "itemsize": point_step})
    view = np.ndarray((height, width), dtype=layout, buffer=data.tobytes(),
                      strides=(row_step, point_step))
    return {name: view[name].astype(np.float64).reshape(height * width,
                                                        *view[name].shape[2:])
            for name in names}


def cloud_points(cloud) -> np.ndarray:
    """(N, 3) x, y, z of a ``PointCloud2`` (as ``conversions.cloud_to_points``)."""
    fields = cloud_fields(cloud)
    missing = [name for name in "xyz" if name not in fields]
    if missing:
        raise ValueError(f"PointCloud2 lacks field(s) {', '.join(missing)}")
    return np.column_stack([fields[n] for n in "xyz"]) if len(fields["x"]) else \
        np.empty((0, 3))


def cloud_is_float64(cloud) -> bool:
    """Whether a ``PointCloud2``'s x, y and z are float64 fields (a ``samples`` batch of an
    ingest with ``float64_samples``)."""
    return all(_POINT_FIELD_TYPES.get(field.datatype) == "f8"
               for field in cloud.fields if field.name in ("x", "y", "z"))


def wire_samples(points: np.ndarray, float64: bool) -> np.ndarray:
    """Samples as the mapper reads them off a ``samples`` cloud: float32 fields unless
    ``float64`` (the ingest's ``float64_samples``), read back as float64."""
    points = np.asarray(points, dtype=float)
    return points if float64 else points.astype("<f4").astype(np.float64)
