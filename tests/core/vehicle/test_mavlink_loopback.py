"""The bridge against the simulated autopilot: real pymavlink over real UDP on loopback."""

import math

import numpy as np
from conftest import ANCHOR, DEPTH

from poam_ros.vehicle.bridge import ACTIVE, HOLDING, IDLE, LINK_LOST
from poam_ros.vehicle.link import mavlink
from poam_ros.vehicle.telemetry import Depth, Fix, Odometry, Range

INTEGER_DEGREE = 0.012  # m: 1e-7° of latitude is 1.1 cm, of longitude at 47° 0.8 cm


def _latest(records, kind):
    return [r for r in records if isinstance(r, kind)][-1]


def test_heartbeats_both_ways_and_state_in_the_map_frame(make_pair):
    pair = make_pair()
    pair.ready()
    pair.run(3.0)
    bridge, autopilot, simulator = pair.bridge, pair.autopilot, pair.autopilot.simulator
    assert autopilot.received["HEARTBEAT"] >= 3
    assert bridge.autopilot.vehicle_type == mavlink.MAV_TYPE_SUBMARINE
    assert bridge.autopilot.armed and bridge.autopilot.custom_mode == 4  # ArduSub GUIDED
    odometry = _latest(pair.records, Odometry)
    x, y, yaw = simulator.pose
    assert math.hypot(odometry.x - x, odometry.y - y) < INTEGER_DEGREE
    assert odometry.z == -DEPTH  # map z up: the vehicle is below the surface
    assert abs(math.remainder(odometry.yaw - yaw, math.tau)) < 1e-6
    # depth positive down, from the depth sensor's float32 hPa (SCALED_PRESSURE2)
    assert abs(_latest(pair.records, Depth).depth - DEPTH) < 1e-5
    elevation = float(simulator.terrain.elevation([[x, y]])[0])
    assert abs(_latest(pair.records, Range).range - (-DEPTH - elevation)) <= 0.01  # 1 cm steps
    assert not [r for r in pair.records if isinstance(r, Fix)]  # no GNSS under water
    assert bridge.clock.offset is not None and abs(bridge.clock.offset) < 0.05


def test_a_boat_reports_a_gnss_fix_and_its_velocity(make_pair):
    pair = make_pair(vertical_mode="plane")  # a surface vessel: z = plane_z above the map
    pair.ready()
    assert pair.bridge.autopilot.vehicle_type == mavlink.MAV_TYPE_SURFACE_BOAT
    assert pair.bridge.start(pair.t) is None
    pair.bridge.set_plan([[20.0, 0.0]], pair.t, pair.t)  # due north of the start
    pair.run(4.0)
    fix = _latest(pair.records, Fix)
    assert fix.status == 0 and fix.satellites == 12  # NavSatStatus.STATUS_FIX
    (lon, lat), odometry = ANCHOR.to_lonlat(*pair.autopilot.simulator.pose[:2]), \
        _latest(pair.records, Odometry)
    assert abs(fix.latitude - lat) < 2e-7 and abs(fix.longitude - lon) < 2e-7
    assert odometry.vy > 0.3 and abs(odometry.vx) < 0.1  # heading north in ENU


def test_a_plan_is_flown_pose_by_pose_without_arming_or_mode_changes(make_pair):
    pair = make_pair()
    pair.ready()
    bridge, autopilot = pair.bridge, pair.autopilot
    plan = np.array([[10.0, -20.0, -DEPTH], [10.0, -10.0, -DEPTH]])
    assert bridge.start(pair.t) is None and bridge.set_plan(plan, pair.t, pair.t) is None
    assert pair.run(60.0, lambda: bridge.goal_index == 1)
    first = autopilot.targets[-1]
    assert math.hypot(first[1] - 10.0, first[2] + 20.0) < INTEGER_DEGREE
    assert first[3] == -DEPTH  # the depth as negative altitude relative to home
    seen = bridge.odometry  # advanced on arrival, as the bridge saw it
    assert math.hypot(seen.x - 10.0, seen.y + 20.0) <= bridge.config.goal_radius
    x, y, _ = autopilot.simulator.pose  # the truth, a telemetry period (≤ 0.1 m) later
    assert math.hypot(x - 10.0, y + 20.0) <= bridge.config.goal_radius + 0.2
    assert pair.run(60.0, lambda: bridge.plan is None)
    assert bridge.reason == "plan done"
    x, y, _ = autopilot.simulator.pose
    assert math.hypot(x - 10.0, y + 10.0) <= bridge.config.goal_radius + 0.2
    times = [t for t, *_ in autopilot.targets]
    assert max(np.diff(times)) <= bridge.config.command_period + 0.06  # re-sent at the rate
    sent = {command for command, _ in autopilot.commands}
    assert sent == {mavlink.MAV_CMD_REQUEST_MESSAGE}  # never arm, never a mode change
    assert autopilot.received["SET_MODE"] == 0


