"""Record a short simulated mission over real DDS, then: an independent reader (``mcap``
with its ROS 2 decoder, not the project's code) finds every topic, count and definition;
the offline remap of the bag equals the map the live mapper published last; and the
recorder's own diagnostics report no loss.

The mission is the whole graph in lockstep (simulated AUV, ingest, mapper, planner) with
the recorder node beside it, small enough for a loaded 2-core machine: a 5-waypoint pilot
survey and two informative goals, a 40-inducing-point model.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)
mcap_reader = pytest.importorskip("mcap.reader")
mcap_ros2_decoder = pytest.importorskip("mcap_ros2.decoder")

from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import PointCloud2, Range  # noqa: E402

from poam_ros.bags import BagReader, MessageTypes, RecorderConfig  # noqa: E402
from poam_ros.bags.remap import remap_bag  # noqa: E402
from poam_ros.bags.remap_config import RemapConfig  # noqa: E402
from poam_ros.ingest import IngestConfig  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.ros.planner_node import PlannerNode  # noqa: E402
from poam_ros.ros.recorder_node import RecorderNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup, mission_seeds  # noqa: E402

MAPS = 3  # the pilot survey's map and two goals' maps
INGEST = IngestConfig(flush_grace=60.0, pending_timeout=60.0)
START = [30.0, -30.0, math.pi]


def _overrides(values: dict) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in values.items()]


def small_setup() -> MissionSetup:
    setup = MissionSetup()
    setup.mission = setup.mission.replace(seed=4)
    setup.mapping = setup.mapping.replace(num_inducing=40, train_steps=2, device="cpu")
    setup.max_entropy = setup.max_entropy.replace(num_candidates=150)
    setup.pilot = setup.pilot.replace(num_waypoints=5)
    return setup


class Probe:
    """Counts what the graph publishes, as a second subscriber beside the recorder."""

    def __init__(self, node):
        self.counts: Counter = Counter()
        self.map_stamps: list[int] = []
        # every message kept until read: a probe that falls behind on a loaded machine must
        # not lose what it counts against the bag
        reliable = QoSProfile(history=HistoryPolicy.KEEP_ALL,
                              reliability=ReliabilityPolicy.RELIABLE)
        for kind, topic, profile in ((Odometry, "/odom", reliable),
                                     (Range, "/sonar/range", reliable),
                                     (PointCloud2, "/samples", reliable),
                                     (PointCloud2, "/map", qos.LATCHED),
                                     (Path, "/plan", qos.LATCHED)):
            node.create_subscription(kind, topic, self._counter(topic), profile)

    def _counter(self, topic):
        def count(message):
            self.counts[topic] += 1
            if topic == "/map":
                stamp = message.header.stamp
                self.map_stamps.append(stamp.sec * 10**9 + stamp.nanosec)
        return count


@pytest.fixture(scope="module")
def recorded(ros_context, tmp_path_factory):
    """The mission, recorded; returns (setup, bag path, recorder counts, probe, nodes' facts)."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    setup = small_setup()
    seeds = mission_seeds(setup.mission.seed)
    bag = tmp_path_factory.mktemp("bags") / "mission"
    recorder = RecorderNode(context=ros_context, config=RecorderConfig(
        output=str(bag), discovery_period=0.1))
    auv = SimulatedAuvNode(context=ros_context, parameter_overrides=_overrides({
        **setup.node_parameters("simulated_auv"), "seed": seeds["simulator"],
        "time_scale": 25.0, "start_pose": START,
        # The ingest, the probe and the recorder (which finds the topic on its discovery
        # timer) all hear the first pose.
        "hold_for": ["sensor_ingest", "probe", "recorder_intake"]}))
    # On a loaded machine a single-threaded executor spinning six nodes can hold a reading
    # back for more than a second: deep sensor queues, and grace periods long enough that
    # the live ingest's batches do not depend on its wall clock (the remap sees every
    # message in receive order, and cannot know the live callbacks' timing).
    ingest = IngestNode(context=ros_context, parameter_overrides=_overrides({
        **{f"qos_overrides.{topic}.subscription.depth": 5000
           for topic in ("/odom", "/sonar/range")},
        **{name: getattr(INGEST, name) for name in ("flush_grace", "pending_timeout")}}))
    mapper = MapperNode(context=ros_context,
                        parameter_overrides=_overrides(setup.node_parameters("mapper")))
    planner = PlannerNode(context=ros_context,
                          parameter_overrides=_overrides(setup.node_parameters("planner")))
    probe_node = Node("probe", context=ros_context)
    probe = Probe(probe_node)
    nodes = [recorder, auv, ingest, mapper, planner, probe_node]
    executor = SingleThreadedExecutor(context=ros_context)
    for node in nodes:
        executor.add_node(node)
    try:
        import time

        deadline = time.monotonic() + 240.0
        while len(set(probe.map_stamps)) < MAPS and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert len(set(probe.map_stamps)) >= MAPS, \
            f"only {len(set(probe.map_stamps))} of {MAPS} maps within 240 s"
        # Stop the mission where it stands: the planner first (no more plans), then let
        # the recorder take what is in flight.
        executor.remove_node(planner)
        planner.destroy_node()
        settle = time.monotonic() + 2.0
        while time.monotonic() < settle:
            executor.spin_once(timeout_sec=0.05)
        facts = {"odom_published": auv.auv.simulator.steps + 1,
                 "lost": dict(recorder.lost), "refused": dict(recorder.refused),
                 "ingest_lost": ingest.lost_in_transport,
                 "ingest_grace": ingest.core.batcher.flushes_on_grace,
                 "ingest_dropped": dict(ingest.core.drops.counts)}
        for node in (recorder, auv, ingest, mapper, probe_node):
            executor.remove_node(node)
        recorder.destroy_node()  # closes the bag
        counts = {t.name: t.count for t in recorder.writer.topics}
    finally:
        for node in (auv, ingest, mapper, probe_node):
            node.destroy_node()
        executor.shutdown()
    return setup, bag, counts, probe, facts


def test_an_independent_reader_finds_every_topic_count_and_definition(recorded):
    setup, bag, counts, probe, facts = recorded
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    files = sorted(bag.glob("*.mcap"))
    assert files and (bag / "metadata.yaml").is_file()
    seen: Counter = Counter()
    schemas: dict[str, tuple[str, str]] = {}
    decoded_odom = []
    for file in files:
        with file.open("rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            summary = reader.get_summary()
            for channel in summary.channels.values():
                schema = summary.schemas[channel.schema_id]
                schemas[channel.topic] = (schema.name, schema.data.decode())
                assert channel.message_encoding == "cdr" and schema.encoding == "ros2msg"
                assert "offered_qos_profiles" in channel.metadata
            for schema, channel, message, ros_message in reader.iter_decoded_messages():
                seen[channel.topic] += 1
                if channel.topic == "/odom":
                    decoded_odom.append(ros_message)
    # Every topic of the stack that was published is in the bag, with every message.
    expected_types = {"/odom": "nav_msgs/msg/Odometry", "/sonar/range": "sensor_msgs/msg/Range",
                      "/samples": "sensor_msgs/msg/PointCloud2", "/plan": "nav_msgs/msg/Path",
                      "/goal": "geometry_msgs/msg/PoseStamped",
                      "/map": "sensor_msgs/msg/PointCloud2",
                      "/map/std": "nav_msgs/msg/OccupancyGrid",
                      "/map/inducing": "sensor_msgs/msg/PointCloud2",
                      "/uncertainty/query": "sensor_msgs/msg/PointCloud2",
                      "/uncertainty/response": "sensor_msgs/msg/PointCloud2",
                      "/clock": "rosgraph_msgs/msg/Clock",
                      "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray"}
    assert set(expected_types) <= set(seen), f"missing: {set(expected_types) - set(seen)}"
    types = MessageTypes()
    for topic, msgtype in expected_types.items():
        assert schemas[topic][0] == msgtype
        assert schemas[topic][1] == types.definition(msgtype)[0], f"definition of {topic}"
    assert dict(seen) == counts, "the reader's counts differ from what the recorder wrote"
    for topic in ("/odom", "/sonar/range", "/samples", "/plan"):
        assert seen[topic] == probe.counts[topic], topic
    assert seen["/map"] >= MAPS
    assert not facts["lost"] and not facts["refused"]
    # Decoded by the independent decoder: stamps in order, the poses as published.
    stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in decoded_odom]
    assert stamps == sorted(stamps)
    # every pose the vehicle published (held between plans, it repeats its last: same stamp)
    assert len(set(stamps)) == facts["odom_published"]
    metadata = BagReader(bag)
    assert {name: t.count for name, t in metadata.topics.items()} == counts


@pytest.mark.parametrize("source", ["sensors", "samples"])
def test_offline_remap_equals_the_last_live_map(recorded, source):
    """From the raw sensors through the ingest core (or from the recorded batches), with
    the live mission's method, parameters and seed: the live maps, to the bit."""
    setup, bag, counts, probe, facts = recorded
    assert facts["ingest_lost"] == facts["ingest_grace"] == 0, facts
    result = remap_bag(bag, replace(setup, ingest=INGEST), RemapConfig(source=source))
    assert not [note for note in result.notes if "differ" in note], result.notes
    assert not result.ingest_drops and result.ingest_drops == Counter(facts["ingest_dropped"])
    comparison = result.comparison
    assert comparison is not None, result.notes
    # The newest live map in the bag is the one compared.
    assert comparison.stamp == max(probe.map_stamps)
    assert comparison.same_cells
    assert comparison.mean_diff == 0.0 and comparison.std_diff == 0.0, comparison
    assert comparison.compared == len(set(probe.map_stamps))
    assert not result.read_report.damaged


def test_remap_with_other_parameters_runs_on_the_same_bag(recorded):
    setup, bag, counts, probe, facts = recorded
    other = small_setup()
    other.mapping = other.mapping.replace(kernel="rbf", num_inducing=30)
    result = remap_bag(bag, replace(other, ingest=INGEST), RemapConfig())
    assert result.model.num_samples == sum(len(b) for b in result.batches)
    assert np.isfinite(result.records[-1].smse)  # scored: the bag came from the simulator
