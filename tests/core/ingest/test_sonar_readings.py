"""The sonar's checks on their own: a range's return and limits, a swath's points."""

from __future__ import annotations

import math

import numpy as np

from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.reasons import Drops
from poam_ros.ingest.sonar import Sonar


def test_a_range_must_be_a_return_within_the_message_limits():
    drops = Drops()
    sonar = Sonar(IngestConfig(), drops)
    assert sonar.range_ok(0.0, 10.0, 0.5, 100.0)
    for distance in (math.inf, math.nan, -1.0, 200.0):
        assert not sonar.range_ok(0.0, distance, 0.5, 100.0)
    assert drops.counts == {ig.NO_RETURN: 1, ig.NONFINITE_RANGE: 1, ig.NEGATIVE_RANGE: 1,
                            ig.RANGE_OUT_OF_LIMITS: 1}


def test_a_swath_keeps_its_finite_points_within_the_limits():
    drops = Drops()
    sonar = Sonar(IngestConfig(swath_min_range=1.0, swath_max_range=50.0), drops)
    points = np.array([[0.0, 0.0, -10.0], [np.nan, 0.0, -10.0], [0.0, 0.0, -0.5],
                       [0.0, 0.0, -80.0], [3.0, 4.0, 0.0]])
    np.testing.assert_array_equal(sonar.swath_points(0.0, points), points[[0, 4]])
    assert drops.counts == {ig.NONFINITE_POINT: 1, ig.RANGE_OUT_OF_LIMITS: 2}
