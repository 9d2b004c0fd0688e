"""``poam-ros sim --robots 2`` over real DDS: two simulated vehicles in /auv0 and /auv1 on one
domain, one clock, one central mapper, flown in lockstep to a small fleet budget, while an
independent probe in this process tells each samples batch's ingest by its publisher: each
ingest maps its own vehicle's soundings only, the central mapper holds both vehicles'
samples, none twice, and the shared map's count is the vehicles' counts summed. The planners
coordinate (the default with two vehicles): each flies its own share of the pilot survey,
from where its share starts, and the shares are the pilot, split, without overlap.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from graph_helpers import RUN_LIMIT, finish, poam_ros_sim  # noqa: E402
from nav_msgs.msg import Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402

from poam_ros import messages as msg  # noqa: E402
from poam_ros.bags import BagReader, MessageTypes  # noqa: E402
from poam_ros.cli.bags import remap  # noqa: E402
from poam_ros.diagnostics import IngestStatus, MapperStatus  # noqa: E402
from poam_ros.planners.coordination import path_length, pilot_share  # noqa: E402
from poam_ros.planners.pilot import pilot_survey  # noqa: E402
from poam_ros.ros import qos  # noqa: E402
from poam_ros.setup.mission_setup import MissionSetup  # noqa: E402
from poam_ros.view import topics  # noqa: E402
from poam_ros.workspace import Workspace  # noqa: E402

BUDGET = 700  # samples per vehicle: the fleet's 1400 is both pilot surveys and a few goals
VEHICLES = ("/auv0", "/auv1")
# m: a sample lies on its vehicle's odometry track (between two recorded poses; it
# may miss a few on a busy machine)
TRACK_TOLERANCE = 3.0


class FleetProbe:
    """Each vehicle's plans, the samples on /fleet/samples by the namespace of the node that
    published them, and the newest status per name."""

    def __init__(self, node) -> None:
        self.node = node
        self.batches: dict[str, list[np.ndarray]] = {}
        self.statuses: dict[str, object] = {}
        self.plans: dict[str, list[np.ndarray]] = {ns: [] for ns in VEHICLES}
        for namespace in VEHICLES:
            node.create_subscription(Path, f"{namespace}/plan",
                                     lambda m, ns=namespace: self.plans[ns].append(np.array(
                                         [(p.pose.position.x, p.pose.position.y)
                                          for p in m.poses])), qos.LATCHED)
        node.create_subscription(PointCloud2, "/fleet/samples", self._on_samples, qos.SAMPLES)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                 qos.DIAGNOSTICS)

    def _on_samples(self, message, info) -> None:
        gid = bytes(info["publisher_gid"]["data"])
        publisher = next((endpoint.node_namespace for endpoint in
                          self.node.get_publishers_info_by_topic("/fleet/samples")
                          if bytes(endpoint.endpoint_gid) == gid), "unknown")
        xy, z = msg.cloud_to_samples(message)
        self.batches.setdefault(publisher, []).append(np.column_stack([xy, z]))

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            record = msg.status_record(status)
            if record is not None:
                self.statuses[status.name] = record

    def samples(self, namespace: str) -> np.ndarray:
        return np.vstack(self.batches.get(namespace, [np.empty((0, 3))]))


@pytest.fixture(scope="module")
def fleet(ros_context, tmp_path_factory, small_parameter_file, live_view):
    from rclpy.node import Node

    folder = tmp_path_factory.mktemp("fleet")
    out = folder / "out"
    node = Node("fleet_probe", context=ros_context)
    probe = FleetProbe(node)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    params = small_parameter_file()
    try:
        process = poam_ros_sim(["--params", str(params), "--robots", "2",
                                "--max-samples", str(BUDGET), "--seed", "3",
                                "--record", str(folder / "bag"), "--view", "--view-port",
                                str(live_view[1])], out)
        code, printed, err = finish(process, executor, time.monotonic() + RUN_LIMIT)
        settle = time.monotonic() + 1.5  # the last diagnostics in flight
        while time.monotonic() < settle:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
    assert code == 0, f"poam-ros sim --robots 2 exited with {code}:\n{printed}\n{err}"
    return probe, json.loads((out / "sim.json").read_text()), printed, params


def recorded_tracks(bag) -> dict[str, np.ndarray]:
    """Each vehicle's odometry positions (P, 2) as the bag holds them: every pose from the
    first (the clock waited for the recorder), which a probe joining late could miss."""
    reader, types = BagReader(bag), MessageTypes()
    tracks = {}
    for namespace in VEHICLES:
        positions = [types.deserialize(m.data, m.msgtype).pose.pose.position
                     for m in reader.messages({f"{namespace}/odom"})]
        tracks[namespace] = np.array([(p.x, p.y) for p in positions])
    return tracks


def test_each_ingest_maps_its_own_vehicle_only(fleet):
    probe, summary, _, _ = fleet
    assert set(probe.batches) == set(VEHICLES)
    tracks = recorded_tracks(summary["bag"]["path"])
    assert all(len(track) > 100 for track in tracks.values())

    def distance(samples, track):
        return np.min(np.linalg.norm(samples[:, None, :2] - track[None, :, :], axis=2), axis=1)

    for namespace, other in (VEHICLES, VEHICLES[::-1]):
        samples = probe.samples(namespace)
        assert len(samples) > 100
        own = distance(samples, tracks[namespace])
        assert own.max() < TRACK_TOLERANCE and np.median(own) < 0.1
        # Both fly a pilot survey over the one workspace, from starts far apart: the first
        # sample an ingest maps is its own vehicle's first sounding, at its start.
        first = probe.batches[namespace][0][0, :2]
        assert np.linalg.norm(first - tracks[namespace][0]) < TRACK_TOLERANCE
        assert np.linalg.norm(first - tracks[other][0]) > 5.0
        ingest = probe.statuses[f"{namespace.strip('/')}/sensor_ingest: samples"]
        assert isinstance(ingest, IngestStatus)
        assert ingest.samples_published == len(samples)


def test_the_central_map_holds_both_vehicles_samples_once(fleet):
    probe, summary, printed, _ = fleet
    both = np.vstack([probe.samples(namespace) for namespace in VEHICLES])
    assert len(np.unique(both, axis=0)) == len(both)  # no sounding twice
    mapper = probe.statuses["fleet/mapper: mapping"]
    assert isinstance(mapper, MapperStatus)
    assert mapper.samples == len(both) == summary["final"]["num_samples"]
    vehicles = summary["vehicles"]
    assert sum(vehicles[ns]["samples"] for ns in VEHICLES) == summary["final"]["num_samples"]
    # every epoch's record tells each vehicle's share of the map, as the probe counted it
    final = summary["final"]["extra"]
    assert [final[f"samples_{ns.strip('/')}"] for ns in VEHICLES] == \
        [len(probe.samples(ns)) for ns in VEHICLES]
    assert f"auv0 {final['samples_auv0']}, auv1 {final['samples_auv1']}" in printed
    assert summary["final"]["num_samples"] >= 2 * BUDGET and summary["outcome"] == "budget"
    for namespace in VEHICLES:
        assert vehicles[namespace]["state"] == "done"
        assert f"{namespace}: {vehicles[namespace]['samples']} samples" in printed
    assert "fleet mission done" in printed
    unclean = {name: code for name, code in summary["exit_codes"].items() if code != 0}
    assert not unclean


def test_coordinated_vehicles_fly_their_own_shares_of_the_pilot(fleet):
    probe, summary, _, params = fleet
    tracks = recorded_tracks(summary["bag"]["path"])
    setup = MissionSetup.from_file(params)
    pilot = pilot_survey(Workspace.from_config(setup.workspace), np.random.default_rng(0),
                         setup.pilot)  # the bezier pilot: the same from every seed
    shares = [probe.plans[namespace][0] for namespace in VEHICLES]  # the first plan each
    for k, (namespace, share) in enumerate(zip(VEHICLES, shares)):
        np.testing.assert_allclose(share, pilot_share(pilot, k, 2), atol=1e-3)
        track = tracks[namespace]
        # it starts where its share starts and flies through every waypoint of it
        assert np.linalg.norm(track[0] - share[0]) < TRACK_TOLERANCE
        passed = np.linalg.norm(track[:, None, :] - share[None, :, :], axis=2).min(axis=0)
        assert passed.max() < TRACK_TOLERANCE
    # the shares meet at their cut point and are the pilot once: half its length each
    np.testing.assert_allclose(shares[0][-1], shares[1][0], atol=1e-3)
    for share in shares:
        assert abs(path_length(share) - path_length(pilot) / 2) < 0.01 * path_length(pilot)


def test_the_bag_holds_every_vehicle_and_the_fleet(fleet):
    """``--record``: one bag of every vehicle's sensors, plans and announcements and the
    fleet's map and samples: every batch the central mapper mapped is in it."""
    _, summary, _, _ = fleet
    reader = BagReader(summary["bag"]["path"])
    expected = {f"{ns}/{topic}" for ns in VEHICLES
                for topic in ("odom", "sonar/range", "plan", "fleet/plan")}
    assert expected | {"/fleet/samples", "/fleet/map", "/clock", "/diagnostics"} <= \
        set(reader.topics)
    assert not {"/odom", "/samples", "/map"} & set(reader.topics)  # nothing un-namespaced
    types = MessageTypes()
    recorded = sum(types.deserialize(message.data, message.msgtype).width
                   for message in reader.messages({"/fleet/samples"}))
    assert recorded >= summary["final"]["num_samples"]
    for namespace in VEHICLES:  # each vehicle's odometry (from its first pose: see below)
        assert reader.topics[f"{namespace}/odom"].count > 100


