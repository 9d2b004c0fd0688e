"""A simulated survey written as a bag without ROS, for tests and benchmarks.

The ROS-free :class:`~poam_ros.sim.simulated_auv.SimulatedAuv` in lockstep follows a pilot
survey, given legs and then random goals; its odometry and soundings are serialized with
``rosbags``' Kilted type store exactly as the ``simulated_auv`` node fills them in
(frames, limits, variance), with the plans, a simulator diagnostics status and, with
``temperature.enabled``, its temperature readings on ``/temperature``, with
``seabed_class.enabled`` its class readings on ``/seabed_class`` (one-point clouds), so that
:func:`~poam_ros.bags.remap.remap_bag` treats the bag as a recording of the simulator.
"""

from __future__ import annotations

import math

import numpy as np
from rosbags.typesys import Stores, get_typestore

from poam_ros import messages as msg
from poam_ros.bags.bag_writer import BagWriter
from poam_ros.bags.message_types import MessageTypes
from poam_ros.diagnostics import SimulatorStatus, encode, status_name
from poam_ros.planners import pilot_survey
from poam_ros.planners.random_planner import RandomPlanner
from poam_ros.setup.mission_setup import MissionSetup, mission_seeds
from poam_ros.setup.truth import mission_terrain, simulated_channels
from poam_ros.sim import SurveySimulator, lower_right_start
from poam_ros.sim.seabed_class import CHANNEL as SEABED_CLASS
from poam_ros.sim.simulated_auv import Odom, Reading, SimulatedAuv, Sounding
from poam_ros.sim.water_temperature import CHANNEL as TEMPERATURE
from poam_ros.workspace import Workspace

STORE = get_typestore(Stores.ROS2_KILTED)
T = STORE.types


def stamp(seconds: float):
    """The ``Time`` a node stamps ``seconds`` with (:func:`messages.seconds_to_nanoseconds`)."""
    sec, nanosec = divmod(msg.seconds_to_nanoseconds(seconds), msg.NANOSECONDS_PER_SECOND)
    return T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def header(seconds: float, frame: str):
    return T["std_msgs/msg/Header"](stamp=stamp(seconds), frame_id=frame)


def odometry(t, x, y, yaw, z=0.0) -> bytes:
    point = T["geometry_msgs/msg/Point"](x=float(x), y=float(y), z=float(z))
    q = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2))
    pose = T["geometry_msgs/msg/PoseWithCovariance"](
        pose=T["geometry_msgs/msg/Pose"](position=point, orientation=q),
        covariance=np.zeros(36))
    vector = T["geometry_msgs/msg/Vector3"]
    twist = T["geometry_msgs/msg/TwistWithCovariance"](
        twist=T["geometry_msgs/msg/Twist"](linear=vector(x=0.0, y=0.0, z=0.0),
                                           angular=vector(x=0.0, y=0.0, z=0.0)),
        covariance=np.zeros(36))
    message = T["nav_msgs/msg/Odometry"](header=header(t, "map"), child_frame_id="base_link",
                                         pose=pose, twist=twist)
    return STORE.serialize_cdr(message, "nav_msgs/msg/Odometry").tobytes()


def sounding(t, distance) -> bytes:
    message = T["sensor_msgs/msg/Range"](header=header(t, "sonar_link"), radiation_type=0,
                                         field_of_view=0.0, min_range=1.0, max_range=2000.0,
                                         range=float(distance), variance=1.0)
    return STORE.serialize_cdr(message, "sensor_msgs/msg/Range").tobytes()


def temperature(t, value, noise_std) -> bytes:
    message = T["sensor_msgs/msg/Temperature"](header=header(t, "base_link"),
                                               temperature=float(value),
                                               variance=float(noise_std) ** 2)
    return STORE.serialize_cdr(message, "sensor_msgs/msg/Temperature").tobytes()


def class_reading(t, channel: str, value) -> bytes:
    """A one-point float32 PointCloud2 of one field ``channel`` (the node's binary channel)."""
    field = T["sensor_msgs/msg/PointField"](name=channel, offset=0, datatype=7, count=1)
    message = T["sensor_msgs/msg/PointCloud2"](
        header=header(t, "base_link"), height=1, width=1, fields=[field], is_bigendian=False,
        point_step=4, row_step=4, data=np.array([value], dtype="<f4").view(np.uint8),
        is_dense=True)
    return STORE.serialize_cdr(message, "sensor_msgs/msg/PointCloud2").tobytes()