def test_mode_changes_only_when_allowed(make_pair):
    pair = make_pair(allow_mode_change=True)
    pair.run(5.0, lambda: pair.bridge.origin is not None)
    pair.autopilot.operator_arm()
    assert pair.bridge.start(pair.t) is None
    pair.bridge.set_plan([[10.0, -20.0, -DEPTH]], pair.t, pair.t)
    assert pair.run(3.0, lambda: pair.autopilot.custom_mode == 4)
    modes = [params for command, params in pair.autopilot.commands
             if command == mavlink.MAV_CMD_DO_SET_MODE]
    assert modes and modes[0][:2] == (1.0, 4.0)  # CUSTOM_MODE_ENABLED, ArduSub GUIDED
    assert mavlink.MAV_CMD_COMPONENT_ARM_DISARM not in {c for c, _ in pair.autopilot.commands}
    assert pair.run(3.0, lambda: pair.autopilot.targets)


def test_unsafe_plans_are_refused_and_nothing_is_sent(make_pair):
    pair = make_pair()
    pair.ready()
    bridge = pair.bridge
    assert bridge.start(pair.t) is None
    for pose, reason in (([40.0, 0.0, -DEPTH], "outside_workspace"),
                         ([0.0, 0.0, -150.0], "below_max_depth"),
                         ([0.0, 0.0, 2.0], "above_surface")):
        assert bridge.set_plan([[10.0, -20.0, -DEPTH], pose], pair.t, pair.t) == reason
    assert bridge.set_plan([[10.0, -20.0, -DEPTH]], pair.t - 60.0, pair.t) == "stale_plan"
    pair.run(3.0)
    assert pair.autopilot.received["SET_POSITION_TARGET_GLOBAL_INT"] == 0
    assert bridge.gate.refused == {"outside_workspace": 1, "below_max_depth": 1,
                                   "above_surface": 1, "stale_plan": 1}


def test_link_loss_stops_commanding_and_only_start_resumes(make_pair):
    pair = make_pair()
    pair.ready()
    bridge, autopilot = pair.bridge, pair.autopilot
    bridge.start(pair.t)
    bridge.set_plan([[-20.0, -20.0, -DEPTH]], pair.t, pair.t)
    pair.run(3.0)
    assert bridge.state == ACTIVE and autopilot.targets
    autopilot.silent = True
    cut = pair.t
    assert pair.run(10.0, lambda: bridge.state == LINK_LOST)
    deadline = cut + bridge.config.link_timeout
    assert pair.t <= deadline + 2 * 0.05
    pair.run(5.0)
    assert [t for t, *_ in autopilot.targets if t > deadline + 0.1] == []
    autopilot.silent = False
    assert pair.run(3.0, lambda: bridge.state == IDLE)  # the link back: waiting, not flying
    back = pair.t
    pair.run(3.0)
    assert [t for t, *_ in autopilot.targets if t > back] == []
    assert bridge.start(pair.t) is None
    assert bridge.plan is None and bridge.gate.refused["stale_plan"] == 1  # not flown: stale
    bridge.set_plan([[-20.0, -20.0, -DEPTH]], pair.t, pair.t)
    assert pair.run(2.0, lambda: autopilot.targets[-1][0] > back)


def test_abort_holds_at_the_current_position_within_one_period(make_pair):
    pair = make_pair()
    pair.ready()
    bridge, autopilot = pair.bridge, pair.autopilot
    bridge.abort(pair.t)  # not commanding: nothing to stop, nothing sent
    pair.run(1.0)
    assert bridge.state == IDLE and not autopilot.targets
    bridge.start(pair.t)
    bridge.set_plan([[-20.0, -20.0, -DEPTH]], pair.t, pair.t)
    pair.run(5.0)
    pair.drain()
    where, before = bridge.odometry, len(autopilot.targets)
    aborted = pair.t
    bridge.abort(pair.t)
    assert bridge.state == HOLDING
    pair.run(bridge.config.command_period)
    hold = autopilot.targets[before:]
    assert hold and hold[0][0] <= aborted + bridge.config.command_period
    assert math.hypot(hold[0][1] - where.x, hold[0][2] - where.y) < INTEGER_DEGREE
    assert hold[0][3] == -DEPTH  # at its own height
    pair.run(5.0)
    x, y, _ = autopilot.simulator.pose
    assert math.hypot(x - where.x, y - where.y) < 1.0  # it stopped, well short of the goal
    assert all(math.hypot(t[1] - where.x, t[2] - where.y) < INTEGER_DEGREE
               for t in autopilot.targets[before:])


def test_an_ekf_origin_away_from_the_map_origin_is_refused(make_pair):
    pair = make_pair(origin_offset=(50.0, 0.0))
    pair.ready()
    assert abs(pair.bridge.origin.offset - 50.0) < 0.05
    assert "EKF origin is 50.0 m" in pair.bridge.start(pair.t)
    pair.bridge.set_plan([[10.0, -20.0, -DEPTH]], pair.t, pair.t)
    pair.run(2.0)
    assert pair.autopilot.received["SET_POSITION_TARGET_GLOBAL_INT"] == 0
