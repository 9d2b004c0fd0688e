"""SimulatedAuv: lockstep reproduces follow(), realtime runs the clock and preempts plans."""

import math

import numpy as np
import pytest
from sim_data import PAPER_EXTENT, TASK_EXTENT

from poam_ros.params import ConfigError
from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.multibeam import MultibeamConfig, MultibeamSonar, MultibeamStreamConfig
from poam_ros.sim.simulated_auv import Odom, Ping, SimulatedAuv, SimulatedAuvConfig, Sounding
from poam_ros.sim.simulator import SurveySimulator, lower_right_start
from poam_ros.sim.terrain import TerrainError
from poam_ros.sim.vehicle import VehicleConfig

TERRAIN = default_terrain(PAPER_EXTENT)
START = lower_right_start(TASK_EXTENT)
# The third plan is where the vehicle already is: no step, no sounding.
PLANS = [np.array([[-20.0, -25.0], [0.0, 10.0], [10.0, -5.0]]), np.array([[5.0, 5.0]]),
         np.array([[5.0, 5.0]]), np.array([[-10.0, 20.0], [-12.0, 18.0]])]


def simulator(seed=3, **vehicle):
    return SurveySimulator(TERRAIN, VehicleConfig(**vehicle), seed=seed, start_pose=START)


def run_plan(auv, plan, chunk=7.3):
    auv.set_plan(plan)
    events = []
    while not auv.holding:
        events += auv.advance(auv.time + chunk)
    return events


def split(events):
    return ([e for e in events if isinstance(e, Odom)],
            [e for e in events if isinstance(e, Sounding)],
            [e for e in events if isinstance(e, Ping)])


def test_lockstep_events_are_follow_exactly():
    reference = simulator()
    auv = SimulatedAuv(simulator())
    for number, plan in enumerate(PLANS):
        log = reference.follow(plan)
        odoms, soundings, _ = split(run_plan(auv, plan))
        # follow() repeats the start pose in every log; the AUV sends it once, first.
        poses = log.poses if number == 0 else log.poses[1:]
        times = log.pose_times if number == 0 else log.pose_times[1:]
        sent = np.reshape([[o.x, o.y, o.yaw] for o in odoms], (-1, 3))
        np.testing.assert_array_equal(sent, poses)
        np.testing.assert_array_equal([o.t for o in odoms], times)
        np.testing.assert_array_equal([s.t for s in soundings], log.times)
        np.testing.assert_array_equal([s.range for s in soundings], log.ranges)
        assert auv.time == reference.time and auv.pose == reference.pose


def test_events_come_in_time_order_pose_first():
    events = run_plan(SimulatedAuv(simulator()), PLANS[0], chunk=50.0)
    keys = [(e.t, 0 if isinstance(e, Odom) else 1) for e in events]
    assert keys == sorted(keys)
    assert isinstance(events[0], Odom) and events[0].t == 0.0 and events[1].t == 0.0


def test_odometry_carries_speed_and_yaw_rate_within_limits():
    odoms, _, _ = split(run_plan(SimulatedAuv(simulator()), PLANS[0]))
    speeds = np.array([o.speed for o in odoms[1:]])
    assert 0.9 < speeds.max() <= 1.0 + 1e-9
    assert max(abs(o.yaw_rate) for o in odoms) <= 1.0 + 1e-9
    step = math.hypot(odoms[5].x - odoms[4].x, odoms[5].y - odoms[4].y)
    assert math.isclose(odoms[5].speed, step / 0.1)


def test_lockstep_holds_the_clock_without_a_plan():
    auv = SimulatedAuv(simulator())
    assert auv.advance(100.0) == [] and auv.time == 0.0 and auv.holding
    run_plan(auv, PLANS[1])
    held = auv.time
    assert auv.advance(held + 100.0) == [] and auv.time == held