def plan(t, waypoints) -> bytes:
    poses = []
    for x, y in waypoints:
        point = T["geometry_msgs/msg/Point"](x=float(x), y=float(y), z=0.0)
        q = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)
        poses.append(T["geometry_msgs/msg/PoseStamped"](
            header=header(t, "map"), pose=T["geometry_msgs/msg/Pose"](position=point,
                                                                       orientation=q)))
    message = T["nav_msgs/msg/Path"](header=header(t, "map"), poses=poses)
    return STORE.serialize_cdr(message, "nav_msgs/msg/Path").tobytes()


def vehicle_diagnostics(auv: SimulatedAuv) -> bytes:
    """The ``simulated_auv`` node's status of ``auv`` as it publishes it (lockstep)."""
    (reached, total), (x, y, yaw) = auv.progress, auv.pose
    record = SimulatorStatus(sim_time=auv.time, mode="lockstep", x=x, y=y, yaw=yaw,
                             waypoints_reached=reached, waypoints=total, holding=auv.holding,
                             plans_refused=0, pings_off_terrain=auv.pings_off_terrain)
    kv = T["diagnostic_msgs/msg/KeyValue"]
    status = T["diagnostic_msgs/msg/DiagnosticStatus"](
        level=b"\x00"[0], name=status_name("simulated_auv", SimulatorStatus), message="ok",
        hardware_id="", values=[kv(key=key, value=value) for key, value in encode(record)])
    message = T["diagnostic_msgs/msg/DiagnosticArray"](header=header(auv.time, ""),
                                                       status=[status])
    return STORE.serialize_cdr(message, "diagnostic_msgs/msg/DiagnosticArray").tobytes()


def add(writer: BagWriter, name: str, msgtype: str) -> int:
    return writer.add_topic(name, msgtype, *MessageTypes().definition(msgtype))


def write_survey(path, setup: MissionSetup, legs=((20.0, -20.0), (-10.0, 10.0)),
                 min_samples: int = 0, **writer_args):
    """A lockstep survey recorded as the simulated_auv node publishes it: the pilot plan,
    then one plan per leg of ``legs``, then random goals (the random planner) until
    ``min_samples`` soundings; receive time = sim time + 1 ms. Returns the bag path."""
    seeds = mission_seeds(setup.mission.seed)
    terrain = mission_terrain(setup)
    workspace = Workspace.from_config(setup.workspace)
    simulator = SurveySimulator(terrain, setup.vehicle, setup.sonar, seed=seeds["simulator"],
                                start_pose=lower_right_start(workspace.bounds))
    channels = simulated_channels(setup, terrain)
    sensors = [channel.sensor(seeds["simulator"]) for channel in channels.values()]
    auv = SimulatedAuv(simulator, "lockstep", sensors=sensors)
    rng = np.random.default_rng(seeds["planner"])
    plans = [pilot_survey(workspace, rng, setup.pilot)] + [np.array([leg]) for leg in legs]
    planner = RandomPlanner(workspace, rng)
    soundings = 0
    base = 1_700_000_000 * 10**9
    with BagWriter(path, **writer_args) as writer:
        ids = {name: add(writer, name, msgtype) for name, msgtype in (
            ("/odom", "nav_msgs/msg/Odometry"), ("/sonar/range", "sensor_msgs/msg/Range"),
            ("/plan", "nav_msgs/msg/Path"), ("/diagnostics",
                                             "diagnostic_msgs/msg/DiagnosticArray"))}
        if TEMPERATURE in channels:
            ids["/temperature"] = add(writer, "/temperature", "sensor_msgs/msg/Temperature")
        if SEABED_CLASS in channels:
            ids["/seabed_class"] = add(writer, "/seabed_class", "sensor_msgs/msg/PointCloud2")
        while plans or soundings < min_samples:
            waypoints = plans.pop(0) if plans else planner.plan(np.asarray(auv.pose[:2]))
            now = auv.time
            writer.write(ids["/plan"], base + int(now * 1e9) + 10**6, plan(now, waypoints))
            auv.set_plan(waypoints)
            events = auv.advance(math.inf)
            for event in events:
                received = base + int(event.t * 1e9) + 10**6
                if isinstance(event, Odom):
                    writer.write(ids["/odom"], received, odometry(event.t, event.x, event.y,
                                                                  event.yaw))
                elif isinstance(event, Sounding):
                    writer.write(ids["/sonar/range"], received, sounding(event.t, event.range))
                    soundings += 1
                elif isinstance(event, Reading) and event.channel == SEABED_CLASS:
                    writer.write(ids["/seabed_class"], received,
                                 class_reading(event.t, SEABED_CLASS, event.value))
                elif isinstance(event, Reading):
                    writer.write(ids["/temperature"], received, temperature(
                        event.t, event.value, setup.temperature.noise_std))
            writer.write(ids["/diagnostics"], base + int(auv.time * 1e9) + 2 * 10**6,
                         vehicle_diagnostics(auv))
    return path
