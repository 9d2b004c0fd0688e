"""Position fixes on their own: queued after their checks, applied where the poses reach
their stamps (the change of correction returned), given up after the timeout, and dropped
at an odometry clock reset unless they agree with the new clock."""

from __future__ import annotations

import math

import numpy as np
import pytest

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
    return place is not None and position.queue(t, *place, now, fix.get("horizontal_std"))


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
    assert not add(position, *at(6.0, 0.0, 0.0), now=0.0, horizontal_std=100.0)
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


# ------------------------------------------------------------ the fix's judgement


def judged(config=CONFIG):
    drops = Drops()
    return PositionFixes(config, drops, ANCHOR), drops


@pytest.mark.parametrize("distance", [300e3, -5e6])
def test_a_gross_outlier_fix_is_dropped_and_moves_nothing(distance):
    """A fix hundreds of kilometres from the dead-reckoned position 5 s into the drive
    (bound: 200 m + 1 m/s * 5 s) is refused and counted; the correction stays 0."""
    position, drops = judged()
    assert add(position, *at(5.0, 5.0 + distance, 0.0), now=0.0)
    assert position.resolve(poses(6.0)) == []
    assert drops.counts == {ig.FIX_OUTLIER: 1} and position.applied == 0
    assert position.at(10.0) == (0.0, 0.0)


def test_the_bound_grows_with_the_time_since_the_last_fix_and_the_fixs_std():
    """fix_max_correction 10 m, fix_drift_rate 0.5 m/s: a fix 12 m off at t = 2 s (bound
    11 m) is an outlier, one 12 m off at t = 5 s (12.5 m) corrects, and from then on the
    bound restarts: 13 m off the corrected track at t = 7 s (11 m) is refused unless the fix
    states a std of 1 m (11 + 3 m)."""
    config = CONFIG.replace(fix_max_correction=10.0, fix_drift_rate=0.5)
    position, drops = judged(config)
    history = poses(20.0)
    add(position, *at(2.0, 2.0 + 12.0, 0.0), now=0.0)
    add(position, *at(5.0, 5.0 + 12.0, 0.0), now=0.0)
    add(position, *at(7.0, 7.0 + 12.0 + 13.0, 0.0), now=0.0)
    changes = position.resolve(history)
    assert [t for t, _ in changes] == [5.0] and drops.counts == {ig.FIX_OUTLIER: 2}
    add(position, *at(7.5, 7.5 + 12.0 + 13.0, 0.0), now=0.0, horizontal_std=1.0)
    (t, shift), = position.resolve(history)
    assert t == 7.5 and np.allclose(shift, [13.0, 0.0], atol=1e-6)


def test_a_refused_large_correction_is_taken_once_the_drift_allows_it():
    """A true 400 m offset: refused 10 s after the start (bound 210 m), taken at 250 s
    (450 m): an outlier sets no new reference time, so the bound keeps growing."""
    position, drops = judged()
    history = poses(300.0)
    add(position, *at(10.0, 10.0 + 400.0, 0.0), now=0.0)
    add(position, *at(250.0, 250.0 + 400.0, 0.0), now=0.0)
    (t, shift), = position.resolve(history)
    assert t == 250.0 and np.allclose(shift, [400.0, 0.0], atol=1e-6)
    assert drops.counts == {ig.FIX_OUTLIER: 1}


def test_a_plan_never_reached_and_a_wild_fix_still_get_a_batch_on_time():
    """The plan's waypoint lies 10 km away and a fix 500 km off comes in: the fix is
    dropped, and the soundings go out once the oldest is batch_timeout (30 s) old on the
    odometry's stamps, then, with the odometry stopped, on the wall clock."""
    from poam_ros.ingest import Ingest

    ingest = Ingest(CONFIG.replace(batch_timeout=30.0, max_batch_size=0), georeference=ANCHOR)
    ingest.set_plan([[10e3, 0.0]], 0.0, 0.0)
    for i in range(451):  # 45 s along x at 1 m/s, a sounding between poses
        t = i / 10
        ingest.add_pose(t, t, 0.0, 0.0, 0.0, now=0.0)
        if i == 100:
            ingest.add_fix(*at(5.0, 500e3, 0.0), now=0.0)
        if i < 450:
            ingest.add_range(t + 0.05, 10.0, 1.0, 100.0, now=0.0)
    [batch] = ingest.take_batches()
    # cut at the pose of 30.1 s, the oldest sounding 30.05 s old: those placed up to then
    assert batch.reason == "timeout" and batch.stamp == pytest.approx(30.05)
    assert len(batch) == 301 and ingest.batcher.size == 149
    assert ingest.drops.counts == {ig.FIX_OUTLIER: 1} and ingest.position_fixes.applied == 0
    ingest.poll(now=29.0)   # the rest began at wall time 0: not yet 30 s old
    assert ingest.take_batches() == []
    ingest.poll(now=31.0)
    [rest] = ingest.take_batches()
    assert rest.reason == "timeout" and len(rest) == 149
