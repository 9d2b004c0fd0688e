"""The mapper node over real DDS: maps, queries, services, failures and parameters."""

from __future__ import annotations

import threading
from functools import partial

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

import pyproj  # noqa: E402
import rasterio  # noqa: E402
import torch  # noqa: E402
from affine import Affine  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from graph_helpers import Probe, call  # noqa: E402
from rcl_interfaces.msg import Log  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.geo import read_map_product  # noqa: E402
from poam_ros.mapping.map_grid import MapGrid  # noqa: E402
from poam_ros.mapping.metrics import evaluation_points  # noqa: E402
from poam_ros.models import MappingConfig, NumericalError, load_model, make_model  # noqa: E402
from poam_ros.models.poam import POAM  # noqa: E402
from poam_ros.models.state_io import StateFileError  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402
from poam_ros.workspace import Workspace, WorkspaceConfig  # noqa: E402

MAPPING = MappingConfig(num_inducing=30, train_steps=2, batch_size=64, device="cpu")


def mapping_parameters(config: MappingConfig) -> dict:
    """``config`` as the mapper's ``mapping.*`` overrides; empty lists left out (ROS cannot
    tell their element type; each such field's default is empty)."""
    return {f"mapping.{k}": v for k, v in config.to_parameters().items() if v != []}


SMALL = {**mapping_parameters(MAPPING),
         "workspace.vertices": [0.0, 0.0, 20.0, 0.0, 20.0, 20.0, 0.0, 20.0],
         "grid.resolution": 2.0,
         "journal.enabled": False}  # tests/ros/test_mapper_crash.py tests the journal
STATUS = "mapper: mapping"
TIMEOUT = 30.0  # s; generous, the machine is shared
# transient local, as rcl's /rosout publisher: a log sent before the match still comes
ROSOUT = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def batch(seed: int, n: int = 80):
    xy = np.random.default_rng(seed).uniform(0.0, 20.0, (n, 2))
    return xy, np.sin(xy[:, 0] / 3.0) + xy[:, 1] / 10.0


def offline_model(*batches):
    """The model the mapper should hold after one update on ``batches``."""
    model = make_model(MAPPING)
    for xy, z in batches:
        model.add_data(xy, z)
    model.update()
    return model


@pytest.fixture
def start_mapper(start_node):
    return lambda **extra: start_node(MapperNode, **{**SMALL, **extra})


@pytest.fixture
def graph(start_mapper, make_node, spin_until):
    """A mapper and a probe that can reach it."""
    mapper = start_mapper()
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0
                      and probe.query_pub.get_subscription_count() > 0, mapper, probe.node)
    return mapper, probe


def updates(probe) -> int:
    return probe.last_status(STATUS)[2].updates if STATUS in probe.diagnostics else 0


def test_a_batch_gives_the_map_layers_and_diagnostics(graph, spin_until):
    mapper, probe = graph
    xy, z = batch(0)
    probe.send_samples(xy, z, stamp_ns=5_000_000_123)
    # the status the update publishes once timed (a timer's may come between map and timing)
    assert spin_until(lambda: probe.maps and probe.std_grids and probe.inducing
                      and updates(probe) == 1 and probe.last_status(STATUS)[2].latency > 0,
                      mapper, probe.node, timeout=TIMEOUT)

    cloud = probe.maps[-1]
    assert (cloud.height, cloud.width) == (10, 10) and cloud.header.frame_id == "map"
    assert [f.name for f in cloud.fields] == ["x", "y", "z", "mean", "std", "lengthscale"]
    assert msg.time_to_nanoseconds(cloud.header.stamp) == 5_000_000_123  # the samples' time
    arrays = msg.cloud_to_arrays(cloud)
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    np.testing.assert_allclose(np.column_stack([arrays["x"], arrays["y"]]), grid.points)
    mean, std = offline_model((xy, z)).predict(grid.points)
    np.testing.assert_allclose(arrays["mean"], mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arrays["std"], std, rtol=1e-5)
    assert (arrays["lengthscale"] > 0).all()

    std_grid = probe.std_grids[-1]
    assert (std_grid.info.width, std_grid.info.height, std_grid.info.resolution) == (10, 10, 2.0)
    assert 0 < probe.inducing[-1].width <= 30

    level, _, values = probe.last_status(STATUS)
    assert level == DiagnosticStatus.OK[0]
    assert (values.samples, values.updates, values.device) == (80, 1, "cpu")
    for number in (values.latency, values.update_time, values.map_predict_time,
                   values.node_overhead, values.median_latency, values.figures["noise"],
                   values.figures["noise_std"]):
        assert number == number  # a number, not NaN
    assert values.figures["noise_std"] > 0  # the learned noise, in metres


