"""FleetSim: vehicles on one clock, lockstep holding for any vehicle without a plan, each
vehicle its own noise and start; a lone vehicle of the fleet flies as SimulatedAuv alone."""

import numpy as np
import pytest
from sim_data import PAPER_EXTENT, TASK_EXTENT

from poam_ros.params import ConfigError
from poam_ros.sim.default_terrain import default_terrain
from poam_ros.sim.fleet import (
    FleetConfig,
    FleetSim,
    build_auv,
    fleet_start_poses,
    vehicle_seeds,
)
from poam_ros.sim.multibeam import MultibeamStreamConfig
from poam_ros.sim.simulated_auv import Odom, SimulatedAuv, Sounding
from poam_ros.sim.simulator import SimulationError, SurveySimulator
from poam_ros.sim.sonar import SonarConfig
from poam_ros.sim.vehicle import VehicleConfig
from poam_ros.sim.water_temperature import WaterTemperatureConfig

TERRAIN = default_terrain(PAPER_EXTENT)


def fleet(count=2, seed=5, mode="lockstep"):
    poses = fleet_start_poses(TASK_EXTENT, count, seed, TERRAIN.contains)
    return FleetSim([build_auv(TERRAIN, VehicleConfig(), SonarConfig(),
                               MultibeamStreamConfig(), WaterTemperatureConfig(), s, pose, mode)
                     for s, pose in zip(vehicle_seeds(seed, count), poses)], mode)


def test_start_poses_are_spread_inside_and_follow_the_seed():
    poses = fleet_start_poses(TASK_EXTENT, 4, 7, TERRAIN.contains)
    assert poses == fleet_start_poses(TASK_EXTENT, 4, 7, TERRAIN.contains)
    assert poses != fleet_start_poses(TASK_EXTENT, 4, 8, TERRAIN.contains)
    xs = [x for x, _, _ in poses]
    assert xs == sorted(xs)  # one strip each, across x
    xmin, xmax, ymin, ymax = TASK_EXTENT
    assert all(xmin < x < xmax and ymin < y < ymax for x, y, _ in poses)
    assert min(np.diff(xs)) > 0.0
    with pytest.raises(ConfigError, match="vehicle 0"):
        fleet_start_poses(TASK_EXTENT, 2, 7, lambda xy: np.zeros(len(xy), bool))


def test_seeds_are_distinct_and_do_not_depend_on_the_fleet_size():
    seeds = vehicle_seeds(3, 4)
    assert len(set(seeds)) == 4 and vehicle_seeds(3, 2) == seeds[:2]


