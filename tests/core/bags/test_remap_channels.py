"""A two-channel survey bag (depth and the simulator's temperature on /temperature) re-maps
with a multi-channel method, each channel scored against its simulated truth; the channel's
messages reach the ingest as the live node reads them."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from poam_ros.bags import BagError, BagReader
from poam_ros.bags.message_types import MessageTypes
from poam_ros.bags.remap import remap_bag
from poam_ros.bags.sim_survey import write_survey
from poam_ros.params import ConfigError


@pytest.fixture(scope="module")
def two_channel_bag(tmp_path_factory, make_small_setup):
    setup = make_small_setup()
    setup.temperature = setup.temperature.replace(enabled=True)
    setup.ingest = setup.ingest.replace(channels=["temperature"], channel_rates=[0.5])
    setup.mapping = setup.mapping.replace(method="poam-mt")
    return setup, write_survey(tmp_path_factory.mktemp("channels") / "survey", setup,
                               legs=((20.0, -20.0),))


def test_a_two_channel_bag_is_remapped_and_scored_per_channel(two_channel_bag):
    setup, bag = two_channel_bag
    result = remap_bag(bag, setup)
    types = MessageTypes()
    written = [types.deserialize(m.data, m.msgtype).temperature
               for m in BagReader(bag).messages(["/temperature"])]
    mapped = np.concatenate([b.points[:, 3] for b in result.batches])
    mapped = mapped[np.isfinite(mapped)]
    # Every reading inside the workspace, in order (a turn may swing outside it).
    assert 0.9 * len(written) <= len(mapped) <= len(written)
    assert set(mapped) <= set(written)
    assert result.model.buffer.y.shape[1] == 2 and result.truth.shape[1] == 2
    final = result.records[-1]
    for name in ("depth", "temperature"):
        assert np.isfinite(final.extra[f"smse_{name}"]) and np.isfinite(final.extra[f"msll_{name}"])
    assert final.smse == final.extra["smse_depth"]


def test_a_channel_without_a_multi_channel_method_or_of_another_type_is_refused(
        two_channel_bag):
    setup, bag = two_channel_bag
    single = copy.deepcopy(setup)
    single.mapping = single.mapping.replace(method="poam")
    with pytest.raises(ConfigError, match="maps one channel"):
        remap_bag(bag, single)
    pressure = copy.deepcopy(setup)
    pressure.ingest = pressure.ingest.replace(channel_types=["fluid_pressure"])
    with pytest.raises(BagError, match="sensor_msgs/msg/FluidPressure"):
        remap_bag(bag, pressure)


def test_a_recorded_depth_sensor_gives_the_samples_depth_as_live(tmp_path, make_small_setup):
    """depth_from_pressure: the remap feeds /depth to the ingest as the node does, so each
    sounding lies at z = -d - range whatever the odometry's z (0 in this bag)."""
    from poam_ros.attitude import GRAVITY
    from poam_ros.bags import BagWriter
    from poam_ros.bags.remap_config import RemapConfig
    from poam_ros.bags.sim_survey import STORE, T, add, header, odometry, sounding

    setup = make_small_setup()
    setup.ingest = setup.ingest.replace(depth_from_pressure=True)
    config = setup.ingest
    with BagWriter(tmp_path / "depth") as writer:
        odom = add(writer, "/odom", "nav_msgs/msg/Odometry")
        ranges = add(writer, "/sonar/range", "sensor_msgs/msg/Range")
        depth = add(writer, "/depth", "sensor_msgs/msg/FluidPressure")
        for k in range(21):  # west at 1 m/s, diving 1 m/s from 100 m; a sounding between
            t = 0.1 * k
            writer.write(odom, k * 10**8, odometry(t, 20.0 - t, -20.0, math.pi))
            pressure = config.water_density * GRAVITY * (100.0 + t) + config.atmospheric_pressure
            writer.write(depth, k * 10**8 + 1, STORE.serialize_cdr(
                T["sensor_msgs/msg/FluidPressure"](header=header(t, "base_link"),
                                                   fluid_pressure=pressure, variance=0.0),
                "sensor_msgs/msg/FluidPressure").tobytes())
            if k < 20:
                writer.write(ranges, k * 10**8 + 5 * 10**7, sounding(t + 0.05, 1500.0))
    result = remap_bag(tmp_path / "depth", setup, RemapConfig(tail="map", truth="none"))
    points = np.concatenate([batch.points for batch in result.batches])
    t = 0.1 * np.arange(20) + 0.05
    np.testing.assert_allclose(points[:, 2], -(100.0 + t) - 1500.0, atol=1e-6)
    assert not result.ingest_drops


def test_the_remap_command_prints_each_channel(two_channel_bag, tmp_path, capsys):
    from poam_ros.cli.bags import remap

    setup, bag = two_channel_bag
    params = setup.to_file(tmp_path / "params.yaml")
    assert remap([str(bag), "--params", str(params), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    depth = next(line for line in lines if line.startswith("final:"))
    temperature = next(line for line in lines if line.startswith("final temperature:"))
    assert depth.endswith("(depth)") and "SMSE" in temperature and "RMSE" in temperature
