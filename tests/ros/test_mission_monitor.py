"""``poam-ros sim``'s mission monitor over real DDS: it pairs each map with its mapper's
status, keeps up with a burst of maps it had no time to read, and passes over a map whose
status was lost instead of waiting for it for ever."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.diagnostics import MapperStatus  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402

SECOND = 1_000_000_000  # ns
POINTS = np.array([[0.0, 0.0], [5.0, -5.0], [-10.0, 10.0]])


class Mapper:
    """Publishes what the mapper publishes for a map: its evaluation, its status and the
    batch it was made from."""

    def __init__(self, node) -> None:
        self.evaluation = node.create_publisher(PointCloud2, "map/evaluation", qos.LATCHED)
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics",
                                                 qos.DIAGNOSTICS_ALL)
        self.samples = node.create_publisher(PointCloud2, "samples", qos.SAMPLES)

    def batch(self, stamp: int) -> None:
        self.samples.publish(cv.samples_to_cloud(self._header(stamp), POINTS, np.zeros(3)))

    def map(self, stamp: int, samples: int, status: bool = True,
            data_stamp: int | None = None, target_std: float = 5.0) -> None:
        self.evaluation.publish(cv.evaluation_to_cloud(self._header(stamp), POINTS,
                                                       np.zeros(3), np.ones(3)))
        if status:
            self.status(stamp, samples, data_stamp, target_std)

    def status(self, stamp: int, samples: int, data_stamp: int | None = None,
               target_std: float = 5.0) -> None:
        record = MapperStatus(
            samples=samples, inducing_points=3, method="poam", device="cpu", updates=1,
            paused=False, buffered_batches=0, buffered_samples=0, queries_answered=0,
            failures=0, last_failure="", map_predict_time=0.0, latency=0.0, queue_wait=0.0,
            node_overhead=0.0, median_latency=0.0, map_stamp=stamp,
            data_stamp=stamp if data_stamp is None else data_stamp, journal="off",
            autosaves=0, autosave_time=0.0, target_mean=-20.0, target_std=target_std)
        self.diagnostics.publish(DiagnosticArray(status=[cv.diagnostic_status(
            "mapper", DiagnosticStatus.OK, "mapping", record)]))

    @staticmethod
    def _header(stamp: int) -> Header:
        return Header(frame_id="map", stamp=cv.nanoseconds_to_time(stamp))


@pytest.fixture
def monitor(ros_context, make_node, spin_until):
    """(the monitor, a :class:`Mapper` it has matched)."""
    from poam_ros.ros.mission_monitor import MissionMonitor
    from poam_ros.sim.default_terrain import default_terrain

    node = MissionMonitor(default_terrain((-31, 31, -31, 31)), context=ros_context)
    publisher = make_node("mapper")
    mapper = Mapper(publisher)
    assert spin_until(lambda: all(p.get_subscription_count() for p in (
        mapper.evaluation, mapper.samples)) and mapper.diagnostics.get_subscription_count(),
        node, publisher)
    yield node, mapper
    node.destroy_node()


def test_a_burst_of_maps_is_scored_map_by_map(monitor, spin_until):
    node, mapper = monitor
    maps = 60  # more than the default depth of 10 of any stream, published before a read
    mapper.batch(maps * SECOND)
    for index in range(1, maps + 1):
        mapper.map(index * SECOND, samples=10 * index)
    assert spin_until(lambda: len(node.records) == maps, node, timeout=15.0), \
        len(node.records)
    assert [record.num_samples for record in node.records] == \
        [10 * index for index in range(1, maps + 1)]
    assert node.unscored_maps == 0


def test_a_map_of_one_sample_is_recorded_unscored_and_the_next_scored(monitor, spin_until):
    node, mapper = monitor
    mapper.batch(2 * SECOND)
    mapper.map(1 * SECOND, samples=1, target_std=0.0)  # one sample: no MSLL baseline
    mapper.map(2 * SECOND, samples=20)
    assert spin_until(lambda: len(node.records) == 2, node)
    first, second = node.records
    assert np.isnan([first.smse, first.msll]).all()
    assert np.isfinite([second.smse, second.msll]).all()


def test_a_map_whose_status_was_lost_is_passed_over_not_waited_for(monitor, spin_until):
    node, mapper = monitor
    mapper.batch(3 * SECOND)
    mapper.map(1 * SECOND, samples=10)
    mapper.map(2 * SECOND, samples=20, status=False)  # its status lost on the way
    assert spin_until(lambda: len(node.records) == 1, node)
    assert not spin_until(lambda: len(node.records) > 1, node, timeout=0.5)  # it may come
    mapper.map(3 * SECOND, samples=30)
    assert spin_until(lambda: len(node.records) == 2, node)
    assert [record.num_samples for record in node.records] == [10, 30]
    assert node.unscored_maps == 1


def test_a_map_of_relayed_samples_waits_for_the_batches_of_its_data_stamp(monitor,
                                                                          spin_until):
    """A map that added only a teammate's unstamped soundings is stamped 1 ns past the map
    before it; its status's data stamp, not its own, says which batches it holds."""
    node, mapper = monitor
    mapper.map(1 * SECOND, samples=10)
    mapper.map(1 * SECOND + 1, samples=14, data_stamp=1 * SECOND)
    assert not spin_until(lambda: node.records, node, timeout=0.5)  # the batch is to come
    mapper.batch(1 * SECOND)
    assert spin_until(lambda: len(node.records) == 2, node)
    assert [record.num_samples for record in node.records] == [10, 14]
    assert node.unscored_maps == 0
