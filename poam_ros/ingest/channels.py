"""Where the ingest's scalar channels come from: each channel's topic, message type and frame
(no ROS).

A channel (``IngestConfig.channels``: a temperature, a pressure, a class label, any stamped
scalar) is read off one topic of one of these standard message types:

* ``temperature``: ``sensor_msgs/Temperature``, the value its ``temperature`` [°C];
* ``fluid_pressure``: ``sensor_msgs/FluidPressure``, the value its ``fluid_pressure`` [Pa];
* ``cloud``: a stamped ``sensor_msgs/PointCloud2`` of one point (any other sensor) whose
  field named like the channel holds the value;
* ``binary``: a class label (a seabed class hard = 1 / soft = 0, "target seen"), read as a
  ``cloud`` channel: a stamped one-point ``PointCloud2`` whose field named like the channel
  holds 0 or 1. The standard messages have no stamped label (``std_msgs/Bool`` and
  ``Int8`` carry no header, so no time or frame to place the reading by; the
  ``sensor_msgs`` scalars are physical quantities with units), and the one-point cloud is
  the route every other stamped sensor already takes.

A reading (:class:`Channels`) of a channel not configured is ``wrong_frame`` (not this
ingest's), as is one in another frame than its channel's (:meth:`Streams.admit
<poam_ros.ingest.streams.Streams.admit>`); its stamp then follows the clock and order rules
of the ranges, per channel (:mod:`~poam_ros.ingest.streams`). Each type has declared
plausibility limits (:func:`value_limits`, from :class:`~poam_ros.ingest.config.LimitsConfig`):
``temperature_min/max`` [°C], ``pressure_min/max`` [Pa] (FluidPressure is absolute) and
``cloud_min/max`` (the sensor's own unit); a ``binary`` channel's values are 0 and 1 alone
(:data:`BINARY_VALUES`, not configurable). A reading outside is dropped
(``value_out_of_limits``), a non-finite one (``nonfinite_point``) whatever its type.

:func:`~poam_ros.ingest.feeders.feed_channel` hands one such message to
:meth:`Ingest.add_reading <poam_ros.ingest.core.Ingest.add_reading>`: the ingest node calls it
on a live message, the remap on a recorded one, so both place the same readings.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from poam_ros.ingest.reasons import NONFINITE_POINT, VALUE_OUT_OF_LIMITS, WRONG_FRAME, Drops
from poam_ros.params import ConfigError

if TYPE_CHECKING:
    from poam_ros.ingest.config import IngestConfig

CHANNEL = "channel:"  # + a channel's name: its stream (clock, order) and reading kind

#: channel type -> the ROS message type it reads
CHANNEL_TYPES = {"temperature": "sensor_msgs/msg/Temperature",
                 "fluid_pressure": "sensor_msgs/msg/FluidPressure",
                 "cloud": "sensor_msgs/msg/PointCloud2",
                 "binary": "sensor_msgs/msg/PointCloud2"}
#: the values a ``binary`` channel may take: its classes
BINARY_VALUES = (0.0, 1.0)
#: the channel type of a channel named so, where its name is not a type itself
NAMED_TYPES = {"seabed_class": "binary"}


class ChannelSource(NamedTuple):
    """Channel ``name`` read off ``topic`` (a relative name, as the node's others), messages
    of channel type ``kind`` (a key of :data:`CHANNEL_TYPES`) stamped in ``frame``."""

    name: str
    topic: str
    kind: str
    frame: str

    @property
    def msgtype(self) -> str:
        return CHANNEL_TYPES[self.kind]


def value_limits(kind: str, config: IngestConfig) -> tuple[float, float]:
    """The plausible values [low, high] of a channel of type ``kind``, in its unit (a
    ``binary`` channel's are :data:`BINARY_VALUES`, nothing between them)."""
    if kind == "binary":
        return BINARY_VALUES
    limits = config.limits
    prefix = "pressure" if kind == "fluid_pressure" else kind
    return getattr(limits, f"{prefix}_min"), getattr(limits, f"{prefix}_max")


def channel_sources(config: IngestConfig) -> list[ChannelSource]:
    """Each channel's source, in ``channels`` order. An empty ``channel_topics`` means each
    channel's own name; an empty ``channel_types`` a channel's name where that is a channel
    type (``temperature``, ``fluid_pressure``, ``binary``) or in :data:`NAMED_TYPES`
    (``seabed_class``: ``binary``), else ``cloud``; an empty ``channel_frames``
    the vehicle's ``base_frame`` (a reading is placed at the vehicle's position)."""
    names = config.channels
    topics = config.channel_topics or names
    kinds = config.channel_types or [
        name if name in CHANNEL_TYPES else NAMED_TYPES.get(name, "cloud") for name in names]
    frames = config.channel_frames or [config.base_frame] * len(names)
    return [ChannelSource(*source) for source in zip(names, topics, kinds, frames)]


def check_channel_sources(config: IngestConfig) -> None:
    """ConfigError unless each of ``channel_topics``, ``channel_types`` and ``channel_frames``
    is empty or names one entry per channel, types from :data:`CHANNEL_TYPES`, topics
    distinct."""
    for name in ("channel_topics", "channel_types", "channel_frames"):
        values = getattr(config, name)
        if values and (len(values) != len(config.channels) or not all(
                isinstance(value, str) and value.strip("/") for value in values)):
            raise ConfigError(f"IngestConfig.{name} must be empty or one name per channel "
                              f"{config.channels!r}, got {values!r}")
    unknown = [kind for kind in config.channel_types if kind not in CHANNEL_TYPES]
    if unknown:
        raise ConfigError(f"IngestConfig.channel_types {unknown!r} unknown: each is one of "
                          f"{', '.join(CHANNEL_TYPES)}")
    topics = [source.topic for source in channel_sources(config)]
    if len(set(topics)) != len(topics):
        raise ConfigError(f"IngestConfig.channel_topics must be distinct, got {topics!r}")


class Channels:
    """The configured channels' sources by stream (``channel:<name>``), the readings handed
    in per channel (:attr:`received`) and their checks; drops are counted in ``drops``."""

    def __init__(self, config: IngestConfig, drops: Drops) -> None:
        self.config = config
        self._drops = drops
        self.sources = {CHANNEL + source.name: source for source in channel_sources(config)}
        self.received: Counter = Counter()  # per channel, readings handed in

    def check(self, config: IngestConfig) -> None:
        """``ValueError`` for other channels than the first configuration's: they fix the
        samples' columns."""
        if config.channels != self.config.channels:
            raise ValueError(f"the ingest's channels {self.config.channels!r} cannot change to "
                             f"{config.channels!r}: they fix the samples' columns")

    def configure(self, config: IngestConfig) -> None:
        """New limits (the channels :meth:`check` ed)."""
        self.config = config

    def stream_of(self, channel: str) -> str | None:
        """The stream of a reading of ``channel`` (counted as received), or None when the
        channel is not configured (dropped)."""
        kind = CHANNEL + channel
        if kind not in self.sources:
            self._drops.drop(WRONG_FRAME, 1, f"reading of channel {channel!r}, not one "
                             f"of {self.config.channels!r}")
            return None
        self.received[channel] += 1
        return kind

    def plausible(self, t: float, kind: str, value: float) -> bool:
        """Whether ``value``, of the channel of stream ``kind`` at ``t`` s, is finite and
        within its type's limits (else it is counted)."""
        if not math.isfinite(value):
            return self._drops.drop(NONFINITE_POINT, 1, f"{kind} value {value} at t={t:.6f} s")
        channel_type = self.sources[kind].kind
        low, high = value_limits(channel_type, self.config)
        if channel_type == "binary" and value not in BINARY_VALUES:
            return self._drops.drop(VALUE_OUT_OF_LIMITS, 1, f"{kind} value {value:g} at t="
                                    f"{t:.6f} s is not a class label 0 or 1 (a binary "
                                    f"channel)")
        if not low <= value <= high:
            return self._drops.drop(VALUE_OUT_OF_LIMITS, 1, f"{kind} value {value:g} at t="
                                    f"{t:.6f} s outside its plausible [{low:g}, {high:g}] "
                                    f"(limits of a {channel_type} channel)")
        return True
