"""The simulated AUV flown through the simulated autopilot and the bridge, in lockstep: the
clock holds without a target, the flight is the direct simulation's of the targets as the
autopilot received them (real pymavlink over loopback UDP, explicit time)."""

import math

import numpy as np
import pytest
from conftest import ANCHOR, DEPTH, WORKSPACE, free_udp_port

from poam_ros.sim import SimulatedAuv, SurveySimulator, VehicleConfig, default_terrain
from poam_ros.sim.mavlink_vehicle import ARRIVAL_MARGIN, MavlinkVehicle
from poam_ros.sim.simulated_auv import Odom, Sounding
from poam_ros.vehicle import SimulatedAutopilot, VehicleBridge, VehicleBridgeConfig

PLAN = np.array([[5.0, -18.0], [0.0, 0.0], [-12.0, 9.0]])
WALL_STEP = 0.02  # s of the fake wall clock per loop turn
SIM_STEP = 0.4  # s of simulated time the clock may advance per loop turn (time_scale 20)


def _simulator():
    return SurveySimulator(default_terrain((-31.0, 31.0, -31.0, 31.0)),
                           VehicleConfig(vertical_mode="depth", depth=DEPTH), seed=3,
                           start_pose=(20.0, -20.0, np.pi))


class Loop:
    """The node's tick (advance towards a target time, hold it in lockstep) and the bridge's
    tick on the clock the node publishes, on a fake wall clock."""

    def __init__(self, port: int, start_armed_guided: bool = True):
        self.wall = 0.0
        simulator = _simulator()
        self.auv = SimulatedAuv(simulator, "lockstep")
        autopilot = SimulatedAutopilot(simulator, ANCHOR, f"udpout:127.0.0.1:{port}")
        if start_armed_guided:
            autopilot.operator_mode("GUIDED")
            autopilot.operator_arm()
        self.vehicle = MavlinkVehicle(self.auv, autopilot, settle_time=0.1,
                                      send_delay=0.0, wall=lambda: self.wall)
        radius = simulator.vehicle.config.goal_radius + ARRIVAL_MARGIN
        self.bridge = VehicleBridge(VehicleBridgeConfig(
            connection=f"udpin:127.0.0.1:{port}", goal_radius=radius, max_depth=100.0),
            ANCHOR, WORKSPACE)
        self.events, self.records, self.target = [], [], 0.0

    def run(self, turns: int, until=None) -> bool:
        for _ in range(turns):
            self.target += SIM_STEP
            self.events += self.vehicle.advance(self.target)
            if self.vehicle.holding:
                self.target = self.auv.time
            self.records += self.bridge.tick(self.auv.time)  # the /clock it hears
            self.wall += WALL_STEP
            if until is not None and until():
                return True
        return until is None

    def close(self):
        self.bridge.close()
        self.vehicle.autopilot.link.close()


@pytest.fixture
def loop():
    loops = []

    def make(**options) -> Loop:
        loops.append(Loop(free_udp_port(), **options))
        return loops[-1]

    yield make
    for each in loops:
        each.close()


def test_the_clock_holds_until_a_target_and_the_flight_is_the_direct_one(loop):
    run = loop()
    assert run.run(200, lambda: run.bridge.origin is not None and run.bridge.odometry)
    run.run(100)  # heartbeats on the wall clock; no target: the clock stands
    assert run.auv.time == 0.0 and run.bridge.link_up(run.auv.time)
    assert run.bridge.start(run.auv.time) is None
    assert run.bridge.set_plan(np.column_stack((PLAN, np.full(3, -DEPTH))), 0.0,
                               run.auv.time) is None
    assert run.run(3000, lambda: run.bridge.events["plans_done"] == 1 and run.auv.holding)
    held = run.auv.time
    run.run(50)
    assert run.auv.time == held  # reached, nothing newer: the clock stands

    # the plan as the autopilot got it: positions rounded to 1e-7° (millimetres off)
    received = list(dict.fromkeys((x, y) for _, x, y, _ in run.vehicle.autopilot.targets))
    assert np.abs(np.array(received) - PLAN).max() < 0.006
    switch = next(t for t, x, y, _ in run.vehicle.autopilot.targets if (x, y) != received[0])
    direct = SimulatedAuv(_simulator(), "lockstep")
    direct.set_plan(received[:1])
    expected = direct.advance(switch)  # the first leg: the same steps, the same soundings
    soundings = [e for e in run.events if isinstance(e, Sounding) and e.t <= switch]
    assert soundings == [e for e in expected if isinstance(e, Sounding)]
    assert not any(isinstance(e, Odom) for e in run.events)  # the bridge's, from telemetry
    track = [(e.t, e.x, e.y) for e in expected if isinstance(e, Odom)]
    odometry = [(r.t, r.x, r.y) for r in run.records
                if type(r).__name__ == "Odometry" and r.t <= switch + 1e-9]
    assert [t for t, _, _ in odometry] == pytest.approx([t for t, _, _ in track])
    error = max(math.hypot(a[1] - b[1], a[2] - b[2]) for a, b in zip(odometry, track))
    assert error < 0.008  # the same track, reported in 1e-7°
    radius = run.bridge.config.goal_radius
    for x, y in received:  # each target reached (a step within the bridge's radius)
        assert min(math.hypot(x - r[1], y - r[2]) for r in run.records
                   if type(r).__name__ == "Odometry") <= radius


def test_without_the_operator_nothing_moves(loop):
    run = loop(start_armed_guided=False)
    assert run.run(200, lambda: run.bridge.origin is not None and run.bridge.odometry)
    assert run.bridge.start(run.auv.time) is None
    run.bridge.set_plan(np.column_stack((PLAN, np.full(3, -DEPTH))), 0.0, run.auv.time)
    run.run(200)
    assert run.auv.time == 0.0 and "GUIDED" in run.bridge.reason
