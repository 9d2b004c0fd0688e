"""The most novel soundings go first: farther from everything sent, the oldest of equals."""

import numpy as np

from poam_ros.fleet.encoding import Quantised
from poam_ros.fleet.selection import NoveltyPool, SentPositions


def quantised(xy, stamps=None):
    xy = np.asarray(xy, dtype=np.int16)
    stamps = np.arange(len(xy), dtype=float) if stamps is None else np.asarray(stamps)
    return Quantised(xy, xy[:, :1].copy(), stamps)


def test_a_packet_is_a_farthest_point_traversal():
    pool = NoveltyPool(capacity=100, xy_resolution=1.0)
    # a cluster of four near the origin and one sounding far away, added last
    pool.add(quantised([[0, 0], [1, 0], [0, 1], [1, 1], [100, 0]]))
    first = pool.take(3)
    # the oldest of equals first (nothing sent), then the far one, then the cluster's
    # corner farthest from both
    assert first.xy.tolist() == [[0, 0], [100, 0], [1, 1]]
    assert pool.take(5).xy.tolist() == [[1, 0], [0, 1]]
    assert pool.take(1) is None


def test_soundings_beside_those_sent_wait_behind_new_ground():
    pool = NoveltyPool(capacity=100, xy_resolution=1.0)
    pool.add(quantised([[0, 0]]))
    pool.take(1)
    pool.add(quantised([[2, 0], [50, 50], [0, 3], [-30, 0]]))
    assert pool.take(4).xy.tolist() == [[50, 50], [-30, 0], [0, 3], [2, 0]]


def test_over_capacity_the_least_novel_are_dropped_and_counted():
    pool = NoveltyPool(capacity=3, xy_resolution=1.0)
    pool.add(quantised([[0, 0]]))
    pool.take(1)
    pool.add(quantised([[1, 0], [40, 0], [0, 2], [0, 30], [-20, 0]]))
    assert pool.dropped == 2 and len(pool) == 3
    assert sorted(pool.take(3).xy.tolist()) == [[-20, 0], [0, 30], [40, 0]]


def test_sent_positions_answer_the_nearest_distance_beyond_the_index():
    rng = np.random.default_rng(0)
    sent = SentPositions()
    points = rng.uniform(-100, 100, (3000, 2))
    for block in np.array_split(points, 37):
        sent.add(block)
    queries = rng.uniform(-120, 120, (200, 2))
    brute = np.linalg.norm(queries[:, None] - points[None], axis=2).min(axis=1)
    assert len(sent) == 3000
    assert np.allclose(sent.distance(queries), brute)
    assert np.isinf(SentPositions().distance(queries)).all()