def test_idle_training_moves_the_map_publishes_it_again_and_serves_it(start_mapper, make_node,
                                                                      spin_until):
    """mapping.idle_steps: after the update, rounds of train_steps steps while no batch
    waits; the moved map goes out again with the update's stamp, and queries are answered
    by its model: the offline model updated, then refined by as many steps."""
    mapper = start_mapper(**{"mapping.idle_steps": 7})
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0
                      and probe.query_pub.get_subscription_count() > 0, mapper, probe.node)
    xy, z = batch(0)
    probe.send_samples(xy, z, stamp_ns=5_000_000_123)

    def idled():
        return (len(probe.maps) >= 2 and STATUS in probe.diagnostics
                and probe.last_status(STATUS)[2].figures.get("idle_steps") == 7)
    assert spin_until(idled, mapper, probe.node, timeout=TIMEOUT)
    first, moved = (msg.cloud_to_arrays(cloud) for cloud in (probe.maps[0], probe.maps[-1]))
    assert probe.maps[-1].header.stamp == probe.maps[0].header.stamp  # the same samples
    offline = offline_model((xy, z))
    grid = MapGrid((0.0, 20.0, 0.0, 20.0), 2.0)
    np.testing.assert_allclose(first["mean"], offline.predict(grid.points)[0], atol=1e-5)
    offline.refine(7)  # in rounds of 2, 2, 2 and 1
    mean, std = offline.predict(grid.points)
    np.testing.assert_allclose(moved["mean"], mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(moved["std"], std, rtol=1e-5)
    assert np.abs(moved["mean"] - first["mean"]).max() > 1e-4  # training moved it
    values = probe.last_status(STATUS)[2]
    assert values.updates == 1 and values.figures["idle_time"] > 0
    probe.send_query(grid.points[:5], stamp_ns=7)
    assert spin_until(lambda: probe.response_to(7) is not None, mapper, probe.node)
    np.testing.assert_allclose(probe.response_to(7)[1],
                               offline.predict(grid.points[:5], include_noise=True)[1],
                               rtol=1e-9)


def test_queries_get_the_predictive_std_of_a_measurement(graph, spin_until):
    mapper, probe = graph
    points = np.array([[1.0, 2.0], [10.0 / 3.0, 19.5]])
    probe.send_query(points, stamp_ns=1)
    assert spin_until(lambda: probe.response_to(1) is not None, mapper, probe.node)
    assert probe.response_to(1)[1].shape == (0,)  # no model yet: an empty answer

    xy, z = batch(1)
    probe.send_samples(xy, z)
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    probe.send_query(points, stamp_ns=2)
    assert spin_until(lambda: probe.response_to(2) is not None, mapper, probe.node)
    answered, std = probe.response_to(2)
    np.testing.assert_array_equal(answered, points)
    np.testing.assert_array_equal(std, offline_model((xy, z)).predict(points,
                                                                      include_noise=True)[1])


def test_the_evaluation_follows_each_map_with_its_model(start_mapper, make_node, spin_until):
    """map/evaluation: the map's model at the mission's evaluation points, stamped as the map."""
    mapper = start_mapper(evaluation_grid=6)
    probe = Probe(make_node("probe"))
    evaluations = []
    probe.node.create_subscription(PointCloud2, "map/evaluation", evaluations.append,
                                   qos.LATCHED)
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    xy, z = batch(2)
    probe.send_samples(xy, z, stamp_ns=7_000_000_001)
    assert spin_until(lambda: evaluations and probe.maps, mapper, probe.node, timeout=TIMEOUT)
    cloud = evaluations[-1]
    assert cloud.header.stamp == probe.maps[-1].header.stamp
    points, mean, std = msg.cloud_to_evaluation(cloud)
    workspace = Workspace.from_config(WorkspaceConfig(vertices=SMALL["workspace.vertices"]))
    np.testing.assert_array_equal(points, evaluation_points(workspace, 6))
    expected = offline_model((xy, z)).predict(points, include_noise=True)
    np.testing.assert_array_equal(mean, expected[0])
    np.testing.assert_array_equal(std, expected[1])


def test_batches_received_while_paused_go_into_one_update(graph, make_node, spin_until):
    mapper, probe = graph
    pause = probe.node.create_client(SetBool, "/mapper/pause")
    assert call(pause, SetBool.Request(data=True), spin_until, mapper, probe.node).success
    batches = [batch(seed, 40) for seed in (2, 3, 4)]
    for xy, z in batches:
        probe.send_samples(xy, z)
    assert spin_until(lambda: STATUS in probe.diagnostics and probe.last_status(STATUS)[2]
                      .buffered_batches == 3, mapper, probe.node, timeout=5.0)
    assert probe.maps == []

    answer = call(pause, SetBool.Request(data=False), spin_until, mapper, probe.node)
    assert answer.success and "3 buffered batches" in answer.message
    assert spin_until(lambda: probe.maps and updates(probe) == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    values = probe.last_status(STATUS)[2]
    assert (values.updates, values.samples, values.new_samples) == (1, 120, 120)


def test_an_update_in_progress_blocks_neither_queries_nor_services(
        graph, spin_until, monkeypatch, tmp_path):
    mapper, probe = graph
    entered, release = threading.Event(), threading.Event()
    original = POAM._update_posterior

    def held(model, *args):
        if model.num_updates == 1:  # the second update waits for the test
            entered.set()
            release.wait(timeout=TIMEOUT)
        return original(model, *args)

    monkeypatch.setattr(POAM, "_update_posterior", held)
    first = batch(5)
    probe.send_samples(*first)
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    points = np.array([[5.0, 5.0], [15.0, 12.0]])
    probe.send_query(points, stamp_ns=10)
    assert spin_until(lambda: probe.response_to(10) is not None, mapper, probe.node)

    probe.send_samples(*batch(6))
    assert spin_until(entered.is_set, mapper, probe.node, timeout=TIMEOUT)
    try:
        # While the update waits: two more batches, a query and a save.
        probe.send_samples(*batch(7, 30))
        probe.send_samples(*batch(8, 30))
        probe.send_query(points, stamp_ns=11)
        assert spin_until(lambda: probe.response_to(11) is not None, mapper, probe.node)
        np.testing.assert_array_equal(probe.response_to(11)[1], probe.response_to(10)[1])
        mapper.set_parameters([Parameter("save_path", value=str(tmp_path / "held.pt"))])
        save = probe.node.create_client(Trigger, "/mapper/save")
        assert call(save, Trigger.Request(), spin_until, mapper, probe.node).success
        assert load_model(tmp_path / "held.pt").num_samples == 80  # the served model
        assert len(probe.maps) == 1
        # The served model is a copy, not the live model the held update is changing.
        served, live = mapper._worker.served_model().model, mapper._worker._loop.model
        assert served is not live and (served.num_samples, live.num_samples) == (80, 160)
    finally:
        release.set()
    # The held update publishes, then the two batches that queued behind it make one more.
    assert spin_until(lambda: updates(probe) == 3, mapper, probe.node, timeout=TIMEOUT)
    values = probe.last_status(STATUS)[2]
    assert (values.samples, values.new_samples) == (220, 60)


def test_save_then_resume_from_the_state_file(graph, start_mapper, make_node, spin_until,
                                              tmp_path):
    mapper, probe = graph
    save = probe.node.create_client(Trigger, "/mapper/save")
    answer = call(save, Trigger.Request(), spin_until, mapper, probe.node)
    assert not answer.success and "no map" in answer.message

    path = tmp_path / "map_state.pt"
    mapper.set_parameters([Parameter("save_path", value=str(path))])
    probe.send_samples(*batch(9))
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    answer = call(save, Trigger.Request(), spin_until, mapper, probe.node)
    assert answer.success and str(path) in answer.message and path.is_file()
    points = np.array([[3.0, 4.0]])
    probe.send_query(points, stamp_ns=20)
    assert spin_until(lambda: probe.response_to(20) is not None, mapper, probe.node)
    mapper.destroy_node()

    resumed = start_mapper(state_file=str(path))
    late = Probe(make_node("late_probe"))  # joins after the resumed map was latched
    assert spin_until(lambda: late.maps and late.query_pub.get_subscription_count() > 0,
                      resumed, late.node, timeout=TIMEOUT)
    np.testing.assert_array_equal(msg.cloud_to_arrays(late.maps[-1])["mean"],
                                  msg.cloud_to_arrays(probe.maps[-1])["mean"])
    late.send_query(points, stamp_ns=21)
    assert spin_until(lambda: late.response_to(21) is not None, resumed, late.node)
    np.testing.assert_array_equal(late.response_to(21)[1], probe.response_to(20)[1])


def test_export_writes_the_published_map_as_a_georeferenced_cog(start_mapper, make_node,
                                                                spin_until, tmp_path):
    path = tmp_path / "products" / "map.tif"
    mapper = start_mapper(**{"geo.anchor": "projected", "geo.crs": "UTM 33N",
                             "geo.origin_easting": 400_000.0,
                             "geo.origin_northing": 5_000_000.0,
                             "geo.vertical_reference": "chart datum",
                             "export_path": str(path)})
    probe = Probe(make_node("probe"))
    export = probe.node.create_client(Trigger, "/mapper/export")
    answer = call(export, Trigger.Request(), spin_until, mapper, probe.node)
    assert not answer.success and answer.message == "no map to export yet"

    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    probe.send_samples(*batch(12))
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    answer = call(export, Trigger.Request(), spin_until, mapper, probe.node)
    assert answer.success and answer.message.endswith(
        f"to {path} in WGS 84 / UTM zone 33N"), answer.message
    product = read_map_product(path)
    assert product.crs == pyproj.CRS.from_epsg(32633)
    assert product.vertical_reference == "chart datum"
    # The 10 x 10 grid of 2 m cells over [0, 20]^2, its north-west corner in UTM.
    assert product.transform == Affine(2.0, 0.0, 400_000.0, 0.0, -2.0, 5_000_020.0)
    published = msg.cloud_to_arrays(probe.maps[-1])
    for name in ("mean", "std", "lengthscale"):  # the map as published (float32 both)
        np.testing.assert_array_equal(product.layers[name].ravel(), published[name])
    assert product.layers["sample_density"].sum() == 80
    with rasterio.open(path) as dataset:
        assert dataset.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"


def test_export_is_refused_without_an_anchor(graph, spin_until, tmp_path):
    mapper, probe = graph
    mapper.set_parameters([Parameter("export_path", value=str(tmp_path / "map.tif"))])
    probe.send_samples(*batch(13))
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    export = probe.node.create_client(Trigger, "/mapper/export")
    answer = call(export, Trigger.Request(), spin_until, mapper, probe.node)
    assert not answer.success and "geo.anchor" in answer.message
    assert not (tmp_path / "map.tif").exists()


def test_a_geojson_workspace_is_placed_with_the_mapper_s_own_anchor(start_mapper, make_node,
                                                                    spin_until, tmp_path):
    """A robot's file (robot.launch.xml) names the workspace in lat/lon in the mapper's own
    section: its map grid and sample check are the map-metre polygon; without the anchor
    the start, and a change to such a file, are refused."""
    from poam_ros.params import ConfigError

    area = tmp_path / "area.geojson"  # 0.0002° x 0.0002° at 59° N (WGS 84): 11.5 m x 22.3 m
    area.write_text('{"type": "Polygon", "coordinates": [[[10.0, 59.0], [10.0002, 59.0], '
                    '[10.0002, 59.0002], [10.0, 59.0002], [10.0, 59.0]]]}')
    anchor = {"geo.anchor": "latlon", "geo.origin_latitude": 59.0,
              "geo.origin_longitude": 10.0}
    mapper = start_mapper(**{"workspace.geojson": str(area),
                             **anchor})
    xmin, xmax, ymin, ymax = mapper._worker.config.workspace.bounds
    assert (xmin, ymin) == pytest.approx((0.0, 0.0), abs=1e-6)
    assert (xmax, ymax) == pytest.approx((11.495, 22.279), abs=0.002)
    assert mapper._worker.config.grid.shape == (12, 6)  # 2 m cells over 22.3 m x 11.5 m
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    xy, z = batch(20)
    xy = xy / 2.0
    xy[0] = [5.0, 30.0]  # north of the area
    probe.send_samples(xy, z)
    assert spin_until(lambda: probe.maps and STATUS in probe.diagnostics, mapper, probe.node,
                      timeout=TIMEOUT)
    assert probe.last_status(STATUS)[2].samples == 79
    assert (probe.maps[-1].height, probe.maps[-1].width) == (12, 6)

    [result] = mapper.set_parameters([Parameter("workspace.geojson",
                                                value=str(tmp_path / "missing.geojson"))])
    assert not result.successful and "missing.geojson: unreadable GeoJSON" in result.reason
    with pytest.raises(ConfigError, match="area.geojson' is in latitude/longitude: set"):
        start_mapper(**{"workspace.geojson": str(area)})


def test_a_state_file_that_cannot_be_read_stops_the_start(start_mapper, tmp_path):
    (tmp_path / "broken.pt").write_bytes(b"not a model")
    with pytest.raises(StateFileError, match="broken.pt"):
        start_mapper(state_file=str(tmp_path / "broken.pt"))


def test_reset_clears_the_map_and_starts_a_new_model(graph, spin_until):
    mapper, probe = graph
    probe.send_samples(*batch(10))
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    reset = probe.node.create_client(Trigger, "/mapper/reset")
    assert call(reset, Trigger.Request(), spin_until, mapper, probe.node).success
    assert spin_until(lambda: len(probe.maps) == 2, mapper, probe.node)
    assert probe.maps[-1].width * probe.maps[-1].height == 0  # latched subscribers drop it
    probe.send_query(np.array([[1.0, 1.0]]), stamp_ns=30)
    assert spin_until(lambda: probe.response_to(30) is not None, mapper, probe.node)
    assert probe.response_to(30)[1].shape == (0,)

    xy, z = batch(11)
    probe.send_samples(xy, z)
    assert spin_until(lambda: len(probe.maps) == 3, mapper, probe.node, timeout=TIMEOUT)
    points = np.array([[1.0, 1.0]])
    probe.send_query(points, stamp_ns=31)
    assert spin_until(lambda: probe.response_to(31) is not None, mapper, probe.node)
    np.testing.assert_array_equal(probe.response_to(31)[1],
                                  offline_model((xy, z)).predict(points, include_noise=True)[1])


def test_a_failed_update_keeps_the_last_good_map_and_reports_it(graph, spin_until,
                                                                monkeypatch):
    mapper, probe = graph
    probe.send_samples(*batch(12))
    assert spin_until(lambda: probe.maps and updates(probe) == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    points = np.array([[2.0, 2.0]])
    probe.send_query(points, stamp_ns=40)
    assert spin_until(lambda: probe.response_to(40) is not None, mapper, probe.node)

    def fail(*_):
        raise NumericalError("Cholesky of K_uu failed (test)")

    monkeypatch.setattr(POAM, "_update_posterior", fail)
    probe.send_samples(*batch(13))

    def reported():
        return STATUS in probe.diagnostics and probe.last_status(STATUS)[0] == \
            DiagnosticStatus.ERROR[0]

    assert spin_until(reported, mapper, probe.node, timeout=TIMEOUT)
    level, message, values = probe.last_status(STATUS)
    assert "K_uu failed" in message and values.failures == 1
    assert len(probe.maps) == 1
    probe.send_query(points, stamp_ns=41)
    assert spin_until(lambda: probe.response_to(41) is not None, mapper, probe.node)
    np.testing.assert_array_equal(probe.response_to(41)[1], probe.response_to(40)[1])

    # Every retry on a part of the batch failed too: its samples were set aside, counted.
    assert values.rejected["update_failed"] == 80
    monkeypatch.undo()  # the next batch is mapped: the failed one does not block it
    probe.send_samples(*batch(14))
    assert spin_until(lambda: len(probe.maps) == 2 and updates(probe) == 2, mapper,
                      probe.node, timeout=TIMEOUT)
    level, _, values = probe.last_status(STATUS)
    assert level == DiagnosticStatus.OK[0] and values.samples == 160


@pytest.mark.parametrize("first", [True, False])
def test_samples_set_aside_leave_the_crash_journal(start_mapper, make_node, spin_until,
                                                   monkeypatch, tmp_path, first):
    """A restart does not replay samples set aside after a failed update (to fail on them
    again): the journal's base moves past them, and what came meanwhile is kept."""
    mapper = start_mapper(**{"journal.enabled": True, "journal.path": str(tmp_path / "j"),
                             "journal.autosave_period": 0.0})
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    if not first:
        probe.send_samples(*batch(20))
        assert spin_until(lambda: updates(probe) == 1, mapper, probe.node, timeout=TIMEOUT)

    def fail(*_):
        raise NumericalError("Cholesky of K_uu failed (test)")

    monkeypatch.setattr(POAM, "_update_posterior", fail)
    poison = batch(21)
    probe.send_samples(*poison)
    assert spin_until(lambda: STATUS in probe.diagnostics and probe.last_status(
        STATUS)[2].rejected.get("update_failed") == 80, mapper, probe.node, timeout=TIMEOUT)
    monkeypatch.undo()
    probe.send_samples(*batch(22))
    assert spin_until(lambda: updates(probe) == (1 if first else 2), mapper, probe.node,
                      timeout=TIMEOUT)

    recovery = mapper._persistence.journal.recover()
    saved = load_model(recovery.autosave).num_samples if recovery.autosave else 0
    assert saved + len(recovery.z) == (80 if first else 160)
    replayed = recovery.xy if recovery.autosave is None else np.vstack(
        [load_model(recovery.autosave).buffer.x, recovery.xy])
    assert not np.isin(poison[0][:, 0], replayed[:, 0]).any()


def test_a_method_s_own_figures_reach_diagnostics_and_the_dual_gp_shows_its_memory(
        start_mapper, make_node, spin_until):
    mapper = start_mapper(**{"mapping.method": "dual-gp", "mapping.dual.memory_per_batch": 7})
    probe = Probe(make_node("probe"))
    memory = []
    probe.node.create_subscription(PointCloud2, "map/memory", memory.append, qos.LATCHED)
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    xy, z = batch(30)
    probe.send_samples(xy, z)
    assert spin_until(lambda: memory and updates(probe) == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    points = msg.cloud_to_points(memory[-1])
    assert points.shape == (7, 3)
    for x, y, value in points.astype(float):  # memory samples are samples, as measured
        row = np.argmin(np.hypot(xy[:, 0] - x, xy[:, 1] - y))
        np.testing.assert_allclose([xy[row, 0], xy[row, 1], z[row]], [x, y, value],
                                   rtol=1e-6, atol=1e-5)
    values = probe.last_status(STATUS)[2]
    assert values.figures["memory_size"] == 7 and values.figures["memory_added"] == 7


def test_a_sample_far_outside_the_workspace_is_refused_before_the_scaler(graph, spin_until):
    mapper, probe = graph
    xy, z = batch(16)
    xy[3] = [100_000.0, 5.0]  # 100 km away, in the first batch: it would fix the scaler
    probe.send_samples(xy, z)
    assert spin_until(lambda: STATUS in probe.diagnostics and probe.last_status(STATUS)[2]
                      .rejected.get("outside_workspace") == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    assert probe.last_status(STATUS)[2].samples == 79


def test_samples_in_another_frame_are_refused_and_counted(graph, spin_until):
    mapper, probe = graph
    probe.send_samples(*batch(15), frame="odom")
    assert spin_until(lambda: STATUS in probe.diagnostics and probe.last_status(STATUS)[2]
                      .rejected.get("wrong_frame") == 1, mapper, probe.node, timeout=5.0)
    assert probe.maps == []


@pytest.mark.parametrize("name, value, reason", [
    ("grid.resolution", -1.0, "out of range"),
    ("grid.resolution", 0.001, "coarser resolution"),
    ("grid.extent", [1.0, 0.0, 0.0, 1.0], "xmin < xmax"),
    ("workspace.vertices", [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0], "Self-intersection"),
    ("mapping.method", "kriging", "MappingConfig.method must be one of"),
    ("state_file", "/tmp/other.pt", "read-only"),
])
def test_invalid_parameter_changes_are_refused(start_mapper, name, value, reason):
    mapper = start_mapper()
    [result] = mapper.set_parameters([Parameter(name, value=value)])
    assert not result.successful and reason in result.reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_is_refused_where_torch_sees_none(start_mapper):
    [result] = start_mapper().set_parameters([Parameter("mapping.device", value="cuda")])
    assert not result.successful and "no CUDA device" in result.reason


def test_a_batch_that_adds_nothing_republishes_the_map_with_its_stamp(graph, spin_until):
    """A leg whose soundings all fell outside the workspace ends in an empty batch; a
    lockstep planner waits for a map at least as new, so the map stands for it too."""
    mapper, probe = graph
    probe.send_samples(*batch(17), stamp_ns=7_000_000_000)
    assert spin_until(lambda: len(probe.maps) == 1 and updates(probe) == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    probe.send_samples(np.empty((0, 2)), np.empty(0), stamp_ns=9_000_000_000)
    assert spin_until(lambda: len(probe.maps) == 2, mapper, probe.node, timeout=TIMEOUT)
    first, second = (msg.cloud_to_arrays(cloud) for cloud in probe.maps)
    assert msg.time_to_nanoseconds(probe.maps[-1].header.stamp) == 9_000_000_000
    np.testing.assert_array_equal(second["mean"], first["mean"])
    assert updates(probe) == 1
    # The diagnostics still describe the map: its M, not the empty update's 0.
    assert spin_until(lambda: probe.last_status(STATUS)[2].map_stamp == 9_000_000_000,
                      mapper, probe.node)
    assert probe.last_status(STATUS)[2].inducing_points == probe.inducing[-1].width


def test_a_map_of_unstamped_samples_gets_its_own_stamp(graph, spin_until):
    """A teammate's relayed soundings come unstamped (0): their map is stamped 1 ns past the
    map before it, so that no two maps share a stamp, and its status keeps the data's time."""
    mapper, probe = graph
    probe.send_samples(*batch(17), stamp_ns=7_000_000_000)
    assert spin_until(lambda: len(probe.maps) == 1, mapper, probe.node, timeout=TIMEOUT)
    for seed, maps in ((18, 2), (19, 3)):
        probe.send_samples(*batch(seed, n=20), stamp_ns=0)
        assert spin_until(lambda: len(probe.maps) == maps and updates(probe) == maps, mapper,
                          probe.node, timeout=TIMEOUT)
    stamps = [msg.time_to_nanoseconds(cloud.header.stamp) for cloud in probe.maps]
    assert stamps == [7_000_000_000, 7_000_000_001, 7_000_000_002]
    status = probe.last_status(STATUS)[2]
    assert (status.map_stamp, status.data_stamp) == (7_000_000_002, 7_000_000_000)


def test_maps_follow_a_samples_clock_that_goes_back(start_node, make_node, spin_until):
    """A simulator restarted or a bag replayed again: the samples' clock goes back, and the
    maps follow it (not the old, larger stamp), with one warning."""
    # A name of its own: rcl sends a logger's /rosout through the first node of that name in
    # the process, and no more once that node is gone (the other tests' mappers).
    mapper = start_node(partial(MapperNode, "clock_mapper"), **SMALL)
    probe = Probe(make_node("probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    logs = []
    probe.node.create_subscription(Log, "/rosout", logs.append, ROSOUT)
    probe.send_samples(*batch(18), stamp_ns=500_000_000_000)
    assert spin_until(lambda: len(probe.maps) == 1, mapper, probe.node, timeout=TIMEOUT)
    probe.send_samples(*batch(19), stamp_ns=499_000_000_000)  # reordering: the data time stays
    assert spin_until(lambda: len(probe.maps) == 2, mapper, probe.node, timeout=TIMEOUT)
    assert msg.time_to_nanoseconds(probe.maps[-1].header.stamp) == 500_000_000_001
    probe.send_samples(*batch(20), stamp_ns=3_000_000_000)  # the clock went back 497 s
    assert spin_until(lambda: len(probe.maps) == 3, mapper, probe.node, timeout=TIMEOUT)
    assert msg.time_to_nanoseconds(probe.maps[-1].header.stamp) == 3_000_000_000
    probe.send_samples(*batch(21), stamp_ns=4_000_000_000)
    assert spin_until(lambda: len(probe.maps) == 4, mapper, probe.node, timeout=TIMEOUT)
    assert msg.time_to_nanoseconds(probe.maps[-1].header.stamp) == 4_000_000_000

    def resets():
        return [log for log in logs if log.name == mapper.get_name()
                and "clock went back" in log.msg]

    assert spin_until(lambda: resets(), mapper, probe.node, timeout=TIMEOUT)
    assert len(resets()) == 1 and resets()[0].level == Log.WARN


def test_a_new_grid_republishes_the_map(graph, spin_until):
    mapper, probe = graph
    probe.send_samples(*batch(16))
    assert spin_until(lambda: probe.maps, mapper, probe.node, timeout=TIMEOUT)
    result = mapper.set_parameters_atomically([Parameter("grid.resolution", value=4.0),
                                               Parameter("publish_lengthscale", value=False)])
    assert result.successful

    def republished():
        cloud = probe.maps[-1]
        return (cloud.height, cloud.width) == (5, 5) and \
            "lengthscale" not in [f.name for f in cloud.fields]

    assert spin_until(republished, mapper, probe.node, timeout=TIMEOUT)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_mapper_runs_on_cuda(start_mapper, make_node, spin_until):
    mapper = start_mapper(**{"mapping.device": "cuda"})
    probe = Probe(make_node("cuda_probe"))
    assert spin_until(lambda: probe.samples_pub.get_subscription_count() > 0, mapper,
                      probe.node)
    xy, z = batch(17)
    probe.send_samples(xy, z)
    assert spin_until(lambda: probe.maps and updates(probe) == 1, mapper, probe.node,
                      timeout=TIMEOUT)
    assert probe.last_status(STATUS)[2].device.startswith("cuda")
    points = np.array([[4.0, 4.0]])
    probe.send_query(points, stamp_ns=50)
    assert spin_until(lambda: probe.response_to(50) is not None, mapper, probe.node)
    cpu = offline_model((xy, z)).predict(points, include_noise=True)[1]
    np.testing.assert_allclose(probe.response_to(50)[1], cpu, rtol=1e-6)
