"""One feeder per message type: a message into the :class:`~poam_ros.ingest.core.Ingest`
(no ROS).

Each ``feed_*(ingest, message, now)`` reads a message with :mod:`poam_ros.messages` (the
readers that take rclpy messages and ``rosbags``' deserialized ones alike) and hands the
numbers to the ingest at wall time ``now`` [s]. The ingest node calls them on live
messages, the offline remap (:mod:`poam_ros.bags.remap`) on recorded ones: one route, so
both place the same readings. Bad values, stamps and frames are the ingest's to drop; a
message that cannot be read at all is a counted ``malformed_message``.

:func:`input_feeders` lists the inputs that depend on the configuration: the scalar
channels (:mod:`~poam_ros.ingest.channels`), the IMU and the depth sensor
(:mod:`~poam_ros.ingest.attitude_depth`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from poam_ros import messages as msg
from poam_ros.ingest.attitude_depth import DEPTH, IMU
from poam_ros.ingest.channels import CHANNEL, CHANNEL_TYPES, ChannelSource, channel_sources

if TYPE_CHECKING:
    from poam_ros.ingest.config import IngestConfig
    from poam_ros.ingest.core import Ingest

IMU_TYPE = "sensor_msgs/msg/Imu"


def feed_odometry(ingest: Ingest, message, now: float) -> None:
    """A ``nav_msgs/Odometry``: the vehicle's pose, its frames and its quaternion."""
    t, x, y, z, yaw = msg.odometry_to_pose(message)
    ingest.add_pose(t, x, y, z, yaw, now, message.header.frame_id, message.child_frame_id,
                    msg.odometry_to_orientation(message))


def feed_range(ingest: Ingest, message, now: float) -> None:
    """A ``sensor_msgs/Range`` of the echo sounder, with the message's limits."""
    distance, t, frame_id = msg.range_to_reading(message)
    ingest.add_range(t, distance, message.min_range, message.max_range, now, frame_id)


def feed_swath(ingest: Ingest, message, now: float) -> None:
    """A ``sensor_msgs/PointCloud2`` of the multibeam: its x, y, z points [m]."""
    try:
        points = msg.cloud_to_points(message)
    except ValueError as error:
        ingest.drop_malformed(f"sonar/swath: {error}")
        return
    ingest.add_swath(msg.time_to_seconds(message.header.stamp), points, now,
                     message.header.frame_id)


def feed_fix(ingest: Ingest, message, now: float) -> None:
    """A ``sensor_msgs/NavSatFix``: a reset of the horizontal position."""
    t, latitude, longitude, status, horizontal_std = msg.navsatfix_to_fix(message)
    ingest.add_fix(t, latitude, longitude, now, status, horizontal_std)


def feed_plan(ingest: Ingest, message, now: float) -> None:
    """A ``nav_msgs/Path``: the vehicle's plan, whose end is the next decision point."""
    ingest.set_plan(msg.path_to_waypoints(message), msg.time_to_seconds(message.header.stamp),
                    now, message.header.frame_id)


def feed_imu(ingest: Ingest, message, now: float) -> None:
    """A ``sensor_msgs/Imu``: the vehicle's attitude (``imu_attitude``)."""
    t, orientation, frame_id, known = msg.imu_to_orientation(message)
    ingest.add_attitude(t, orientation, now, frame_id, known)


def feed_depth(ingest: Ingest, message, now: float) -> None:
    """A ``sensor_msgs/FluidPressure`` of the depth sensor (``depth_from_pressure``)."""
    pressure, t, frame_id = msg.fluid_pressure_to_reading(message)
    ingest.add_pressure(t, pressure, now, frame_id)


def feed_channel(source: ChannelSource, ingest: Ingest, message, now: float) -> None:
    """One message of ``source``'s topic: a Temperature, a FluidPressure or a one-point
    cloud with a field named like the channel (else ``malformed_message``)."""
    if source.kind == "temperature":
        value, t, frame_id = msg.temperature_to_reading(message)
        values = [value]
    elif source.kind == "fluid_pressure":
        value, t, frame_id = msg.fluid_pressure_to_reading(message)
        values = [value]
    else:
        try:
            t, fields = msg.cloud_to_channel_readings(message, [source.name])
        except ValueError as error:
            ingest.drop_malformed(f"{source.topic}: {error}")
            return
        values, frame_id = fields[source.name], message.header.frame_id
        if values.shape != (1,):
            ingest.drop_malformed(f"{source.topic}: field {source.name!r} of shape "
                                  f"{values.shape}, expected one point of one value")
            return
    ingest.add_reading(t, source.name, float(values[0]), now, frame_id)


class Feeder(NamedTuple):
    """An input: ``name`` (its stream: ``imu``, ``depth``, ``channel:<name>``), the
    ``topic`` the ingest node reads it on (relative), its ``msgtype`` and its
    ``feed(ingest, message, now)``."""

    name: str
    topic: str
    msgtype: str
    feed: Callable[[Any, Any, float], None]


def input_feeders(config: IngestConfig) -> list[Feeder]:
    """The channels', the IMU's and the depth sensor's feeders that ``config`` enables."""
    feeders = [Feeder(CHANNEL + source.name, source.topic, source.msgtype,
                      partial(feed_channel, source)) for source in channel_sources(config)]
    feeders += [Feeder(IMU, "imu", IMU_TYPE, feed_imu)] * config.imu_attitude
    feeders += [Feeder(DEPTH, "depth", CHANNEL_TYPES["fluid_pressure"], feed_depth)] * \
        config.depth_from_pressure
    return feeders
