"""Placement on its own: readings placed at the odometry's pose (plus the fixes' correction)
or waiting for it, given up, overflowing or abandoned."""

from __future__ import annotations

import numpy as np
import pytest

from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.attitude_depth import AttitudeDepth
from poam_ros.ingest.batcher import Batcher
from poam_ros.ingest.channels import CHANNEL
from poam_ros.ingest.fixes import PositionFixes
from poam_ros.ingest.placement import Placement
from poam_ros.ingest.poses import Odometry, Pose
from poam_ros.ingest.reasons import Drops
from poam_ros.ingest.streams import RANGE, Streams

CONFIG = IngestConfig(max_pending=3, pending_timeout=2.0, channels=["temperature"])


def placement(config=CONFIG):
    drops = Drops()
    streams = Streams(config, drops, lambda *_: pytest.fail("no clock reset expected"))
    batcher = Batcher(config, streams, drops)
    odometry = Odometry(config, drops)
    place = Placement(config, drops, odometry, AttitudeDepth(config, drops),
                      PositionFixes(config, drops), batcher)
    return place, odometry, batcher, drops


def pose(x: float) -> Pose:
    return Pose(x, 0.0, -5.0, 0.0, 0.0, 0.0)


def test_readings_are_placed_at_the_pose_or_wait_for_it():
    place, odometry, batcher, _ = placement()
    odometry.add(0.0, pose(0.0), now=0.0)
    assert place.place(0.5, RANGE, 10.0, now=0.0)  # ahead of the poses
    assert place.place(0.5, CHANNEL + "temperature", 7.5, now=0.0)
    assert place.pending == 2 and place.waiting(RANGE) == 1 and batcher.size == 0
    odometry.add(1.0, pose(1.0), now=0.0)
    place.resolve_pending()
    assert place.pending == 0 and place.channel_placed == {"temperature": 1}
    (_, _, sounding), (_, _, reading) = batcher.chunks
    np.testing.assert_allclose(sounding, [[0.5, 0.0, -15.0]])
    np.testing.assert_allclose(reading, [[0.5, 0.0, np.nan, 7.5]])
    assert not place.place(-5.0, RANGE, 10.0, now=0.0)  # older than the history


def test_waiting_readings_overflow_expire_and_are_abandoned():
    place, _, _, drops = placement()
    for t in range(5):
        place.place(float(t), RANGE, 10.0, now=0.0)
    assert place.pending == 3 and drops.counts == {ig.QUEUE_OVERFLOW: 2}
    assert place.abandon(lambda t, kind: t >= 3.0) == 1 and place.pending == 2
    place.expire(now=1.0)
    assert place.pending == 2
    place.expire(now=2.5)
    assert place.pending == 0 and drops.counts[ig.NO_POSE] == 2
