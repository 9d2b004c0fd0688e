"""``poam-ros sim --robots 2 --fleet-map distributed --link-bandwidth 100`` over real DDS: each
vehicle maps its own soundings and what its teammate sent it over the simulated 100 B/s link
(TDMA, a slot each). An independent probe tells each batch on a vehicle's ``samples`` topic by
its publisher (the vehicle's ingest or its fleet_link): every relayed sounding is one of the
teammate's own soundings (within the encoding's resolution) and none comes twice; each
mapper holds its own soundings and some of its teammate's; each planner ends at its share of
the fleet's sample budget in its own soundings; no link sent more than 100 bytes in any second.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from graph_helpers import RUN_LIMIT, finish, poam_ros_sim  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.diagnostics import FleetLinkStatus, MapperStatus  # noqa: E402
from poam_ros.fleet import EncodingConfig  # noqa: E402
from poam_ros.ros import qos  # noqa: E402

BUDGET = 700  # samples per vehicle: each vehicle flies this many of its own
BANDWIDTH = 100  # B/s per link
VEHICLES = ("/auv0", "/auv1")
SOURCES = ("sensor_ingest", "fleet_link")


class LinkProbe:
    """The batches on each vehicle's samples topic by the node that published them, and the
    newest status per name."""

    def __init__(self, node) -> None:
        self.node = node
        self.batches = {(ns, source): [] for ns in VEHICLES for source in SOURCES}
        self.statuses: dict[str, object] = {}
        for namespace in VEHICLES:
            node.create_subscription(PointCloud2, f"{namespace}/samples",
                                     lambda m, i, ns=namespace: self._on_samples(ns, m, i),
                                     qos.SAMPLES)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                 qos.DIAGNOSTICS)

    def _on_samples(self, namespace: str, message, info) -> None:
        gid = bytes(info["publisher_gid"]["data"])
        source = next((endpoint.node_name for endpoint in
                       self.node.get_publishers_info_by_topic(f"{namespace}/samples")
                       if bytes(endpoint.endpoint_gid) == gid), "unknown")
        xy, z = msg.cloud_to_samples(message)
        self.batches.setdefault((namespace, source), []).append(np.column_stack([xy, z]))

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            record = msg.status_record(status)
            if record is not None:
                self.statuses[status.name] = record

    def samples(self, namespace: str, source: str) -> np.ndarray:
        return np.vstack(self.batches.get((namespace, source)) or [np.empty((0, 3))])


@pytest.fixture(scope="module")
def distributed(ros_context, tmp_path_factory, small_parameter_file):
    from rclpy.node import Node

    out = tmp_path_factory.mktemp("distributed") / "out"
    node = Node("link_probe", context=ros_context)
    probe = LinkProbe(node)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    try:
        process = poam_ros_sim(["--params", str(small_parameter_file()), "--robots", "2",
                                "--fleet-map", "distributed", "--link-bandwidth",
                                str(BANDWIDTH), "--max-samples", str(BUDGET), "--seed", "3"],
                               out)
        code, printed, err = finish(process, executor, time.monotonic() + RUN_LIMIT)
        settle = time.monotonic() + 1.5  # the last diagnostics in flight
        while time.monotonic() < settle:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
    assert code == 0, f"poam-ros sim --fleet-map distributed exited with {code}:\n{printed}\n{err}"
    return probe, json.loads((out / "sim.json").read_text()), printed


def sent_within(relayed: np.ndarray, sent: np.ndarray, encoding: EncodingConfig) -> np.ndarray:
    """For each relayed sounding (N, 3), whether one of ``sent`` (M, 3) lies within half the
    encoding's resolution of it in x, y and z."""
    half = np.array([encoding.xy_resolution] * 2 + [encoding.value_resolutions[0]]) / 2
    return (np.abs(relayed[:, None, :] - sent[None, :, :]) <= half + 1e-9).all(axis=2).any(axis=1)


def quantised(rows: np.ndarray, encoding: EncodingConfig) -> Counter:
    """How often each sounding (N, 3) occurs, on the encoding's grid."""
    steps = np.array([encoding.xy_resolution] * 2 + [encoding.value_resolutions[0]])
    return Counter(map(tuple, np.round(rows / steps).astype(int).tolist()))


def test_each_vehicle_maps_its_own_and_some_of_its_teammates_soundings_once(distributed):
    probe, summary, printed = distributed
    assert not probe.batches.get(("/auv0", "unknown")) and \
        not probe.batches.get(("/auv1", "unknown"))
    encoding = EncodingConfig()
    for namespace, other in (VEHICLES, VEHICLES[::-1]):
        own, relayed = (probe.samples(namespace, source) for source in SOURCES)
        teammate = probe.samples(other, "sensor_ingest")
        assert len(own) > 100 and len(relayed) > 100
        # every relayed sounding is one of the teammate's, within the encoding's resolution,
        # and none comes twice
        assert sent_within(relayed, teammate, encoding).all()
        assert len(relayed) <= len(teammate)
        # a quantised sounding comes no more often than the teammate sounded it
        relayed_keys, teammate_keys = (quantised(rows, encoding) for rows in (relayed, teammate))
        assert all(count <= teammate_keys.get(key, 0) for key, count in relayed_keys.items())
        # the mapper holds both, less what it refused (counted)
        mapper = probe.statuses[f"{namespace.strip('/')}/mapper: mapping"]
        assert isinstance(mapper, MapperStatus)
        assert mapper.samples == len(own) + len(relayed) - sum(mapper.rejected.values())
        vehicle = summary["vehicles"][namespace]
        # its planner counted its own soundings in its map, not what the link relayed, and
        # ended at its share of the fleet's budget; that map was scored, and the teammate's
        # soundings may still come after
        spent = re.fullmatch(rf"samples budget spent: (\d+) of {BUDGET}; holding",
                             vehicle["reason"])
        assert vehicle["state"] == "done" and spent, vehicle["reason"]
        scored = vehicle["map"]["num_samples"]
        assert BUDGET <= int(spent[1]) <= len(own) and int(spent[1]) <= scored <= mapper.samples
        # the summary's counts hold the batch that spent the budget: its ingest published
        # it, its link sent it or holds it
        link = vehicle["link"]
        assert int(spent[1]) <= vehicle["samples"] <= link["soundings_sent"] + link["waiting"]
        assert f"{namespace}: its map: {scored} samples" in printed
    final = summary["final"]["extra"]  # the first vehicle's map: its own and the relayed
    assert final["samples_auv0"] == len(probe.samples("/auv0", "sensor_ingest"))
    assert final["samples_auv0"] + final["samples_link"] == summary["final"]["num_samples"]
    assert summary["outcome"] == "budget" and "fleet mission done" in printed


def test_no_link_sends_more_than_its_budget_in_any_second(distributed):
    probe, summary, _ = distributed
    for namespace in VEHICLES:
        link = probe.statuses[f"{namespace.strip('/')}/fleet_link: fleet link"]
        assert isinstance(link, FleetLinkStatus)
        assert 0 < link.peak_window_bytes <= BANDWIDTH
        # its last status may come before its last packets: the teammate heard something
        assert link.soundings_sent > 0
        assert len(probe.samples(VEHICLES[1 - VEHICLES.index(namespace)], "fleet_link")) > 0
        # the summary's is the link's count when the fleet's mission ended: it sends on
        assert 0 < summary["vehicles"][namespace]["link"]["bytes_sent"] <= link.bytes_sent
