"""Every node's /diagnostics: stamped with the node's own clock (sim time under /clock), named
by its fully qualified name, with the computer (and the mapper's device) as hardware_id."""

from __future__ import annotations

import socket

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.ros.ingest_node import IngestNode  # noqa: E402
from poam_ros.ros.mapper_node import MapperNode  # noqa: E402

SIM_TIME = 12_345.5  # s on /clock: far from wall time and from any sensor stamp


def test_statuses_carry_the_node_clock_their_name_and_their_computer(
        start_node, make_node, spin_until, tmp_path, ros_context, nodes_to_destroy):
    ingest = start_node(IngestNode, use_sim_time=True, diagnostics_period=0.2)
    mapper = start_node(MapperNode, use_sim_time=True, diagnostics_period=0.2,
                        save_path=str(tmp_path / "map.pt"), **{"journal.enabled": False,
                                                               "mapping.device": "cpu"})
    spaced = IngestNode(context=ros_context, namespace="auv7", parameter_overrides=[
        Parameter("diagnostics_period", value=0.2)])
    nodes_to_destroy.append(spaced)
    probe = make_node("status_probe")
    clock = probe.create_publisher(Clock, "/clock", qos.CLOCK)
    seen: dict[str, tuple] = {}

    def keep(array: DiagnosticArray) -> None:
        for status in array.status:
            seen[status.name] = (msg.time_to_seconds(array.header.stamp), status.hardware_id)

    probe.create_subscription(DiagnosticArray, "/diagnostics", keep, qos.DIAGNOSTICS)

    def tick() -> bool:
        clock.publish(Clock(clock=cv.seconds_to_time(SIM_TIME)))
        names = ("sensor_ingest: samples", "mapper: mapping", "auv7/sensor_ingest: samples")
        return all(name in seen for name in names) and \
            seen["sensor_ingest: samples"][0] == seen["mapper: mapping"][0] == SIM_TIME

    assert spin_until(tick, ingest, mapper, spaced, probe, timeout=20.0)
    host = socket.gethostname()
    assert seen["sensor_ingest: samples"] == (SIM_TIME, host)  # no sensor stamp: its clock's
    assert seen["mapper: mapping"] == (SIM_TIME, f"{host}/cpu")
    assert seen["auv7/sensor_ingest: samples"][1] == host
