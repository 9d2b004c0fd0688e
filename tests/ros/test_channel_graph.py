"""A second survey channel through the graph: the simulated AUV publishes its temperature
readings, the ingest subscribes the channel's topic and the ``samples`` cloud carries a
``temperature`` field; in lockstep the batches are the ROS-free ingest's on the same events."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from nav_msgs.msg import Path  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import PointCloud2, Temperature  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ingest import Ingest, IngestConfig  # noqa: E402
from poam_ros.mission import feed_ingest  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.simulated_auv_node import SimulatedAuvNode  # noqa: E402
from poam_ros.sim import SonarConfig, SurveySimulator  # noqa: E402
from poam_ros.sim.default_terrain import default_terrain  # noqa: E402
from poam_ros.sim.simulated_auv import Reading, SimulatedAuv  # noqa: E402
from poam_ros.sim.water_temperature import (  # noqa: E402
    WaterTemperature,
    WaterTemperatureConfig,
    temperature_sensor,
)
from poam_ros.workspace import Workspace, WorkspaceConfig  # noqa: E402

START = [30.0, -30.0, math.pi]
SEED = 5
PLANS = [[[15.0, -28.0], [12.0, -25.0]], [[12.0, -18.0]]]
CHANNELS = {"channels": ["temperature"], "channel_rates": [0.5], "float64_samples": True}
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def ros_free_batches():
    """The batches of the ROS-free simulator and ingest on :data:`PLANS`, fed as
    :class:`~poam_ros.mission.Mission` feeds them."""
    terrain = default_terrain((-31, 31, -31, 31))
    sensor = temperature_sensor(WaterTemperature(terrain, WaterTemperatureConfig(enabled=True)),
                                SEED)
    auv = SimulatedAuv(SurveySimulator(terrain, seed=SEED, start_pose=START), "lockstep",
                       sensors=[sensor])
    ingest = Ingest(IngestConfig(**CHANNELS), Workspace.from_config(WorkspaceConfig()))
    sonar, batches, readings = SonarConfig(), [], []
    for plan in PLANS:
        ingest.set_plan(plan, auv.time, auv.time)
        auv.set_plan(plan)
        for event in auv.advance(math.inf):
            if isinstance(event, Reading):
                readings.append(event)
            feed_ingest(ingest, event, sonar)
        ingest.poll(math.inf)
        batches += ingest.take_batches()
    return batches, readings


def test_the_temperature_channel_goes_through_the_graph_as_without_ros(start_node, make_node,
                                                                        spin_until):
    vehicle = start_node(SimulatedAuvNode, time_scale=25.0, seed=SEED, start_pose=START,
                         **{"temperature.enabled": True})
    ingest = start_node(IngestNode, **CHANNELS)
    tester = make_node("tester")
    plans = tester.create_publisher(Path, "plan", LATCHED)
    samples, temperatures = [], []
    tester.create_subscription(PointCloud2, "samples", samples.append, RELIABLE)
    tester.create_subscription(Temperature, "temperature", temperatures.append, RELIABLE)
    expected, readings = ros_free_batches()
    for number, plan in enumerate(PLANS):
        plans.publish(cv.path_from_waypoints(Header(frame_id="map"), np.asarray(plan)))
        assert spin_until(lambda: len(samples) > number, vehicle, ingest, tester,
                          timeout=20.0)
    assert spin_until(lambda: len(temperatures) == len(readings), vehicle, ingest, tester)

    # The simulator's messages: its readings, stamped at their sim time, in base_link.
    assert [m.temperature for m in temperatures] == [r.value for r in readings]
    np.testing.assert_allclose([msg.time_to_seconds(m.header.stamp) for m in temperatures],
                               [r.t for r in readings], rtol=0, atol=1e-9)
    assert {(m.header.frame_id, m.variance) for m in temperatures} == {("base_link", 0.05 ** 2)}

    # The ingest's batches: x, y, z and a temperature field, the ROS-free ingest's values.
    assert [f.name for f in samples[0].fields] == ["x", "y", "z", "temperature"]
    assert len(samples) == len(expected)
    for cloud, batch in zip(samples, expected):
        points = msg.cloud_to_points(cloud, ["temperature"])
        assert points.shape == batch.points.shape
        np.testing.assert_allclose(points[:, :2], batch.points[:, :2], rtol=0, atol=1e-9)
        # Range.range is float32 on the wire: ~1e-4 m at 1700 m; temperatures are float64.
        np.testing.assert_allclose(points[:, 2], batch.points[:, 2], rtol=0, atol=2e-4)
        np.testing.assert_array_equal(points[:, 3], batch.points[:, 3])
    assert sum(np.isfinite(msg.cloud_to_points(c, ["temperature"])[:, 3]).sum()
               for c in samples) == len(readings) > 0
    assert not ingest.core.drops.counts
