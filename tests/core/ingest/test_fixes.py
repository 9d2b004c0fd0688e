"""Position fixes on their own: queued after their checks, applied where the poses reach
their stamps (the change of correction returned), given up after the timeout, and dropped
at an odometry clock reset unless they agree with the new clock."""

from __future__ import annotations

import math

import numpy as np

from poam_ros.geo.georeference import GeoReference
from poam_ros.ingest import IngestConfig
from poam_ros.ingest import reasons as ig
from poam_ros.ingest.fixes import PositionFixes
from poam_ros.ingest.pose_history import PoseHistory
from poam_ros.ingest.reasons import Drops

ANCHOR = GeoReference.local(59.0, 10.0)
CONFIG = IngestConfig(pending_timeout=2.0, fix_max_std=10.0)


def fixes(georeference=ANCHOR):
    drops = Drops()
    return PositionFixes(CONFIG, drops, georeference), drops


def add(position, t, latitude, longitude, now, **fix):
    """A fix checked, then queued (its stamp's clock and order are the Streams')."""
    place = position.check(t, latitude, longitude, **fix)
    return place is not None and position.queue(t, *place, now)


def at(t, x, y):
    """(t, latitude, longitude) of map position (x, y)."""
    lon, lat = ANCHOR.to_lonlat(x, y)
    return t, float(lat), float(lon)


def poses(stop):
    """Odometry at x = t, y = 0, every 0.1 s up to ``stop`` s."""
    history = PoseHistory(CONFIG.pose_history, CONFIG.max_pose_gap)
    for i in range(round(stop * 10) + 1):
        history.append(i / 10, i / 10, 0.0, 0.0, 0.0)
    return history


def test_a_fix_waits_for_the_poses_then_sets_the_correction_from_its_stamp_on():
    position, _ = fixes()
    assert add(position, *at(5.0, 105.0, 10.0), now=0.0)
    assert position.resolve(poses(4.0)) == [] and position.applied == 0
    (t, shift), = position.resolve(poses(6.0))
    assert t == 5.0 and np.allclose(shift, [100.0, 10.0], atol=1e-6)
    assert position.at(4.9) == (0.0, 0.0) and np.allclose(position.at(5.0), [100.0, 10.0])
    assert position.applied == 1 and math.isclose(position.last_correction, math.hypot(100, 10),
                                                   rel_tol=1e-9)
    position.forget_before(6.0)
    assert np.allclose(position.at(0.0), [100.0, 10.0])  # the one in force at 6 s holds


def test_bad_fixes_are_dropped_before_they_wait():
    position, drops = fixes()
    assert add(position, *at(5.0, 0.0, 0.0), now=0.0)
    assert not add(position, 6.0, math.nan, 10.0, now=0.0)
    assert not add(position, 6.0, 95.0, 10.0, now=0.0)
    assert not add(position, *at(6.0, 0.0, 0.0), now=0.0, status=-1)
    assert not add(position, *at(6.0, 0.0, 0.0), now=0.0, horizontal_std=1e6)
    assert not add(fixes(None)[0], *at(6.0, 0.0, 0.0), now=0.0)
    assert drops.counts == {ig.FIX_NONFINITE: 1, ig.FIX_OUT_OF_RANGE: 1,
                            ig.FIX_NO_FIX: 1, ig.FIX_IMPRECISE: 1}


def test_a_waiting_fix_is_given_up_only_once_poses_stop():
    position, drops = fixes()
    add(position, *at(50.0, 0.0, 0.0), now=0.0)
    position.expire(now=5.0, last_pose_wall=4.0)  # poses still coming
    assert not drops.counts
    position.expire(now=6.5, last_pose_wall=4.0)
    assert drops.counts == {ig.FIX_NO_POSE: 1} and position.resolve(poses(60.0)) == []


def test_a_clock_reset_keeps_the_correction_and_the_fixes_of_the_new_clock():
    position, drops = fixes()
    add(position, *at(5.0, 15.0, 0.0), now=0.0)
    position.resolve(poses(6.0))
    add(position, *at(500.0, 0.0, 0.0), now=0.0)
    add(position, *at(1000.0, 0.0, 0.0), now=0.0)
    position.restart(low=990.0, high=1010.0)
    assert drops.counts == {ig.FIX_NO_POSE: 1}
    assert np.allclose(position.at(-1e9), [10.0, 0.0])  # in force from -inf now
