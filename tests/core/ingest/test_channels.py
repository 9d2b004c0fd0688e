"""Scalar channels in the ingest: a reading is a sample at the vehicle's position at its stamp,
its value in its channel's column, NaN in the others; without channels nothing changes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from poam_ros.ingest import Ingest, IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.params import ConfigError
from poam_ros.workspace import Workspace, WorkspaceConfig

LIMITS = (1.0, 2000.0)
CHANNELS = IngestConfig(channels=["temperature", "pressure"], channel_rates=[0.5, 0.0])


def survey(ingest, readings=()):
    """Poses along x at 1 m/s, z = 10 m, from t = 0 to 4 s; a range of 3 m at t = 1.5 s; the
    ``readings`` (t, channel, value); the plan ends at (4, 2)."""
    ingest.set_plan([[4.0, 2.0]], 0.0, 0.0)
    for t in range(5):
        ingest.add_pose(float(t), float(t), 2.0, 10.0, 0.0, 0.0)
        if t == 1:
            ingest.add_range(1.5, 3.0, *LIMITS, 0.0)
            for reading in readings:
                ingest.add_reading(*reading, 0.0)
    ingest.poll(math.inf)
    return ingest.take_batches()


def test_a_reading_is_placed_at_the_pose_of_its_stamp():
    # One reading waits for its pose (stamped after the newest), one is placed at once.
    [batch] = survey(Ingest(CHANNELS), [(0.25, "pressure", 101.5), (2.75, "temperature", 7.5)])
    nan = math.nan
    np.testing.assert_array_equal(batch.points, [[1.5, 2.0, 7.0, nan, nan],
                                                 [0.25, 2.0, nan, nan, 101.5],
                                                 [2.75, 2.0, nan, 7.5, nan]])
    np.testing.assert_array_equal(batch.targets, batch.points[:, 2:])
    assert batch.stamp == 4.0 and batch.reason == "arrival"


def test_without_channels_the_samples_are_x_y_z_as_before():
    [plain] = survey(Ingest(IngestConfig()))
    [with_channels] = survey(Ingest(CHANNELS))
    assert plain.points.shape == (1, 3)
    np.testing.assert_array_equal(plain.targets, plain.points[:, 2])
    np.testing.assert_array_equal(with_channels.points[:, :3], plain.points)
    assert np.isnan(with_channels.points[:, 3:]).all()


def test_bad_readings_are_dropped_under_their_reasons():
    ingest = Ingest(CHANNELS)
    [batch] = survey(ingest, [(1.2, "salinity", 35.0), (1.3, "temperature", math.nan),
                              (1.4, "temperature", 8.0), (1.4, "temperature", 8.1),
                              (1.35, "temperature", 8.2)])
    assert ingest.drops.counts == {ig.WRONG_FRAME: 1, ig.NONFINITE_POINT: 1, ig.DUPLICATE: 1,
                              ig.OUT_OF_ORDER: 1}
    assert len(batch) == 2 and batch.points[1, 3] == 8.0


def test_a_reading_outside_the_workspace_is_dropped_with_the_soundings():
    workspace = Workspace.from_config(WorkspaceConfig(
        vertices=[-1.0, 0.0, 2.0, 0.0, 2.0, 4.0, -1.0, 4.0]))
    ingest = Ingest(CHANNELS, workspace)
    [batch] = survey(ingest, [(0.5, "temperature", 7.0), (3.0, "temperature", 7.2)])
    np.testing.assert_array_equal(batch.points[:, 0], [1.5, 0.5])
    assert batch.dropped == {ig.OUTSIDE_WORKSPACE: 1}


@pytest.mark.parametrize("channels, rates", [
    (["temperature", "temperature"], []), (["z"], []), (["two words"], []),
    (["temperature"], [1.0, 2.0]), (["temperature"], [-1.0]),
])
def test_bad_channel_settings_are_refused(channels, rates):
    with pytest.raises(ConfigError, match="channel"):
        IngestConfig(channels=channels, channel_rates=rates)


def test_the_channels_cannot_change_under_a_running_ingest():
    ingest = Ingest(CHANNELS)
    ingest.configure(CHANNELS.replace(channel_rates=[1.0, 1.0]))
    with pytest.raises(ValueError, match="cannot change"):
        ingest.configure(IngestConfig())
