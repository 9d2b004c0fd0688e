"""The offline remap's configuration: which topics of a bag feed it, how its updates are cut,
and the check that a bag holds those topics with the stack's message types (before anything
is read: :func:`check_topics`). The remap itself: :mod:`poam_ros.bags.remap`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from poam_ros.bags.bag_reader import BagReader
from poam_ros.bags.bag_records import BagError
from poam_ros.ingest import feeders as fd
from poam_ros.ingest import streams as st
from poam_ros.ingest.attitude_depth import DEPTH, IMU
from poam_ros.ingest.config import IngestConfig
from poam_ros.params import Params, param

ODOMETRY, RANGE, CLOUD, PATH = ("nav_msgs/msg/Odometry", "sensor_msgs/msg/Range",
                                "sensor_msgs/msg/PointCloud2", "nav_msgs/msg/Path")
DIAGNOSTICS = "diagnostic_msgs/msg/DiagnosticArray"
NAVSATFIX = "sensor_msgs/msg/NavSatFix"


@dataclass
class RemapConfig(Params):
    """Which topics feed the remap and how its updates are cut."""

    odom_topic: str = param("/odom", "vehicle odometry (nav_msgs/Odometry)")
    range_topic: str = param("/sonar/range", "echo sounder (sensor_msgs/Range)")
    swath_topic: str = param("/sonar/swath", "multibeam swaths (sensor_msgs/PointCloud2)")
    plan_topic: str = param("/plan", "plans (nav_msgs/Path): their ends cut the batches")
    fix_topic: str = param("/fix", "position fixes (sensor_msgs/NavSatFix): resets of the "
                                   "horizontal position, as live (needs geo.*)")
    imu_topic: str = param("/imu", "attitude (sensor_msgs/Imu), read with the ingest's "
                                   "imu_attitude")
    depth_topic: str = param("/depth", "depth sensor (sensor_msgs/FluidPressure), read with "
                                       "the ingest's depth_from_pressure")
    map_topic: str = param("/map", "the live mapper's maps: update grouping and comparison")
    samples_topic: str = param("/samples", "the live ingest's batches (sensor_msgs/"
                                           "PointCloud2): the source with source=samples, "
                                           "else a check of the remap's own batches")
    source: str = param("sensors", "sensors: odometry and sonar through the ingest core; "
                                   "samples: the batches the live mapper received, as "
                                   "recorded", choices=("sensors", "samples"))
    diagnostics_topic: str = param("/diagnostics", "tells a simulator's bag")
    updates: str = param("auto", "map: the live mapper's updates, read from the recorded "
                                 "maps' stamps; batch: one update per batch; auto: map when "
                                 "the bag holds maps", choices=("auto", "map", "batch"))
    tail: str = param("auto", "samples after the last decision point: map, drop, or auto "
                              "(map only when the bag has no plans)",
                      choices=("auto", "map", "drop"))
    truth: str = param("auto", "score against the simulator's terrain: sim, none, or auto "
                               "(when the bag came from the simulator)",
                       choices=("auto", "sim", "none"))


def check_topics(reader: BagReader, config: RemapConfig,
                 ingest: IngestConfig | None = None) -> None:
    """Raise :class:`BagError` where the bag lacks the topics the remap reads or holds
    them with another type than the stack's (with ``ingest``: its channels', IMU's and
    depth sensor's too)."""
    topics = reader.topics
    listing = ", ".join(f"{t.name} ({t.msgtype})" for t in sorted(topics.values(),
                                                                  key=lambda t: t.name))
    if config.source == "samples":
        if config.samples_topic not in topics:
            raise BagError(f"{reader.path} has no {config.samples_topic} ({CLOUD}) to map "
                           f"(source samples); it holds: {listing or 'no topics'}")
    elif config.odom_topic not in topics:
        raise BagError(f"{reader.path} has no {config.odom_topic} ({ODOMETRY}), which the "
                       f"remap needs; it holds: {listing or 'no topics'}")
    elif config.range_topic not in topics and config.swath_topic not in topics:
        raise BagError(f"{reader.path} has neither {config.range_topic} ({RANGE}) nor "
                       f"{config.swath_topic} ({CLOUD}): no soundings to map; it holds: "
                       f"{listing}")
    expected = {config.odom_topic: ODOMETRY, config.range_topic: RANGE,
                config.swath_topic: CLOUD, config.plan_topic: PATH, config.map_topic: CLOUD,
                config.diagnostics_topic: DIAGNOSTICS, config.samples_topic: CLOUD,
                config.fix_topic: NAVSATFIX,
                **{topic: msgtype for topic, (msgtype, _) in
                   (sensor_inputs(ingest, config) if ingest else {}).items()}}
    for name, msgtype in expected.items():
        if name in topics and topics[name].msgtype != msgtype:
            stored = topics[name].msgtype or "a type it does not name"
            raise BagError(f"{reader.path}: {name} holds {stored}, but the stack reads "
                           f"{msgtype} there (pick another topic with the remap's topic "
                           f"options)")


def _absolute(topic: str) -> str:
    """A topic name as a bag stores it: a relative one resolved in the root namespace."""
    return topic if topic.startswith("/") else f"/{topic}"


def sensor_inputs(ingest: IngestConfig, config: RemapConfig) -> dict[str, tuple[str, Callable]]:
    """The ingest's channels, IMU and depth sensor by the topic a bag holds them on: (their
    message type, their feeder)."""
    return {_input_topic(feeder, config): (feeder.msgtype, feeder.feed)
            for feeder in fd.input_feeders(ingest)}


def sensor_streams(ingest: IngestConfig, config: RemapConfig) -> dict[str, str]:
    """The ingest stream (:mod:`~poam_ros.ingest.streams`) each sensor topic of a bag feeds."""
    streams = {config.odom_topic: st.ODOM, config.range_topic: st.RANGE,
               config.swath_topic: st.SWATH, config.fix_topic: st.FIX}
    return streams | {_input_topic(feeder, config): feeder.name
                      for feeder in fd.input_feeders(ingest)}


def _input_topic(feeder: fd.Feeder, config: RemapConfig) -> str:
    return {IMU: config.imu_topic, DEPTH: config.depth_topic}.get(feeder.name,
                                                                  _absolute(feeder.topic))