def test_remap_maps_one_vehicle_or_the_central_map_from_the_fleet_s_bag(fleet, tmp_path):
    """``remap --namespace auv1``: that vehicle's odometry and sonar through the ingest, its
    soundings only; ``--namespace fleet --source samples``: the central map again from every
    vehicle's batches, an update at each live map's stamp that a batch's data time falls to
    (not bit-equal to the live maps: the live mapper took two ingests' batches as they
    arrived, not in data time, and a live map that took only batches older than the map
    before it, stamped 1 ns after that map, gets none)."""
    probe, summary, _, params = fleet
    bag = summary["bag"]["path"]
    common = ["--params", str(params), "--seed", "3", "--torch-threads", "1"]
    assert remap([bag, *common, "--namespace", "auv1", "--tail", "map",
                  "--out", str(tmp_path / "auv1")]) == 0
    vehicle = json.loads((tmp_path / "auv1" / "remap.json").read_text())
    own = summary["final"]["extra"]["samples_auv1"]
    assert own <= vehicle["samples"] <= summary["vehicles"]["/auv1"]["samples"] + 50
    assert vehicle["samples"] < summary["final"]["num_samples"] - own / 2  # not auv0's
    assert remap([bag, *common, "--namespace", "fleet", "--source", "samples",
                  "--out", str(tmp_path / "fleet")]) == 0
    central = json.loads((tmp_path / "fleet" / "remap.json").read_text())
    assert central["samples"] >= summary["final"]["num_samples"]
    comparison = central["comparison_with_live"]
    assert comparison["compared"] == central["updates"] > 1
    assert comparison["live_maps"] >= central["updates"]


def test_the_live_view_shows_both_vehicles_and_the_fleet_s_mission(fleet, live_view):
    """``--view``: a Foxglove client saw the central map, each vehicle's pose on its own
    channel and its trail and plan as its own entities, and the fleet's mission to its end."""
    client, _ = live_view
    received = client.received
    assert received.get(topics.MEAN) and received.get(topics.STD)
    for namespace in VEHICLES:
        assert received.get(f"{namespace}{topics.POSE}")
    entities = {entity.id for update in received[topics.SCENE] for entity in update.entities}
    assert {"auv0/trail", "auv0/plan", "auv1/trail", "auv1/plan"} <= entities
    states = [status.get("state") for status in received[topics.STATUS]]
    assert states[-1] == "done"
    assert {ns: s["state"] for ns, s in received[topics.STATUS][-1]["vehicles"].items()} == \
        {ns: "done" for ns in VEHICLES}
    assert not client.errors