def test_realtime_runs_the_clock_and_holds_position_without_a_plan():
    auv = SimulatedAuv(simulator(), mode="realtime")
    odoms, soundings, _ = split(auv.advance(2.0))
    assert math.isclose(auv.time, 2.0) and len(odoms) == 21 and len(soundings) == 7
    assert {(o.x, o.y, o.yaw) for o in odoms} == {START}


def test_realtime_a_new_plan_preempts_the_current_one():
    auv = SimulatedAuv(simulator(), mode="realtime")
    auv.set_plan([[-25.0, -29.0]])  # due west
    auv.advance(5.0)
    assert not auv.holding
    auv.set_plan([[25.0, 0.0]])  # north: the vehicle turns at once
    odoms, _, _ = split(auv.advance(80.0))
    assert auv.holding and math.dist(auv.pose[:2], (25.0, 0.0)) <= 0.1
    assert min(o.x for o in odoms) > 15.0  # it never went on towards the old goal
    assert math.isclose(auv.time, 80.0)  # and the clock ran on after arriving


def test_realtime_stepping_without_preemption_matches_follow():
    reference = simulator()
    log = reference.follow(PLANS[0])
    auv = SimulatedAuv(simulator(), mode="realtime")
    auv.set_plan(PLANS[0])
    _, soundings, _ = split(auv.advance(log.pose_times[-1]))
    np.testing.assert_array_equal([s.range for s in soundings], log.ranges)


def test_a_plan_off_the_terrain_is_refused_and_the_current_one_kept():
    auv = SimulatedAuv(simulator())
    auv.set_plan(PLANS[0])
    with pytest.raises(TerrainError, match="outside"):
        auv.set_plan([[0.0, 0.0], [40.0, 0.0]])
    assert auv.progress == (0, 3)


def test_an_empty_plan_cancels():
    auv = SimulatedAuv(simulator(), mode="realtime")
    auv.set_plan(PLANS[0])
    auv.advance(3.0)
    auv.set_plan(np.empty((0, 2)))
    assert auv.holding and auv.progress == (0, 0)


def test_an_unreachable_waypoint_abandons_the_plan_and_holds():
    auv = SimulatedAuv(simulator(speed_gain=0.001))  # crawls
    auv.set_plan(PLANS[0])
    for _ in range(100):
        auv.advance(auv.time + 50.0)
        if auv.holding:
            break
    assert auv.holding and "not reached within" in auv.last_failure
    held = auv.time
    assert auv.advance(held + 10.0) == [] and auv.time == held


def test_multibeam_pings_at_its_rate_without_touching_the_echo_sounder():
    sonar = MultibeamSonar(TERRAIN, MultibeamConfig(num_beams=9, swath_angle=0.02),
                           300.0, np.random.default_rng(1))
    auv = SimulatedAuv(simulator(), multibeam=sonar, ping_rate=2.0)
    odoms, soundings, pings = split(run_plan(auv, PLANS[1]))
    plain_soundings = split(run_plan(SimulatedAuv(simulator()), PLANS[1]))[1]
    assert soundings == plain_soundings
    np.testing.assert_allclose([p.t for p in pings], np.arange(len(pings)) / 2.0)
    assert pings[-1].t <= auv.time < pings[-1].t + 0.5
    assert all(p.swath.valid.any() for p in pings)


def test_config_checks_the_start_pose():
    assert SimulatedAuvConfig(start_pose=[1, 2, 0]).start_pose == [1.0, 2.0, 0.0]
    with pytest.raises(ConfigError, match="start_pose"):
        SimulatedAuvConfig(start_pose=[1.0, 2.0])
    with pytest.raises(ConfigError, match="mode"):
        SimulatedAuvConfig(mode="fast")


def test_multibeam_stream_config_splits_off_the_fan():
    config = MultibeamStreamConfig(num_beams=5, enabled=True, rate=4.0)
    assert config.sonar_config() == MultibeamConfig(num_beams=5)
