"""The offline remap without ROS, on a survey recorded from the ROS-free simulated AUV:
batches cut at the plans' ends, deterministic maps, scored against the simulator's
terrain; and bad input (missing topics, wrong types, a truncated bag, stamps going
backwards) giving one clear message or a replay of what is readable."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from poam_ros.bags import BagError, BagReader, BagWriter
from poam_ros.bags.remap import remap_bag
from poam_ros.bags.remap_config import RemapConfig
from poam_ros.bags.sim_survey import add, odometry, sounding, write_survey
from poam_ros.mission import Mission
from poam_ros.setup.mission_setup import (
    DEFAULT_SURVEY_FILE,
    MissionSetup,
    default_parameter_file,
)


def test_a_survey_is_remapped_at_its_decision_points(survey_bag):
    setup, bag = survey_bag
    first = remap_bag(bag, setup)
    assert [b.reason for b in first.batches] == ["arrival"] * 3
    assert len(first.records) == 3  # pilot and two legs, one update each
    assert first.model.num_samples == sum(len(b) for b in first.batches) == \
        BagReader(bag).topics["/sonar/range"].count
    assert np.isfinite(first.records[-1].smse) and first.truth is not None
    assert first.comparison is None  # no live map in this bag
    second = remap_bag(bag, setup)
    np.testing.assert_array_equal(first.layers.mean, second.layers.mean)
    np.testing.assert_array_equal(first.layers.std, second.layers.std)


def test_a_survey_of_the_georeferenced_default_is_recorded_and_scored_on_its_terrain(
        tmp_path):
    """The default setup places the embedded bathymetry by the map frame's anchor: the
    recorded survey and the remap's ground truth are the mission's terrain."""
    setup = MissionSetup.from_file(default_parameter_file(DEFAULT_SURVEY_FILE))
    setup.mapping = setup.mapping.replace(num_inducing=30, train_steps=2, device="cpu")
    setup.pilot = setup.pilot.replace(num_waypoints=4)
    result = remap_bag(write_survey(tmp_path / "survey", setup), setup, RemapConfig())
    expected = Mission(setup).terrain.elevation(result.eval_points)
    assert np.array_equal(result.truth, expected) and np.isfinite(result.records[-1].smse)


def test_another_kernel_and_no_truth(survey_bag):
    setup, bag = survey_bag
    other = copy.deepcopy(setup)
    other.mapping = other.mapping.replace(kernel="rbf")
    result = remap_bag(bag, other, RemapConfig(truth="none"))
    assert result.truth is None and math.isnan(result.records[-1].smse)
    assert result.mission_result() is None and result.layers is not None


def test_a_bag_without_the_sensor_topics_is_one_clear_error(tmp_path, survey_bag):
    setup, _ = survey_bag
    with BagWriter(tmp_path / "ranges") as writer:
        writer.write(add(writer, "/sonar/range", "sensor_msgs/msg/Range"), 1, sounding(0, 5))
    with pytest.raises(BagError, match=r"has no /odom \(nav_msgs/msg/Odometry\).*holds: "
                                       r"/sonar/range"):
        remap_bag(tmp_path / "ranges", setup)
    with pytest.raises(BagError, match="has no /samples"):
        remap_bag(tmp_path / "ranges", setup, config=RemapConfig(
            source="samples"))


def test_a_topic_of_another_type_is_one_clear_error(tmp_path, survey_bag):
    setup, _ = survey_bag
    with BagWriter(tmp_path / "odd") as writer:
        writer.write(add(writer, "/odom", "sensor_msgs/msg/Range"), 1, sounding(0, 5))
        writer.write(add(writer, "/sonar/range", "sensor_msgs/msg/Range"), 2, sounding(0, 5))
    with pytest.raises(BagError, match="/odom holds sensor_msgs/msg/Range, but the stack "
                                       "reads nav_msgs/msg/Odometry"):
        remap_bag(tmp_path / "odd", setup)


def test_a_truncated_survey_replays_what_is_readable(tmp_path, survey_bag):
    setup, bag = survey_bag
    killed = tmp_path / "killed"
    killed.mkdir()
    data = (bag / "survey_0.mcap").read_bytes()
    (killed / "killed_0.mcap").write_bytes(data[: len(data) * 2 // 3])
    result = remap_bag(killed, setup)
    full = BagReader(bag).topics["/sonar/range"].count
    assert 0 < result.model.num_samples < full
    assert result.read_report.damaged and "truncated" in result.read_report.summary()


def test_stamps_going_backwards_are_counted_not_fatal(tmp_path, survey_bag):
    setup, _ = survey_bag
    with BagWriter(tmp_path / "backwards") as writer:
        odom = add(writer, "/odom", "nav_msgs/msg/Odometry")
        ranges = add(writer, "/sonar/range", "sensor_msgs/msg/Range")
        times = [0.0, 0.1, 0.2, 0.3, 0.15, 0.4, 0.5]  # one pose stamped back in time
        for k, t in enumerate(times):
            writer.write(odom, k * 10**8, odometry(t, 20.0 - 0.1 * k, -20.0, math.pi))
        for k, t in enumerate((0.05, 0.25, 0.12, 0.45)):
            writer.write(ranges, 2 * 10**9 + k, sounding(t, 1500.0))
    result = remap_bag(tmp_path / "backwards", setup,
                       config=RemapConfig(tail="map", truth="none"))
    assert result.ingest_drops["pose_out_of_order"] == 1
    assert result.ingest_drops["out_of_order"] == 1
    assert any("/odom" in note and "going backwards" in note for note in result.notes)
    assert result.model.num_samples == 3


@pytest.mark.parametrize("glitched", ["/odom", "/sonar/range"])
def test_one_glitched_future_stamp_costs_only_itself(tmp_path, survey_bag, glitched):
    """A single message stamped 1000 s ahead (a GPS time glitch) is dropped as a stamp
    outlier, as live; the messages after it keep their place in data time."""
    setup, _ = survey_bag
    with BagWriter(tmp_path / "glitch") as writer:
        odom = add(writer, "/odom", "nav_msgs/msg/Odometry")
        ranges = add(writer, "/sonar/range", "sensor_msgs/msg/Range")
        for k in range(40):  # poses every 0.1 s, soundings between them, sent as stamped
            t, sent = 0.1 * k, k * 10**8
            pose_t = t + 1000.0 if glitched == "/odom" and k == 20 else t
            writer.write(odom, sent, odometry(pose_t, 20.0 - 0.1 * k, -20.0, math.pi))
            range_t = t + 0.05 + (1000.0 if glitched == "/sonar/range" and k == 20 else 0.0)
            writer.write(ranges, sent + 5 * 10**7, sounding(range_t, 1500.0))
    result = remap_bag(tmp_path / "glitch", setup,
                       config=RemapConfig(tail="map", truth="none"))
    if glitched == "/odom":
        assert result.ingest_drops["pose_stamp_outlier"] == 1
        assert result.model.num_samples == 39  # the last sounding has no pose after it
    else:
        assert result.ingest_drops["stamp_outlier"] == 1
        assert result.model.num_samples == 38
    assert not any("going backwards" in note for note in result.notes)


def test_a_bag_looped_backwards_is_a_clock_reset_in_recorded_order(tmp_path, survey_bag):
    """The same 20 s of stamps twice (a bag played in a loop into a recorder): the second
    lap, 20 s back, beyond the 10 s threshold, is a reset of each topic's clock, said in the
    notes, and both laps are mapped."""
    setup, _ = survey_bag
    with BagWriter(tmp_path / "looped") as writer:
        odom = add(writer, "/odom", "nav_msgs/msg/Odometry")
        ranges = add(writer, "/sonar/range", "sensor_msgs/msg/Range")
        for k in range(80):
            t, sent = 0.5 * (k % 40), k * 5 * 10**8
            writer.write(odom, sent, odometry(t, 20.0 - 0.5 * k, -20.0 + 0.1 * (k // 40),
                                              math.pi))
            writer.write(ranges, sent + 25 * 10**7, sounding(t + 0.25, 1500.0))
    result = remap_bag(tmp_path / "looped", setup,
                       config=RemapConfig(tail="map", truth="none"))
    assert any("odom clock reset" in note for note in result.notes)
    assert not any("going backwards" in note for note in result.notes)
    assert result.model.num_samples >= 76  # each lap's last sounding has no pose after it


def test_a_recorded_fix_resets_the_position_as_live(tmp_path, survey_bag):
    """A NavSatFix 30 m north of the odometry at t = 2 s: the remap feeds it to the ingest
    as the node does, so the soundings after it are placed 30 m north, those before not."""
    from poam_ros.bags.sim_survey import STORE, T, header
    from poam_ros.geo import GeoConfig, GeoReference

    setup, _ = survey_bag
    geo = GeoConfig(anchor="latlon", origin_latitude=59.0, origin_longitude=10.0)
    anchored = copy.deepcopy(setup)
    anchored.geo = geo
    lon, lat = GeoReference.from_config(geo).to_lonlat(20.0 - 2.0, -20.0 + 30.0)
    fix = T["sensor_msgs/msg/NavSatFix"](
        header=header(2.0, "usbl"), status=T["sensor_msgs/msg/NavSatStatus"](status=0, service=1),
        latitude=float(lat), longitude=float(lon), altitude=float("nan"),
        position_covariance=np.zeros(9), position_covariance_type=0)
    with BagWriter(tmp_path / "fixed") as writer:
        odom = add(writer, "/odom", "nav_msgs/msg/Odometry")
        ranges = add(writer, "/sonar/range", "sensor_msgs/msg/Range")
        fixes = add(writer, "/fix", "sensor_msgs/msg/NavSatFix")
        for k in range(41):  # west at 1 m/s from (20, -20), a sounding between poses
            writer.write(odom, k * 10**8, odometry(0.1 * k, 20.0 - 0.1 * k, -20.0, math.pi))
            if k < 40:
                writer.write(ranges, k * 10**8 + 5 * 10**7, sounding(0.1 * k + 0.05, 1500.0))
        writer.write(fixes, 25 * 10**8, STORE.serialize_cdr(fix, "sensor_msgs/msg/NavSatFix")
                     .tobytes())
    result = remap_bag(tmp_path / "fixed", anchored, RemapConfig(tail="map", truth="none"))
    points = np.concatenate([batch.points for batch in result.batches])
    t = 0.1 * np.arange(40) + 0.05
    np.testing.assert_allclose(points[:, 0], 20.0 - t, atol=1e-5)
    np.testing.assert_allclose(points[:, 1], np.where(t >= 2.0, 10.0, -20.0), atol=1e-5)
    assert not result.ingest_drops