def test_the_config_checks_poses_and_names_the_namespaces():
    assert FleetConfig(vehicles=3).namespaces() == ["/auv0", "/auv1", "/auv2"]
    assert FleetConfig(vehicles=1, start_poses=[1, 2, 3]).poses() == [(1.0, 2.0, 3.0)]
    with pytest.raises(ConfigError, match="start_poses"):
        FleetConfig(vehicles=2, start_poses=[1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match="namespace_prefix"):
        FleetConfig(namespace_prefix="auv/")


def test_lockstep_holds_until_every_vehicle_has_a_plan_and_stops_when_one_finishes():
    sim = fleet()
    assert sim.advance(100.0) == [[], []] and sim.time == 0.0
    x, y, _ = sim.auvs[0].pose
    sim.auvs[0].set_plan([[x + 5.0, y]])  # a short leg: done long before the other
    started, others = sim.advance(100.0)  # it starts: its pose and sounding at 0, no step
    assert sim.holding and others == [] and {event.t for event in started} == {0.0}
    assert {type(event) for event in started} == {Odom, Sounding}
    x, y, _ = sim.auvs[1].pose
    sim.auvs[1].set_plan([[x, y + 30.0]])
    events = sim.advance(1000.0)
    assert sim.waiting() == [0] and sim.holding and 0 < sim.time < 30.0
    for vehicle in events:  # both vehicles' events on the one clock, up to its time
        times = [event.t for event in vehicle]
        assert times == sorted(times) and times[-1] == pytest.approx(sim.time)
        assert any(isinstance(event, Sounding) for event in vehicle)
    assert sim.auvs[0].time == sim.auvs[1].time == sim.time
    stopped = sim.time
    sim.done[0] = True  # its mission ended: the clock runs for the other
    sim.advance(stopped + 2.0)
    assert sim.time == pytest.approx(stopped + 2.0) and sim.auvs[0].time == stopped
    with pytest.raises(SimulationError, match="vehicle 0 stopped"):  # its clock stands
        sim.set_plan(0, [[x, y]])
    sim.set_plan(0, [])  # holding it is fine
    sim.set_plan(1, [[x, y + 35.0]])


def test_realtime_runs_the_clock_without_plans():
    sim = fleet(mode="realtime")
    events = sim.advance(3.0)
    assert sim.time == pytest.approx(3.0)
    assert all(isinstance(vehicle[0], Odom) and vehicle[-1].t == pytest.approx(3.0)
               for vehicle in events)


def test_a_fleet_of_one_flies_as_the_vehicle_alone():
    pose = fleet_start_poses(TASK_EXTENT, 1, 2, TERRAIN.contains)[0]
    alone = SimulatedAuv(SurveySimulator(TERRAIN, VehicleConfig(), SonarConfig(), seed=9,
                                         start_pose=pose))
    sim = FleetSim([build_auv(TERRAIN, VehicleConfig(), SonarConfig(), MultibeamStreamConfig(),
                              WaterTemperatureConfig(), 9, pose, "lockstep")])
    plan = [[0.0, 0.0], [-10.0, 5.0]]
    alone.set_plan(plan)
    sim.auvs[0].set_plan(plan)
    expected = []
    while not alone.holding:
        expected += alone.advance(alone.time + 7.0)
    flown = []
    while not sim.holding:
        flown += sim.advance(sim.time + 7.0)[0]
    assert flown == expected and len(flown) > 10


def test_a_vehicle_that_left_holds_position_on_the_clock_and_flies_when_back():
    sim = fleet()
    (x0, y0, _), (x1, y1, _) = sim.auvs[0].pose, sim.auvs[1].pose
    sim.set_plan(0, [[-x0, -y0]])  # across the terrain, through its middle
    sim.set_plan(1, [[-x1, -y1]])
    sim.advance(5.0)
    assert sim.time == pytest.approx(5.0) and not sim.holding
    sim.set_left(1, True)  # its stack is gone mid-leg: it drops its plan
    assert sim.auvs[1].holding and not sim.holding and sim.waiting() == []
    held = sim.auvs[1].pose
    events = sim.advance(10.0)
    # the other flies on; the one that left keeps the clock, in place, still sounding
    assert sim.time == pytest.approx(10.0) and sim.auvs[1].time == pytest.approx(10.0)
    assert sim.auvs[1].pose[:2] == pytest.approx(held[:2], abs=0.5)
    assert events[1][-1].t == pytest.approx(10.0)
    assert any(isinstance(event, Sounding) for event in events[1])
    assert np.hypot(sim.auvs[0].pose[0] - x0, sim.auvs[0].pose[1] - y0) > 5.0
    sim.set_left(1, False)  # back, without a plan yet: lockstep holds the clock for it
    assert sim.waiting() == [1] and sim.advance(20.0) == [[], []]
    sim.set_plan(1, [[-x1, -y1]])  # at the fleet's time: it flies again
    sim.advance(12.0)
    assert sim.time == sim.auvs[1].time == pytest.approx(12.0)
    assert np.hypot(sim.auvs[1].pose[0] - held[0], sim.auvs[1].pose[1] - held[1]) > 1.0


def test_a_done_vehicle_that_leaves_stays_stopped():
    sim = fleet()
    sim.done[0] = True
    sim.set_left(0, True)
    x, y, _ = sim.auvs[1].pose
    sim.set_plan(1, [[-x, -y]])
    sim.advance(3.0)
    assert sim.time == pytest.approx(3.0) and sim.auvs[0].time == 0.0


def test_a_plan_reached_where_it_is_given_holds_the_clock_with_the_vehicle_on_it():
    """A plan whose waypoint is within the goal radius of the vehicle when it comes is done
    at once: the vehicle waits and the fleet's clock stands with it, not one step ahead (a
    step ahead, the vehicle's next plan would be refused as if its mission had ended)."""
    sim = fleet()
    for auv in sim.auvs:
        x, y, _ = auv.pose
        auv.set_plan([[x + 5.0, y]])
    sim.advance(1000.0)
    assert sim.waiting() and sim.auvs[0].time == sim.auvs[1].time == sim.time
    x, y, _ = sim.auvs[0].pose
    sim.auvs[0].set_plan([[x, y]])  # already there
    x, y, _ = sim.auvs[1].pose
    sim.auvs[1].set_plan([[x, y + 30.0]])
    sim.advance(sim.time + 100.0)
    assert sim.waiting() == [0] and sim.auvs[0].time == sim.auvs[1].time == sim.time
    x, y, _ = sim.auvs[0].pose
    sim.auvs[0].set_plan([[x, y + 10.0]])  # its next plan is taken
    sim.advance(sim.time + 100.0)
    assert sim.auvs[0].time == sim.auvs[1].time == sim.time
