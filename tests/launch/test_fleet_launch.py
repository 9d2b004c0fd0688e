"""fleet.launch.xml and the simulated fleet's graph: ``poam-ros sim --robots N`` starts for one
to four vehicles exactly the nodes the file starts with ``sim:=true robots:=N``, every
vehicle's stack in its namespace talking to the central mapper; the fleet's effective file
gives each vehicle its own start and planner seed and every planner the fleet's budget; with
coordination, each vehicle's place in the fleet and its teammates, and a start where its
pilot share starts."""

from pathlib import Path

import numpy as np

from poam_ros.launch_xml import expand, launch_file
from poam_ros.params.files import load_node_parameters
from poam_ros.planners.coordination import pilot_share
from poam_ros.planners.pilot import pilot_survey
from poam_ros.setup.fleet_launch import (
    CENTRAL_MAPPER,
    LAUNCH_FILE_ROBOTS,
    FleetOptions,
    fleet_nodes,
    recorded_topics,
    vehicle_namespaces,
    write_fleet_file,
)
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file
from poam_ros.setup.truth import mission_terrain
from poam_ros.workspace import Workspace


def test_one_to_four_robots_are_the_launch_file_s_graph():
    params = str(default_parameter_file())
    for central in (True, False):
        assert fleet_nodes(params, 2, central) == expand(launch_file("fleet.launch.xml"), {
            "params_file": params, "sim": "true", "central_map": str(central).lower()})
        for robots in range(1, LAUNCH_FILE_ROBOTS + 1):
            assert fleet_nodes(params, robots, central) == expand(
                launch_file("fleet.launch.xml"), {
                    "params_file": params, "sim": "true", "central_map": str(central).lower(),
                    "robots": str(robots)})
    assert [node.fqn for node in fleet_nodes(params, 2, central=False)] == [
        "/fleet_sim", "/fleet_channel", "/auv0/sensor_ingest", "/auv0/mapper", "/auv0/planner",
        "/auv0/fleet_link", "/auv1/sensor_ingest", "/auv1/mapper", "/auv1/planner",
        "/auv1/fleet_link"]


def test_the_launch_file_starts_at_most_its_own_number_of_vehicles():
    nodes = expand(launch_file("fleet.launch.xml"), {"robots": str(LAUNCH_FILE_ROBOTS + 1)})
    assert {node.namespace for node in nodes if node.name == "planner"} == set(
        vehicle_namespaces(LAUNCH_FILE_ROBOTS))


def test_each_vehicle_runs_on_its_own_parameter_file(tmp_path):
    files = {k: tmp_path / f"auv{k}.yaml" for k in range(4)}
    nodes = expand(launch_file("fleet.launch.xml"), {
        "params_file": "fleet.yaml", "robots": "4", "central_map": "false",
        **{f"auv{k}_params_file": str(path) for k, path in files.items()}})
    for node in nodes:
        vehicle = node.namespace.removeprefix("/auv")
        wanted = files[int(vehicle)] if vehicle.isdigit() else Path("fleet.yaml")
        assert node.parameters[0].path == wanted, node.fqn


def test_every_vehicle_talks_to_the_central_mapper_only():
    nodes = fleet_nodes("p.yaml", 3)
    assert [node.fqn for node in nodes] == [
        "/fleet_sim", CENTRAL_MAPPER, "/auv0/sensor_ingest", "/auv0/planner",
        "/auv1/sensor_ingest", "/auv1/planner", "/auv2/sensor_ingest", "/auv2/planner"]
    for node in nodes[2:]:
        remaps = dict(node.remaps)
        if node.name == "sensor_ingest":
            assert remaps["samples"] == "/fleet/samples" and remaps["odom"] == "odom"
        else:
            assert remaps["map"] == "/fleet/map"
            assert remaps["uncertainty/query"] == "/fleet/uncertainty/query"
            assert remaps["uncertainty/response"] == "/fleet/uncertainty/response"
        assert ("use_sim_time", "true") in [(getattr(p, "name", None), getattr(p, "value", None))
                                            for p in node.parameters]


def test_the_fleet_file_gives_each_vehicle_its_own_start_and_seed(tmp_path):
    params = default_parameter_file()
    setup = MissionSetup.from_file(params)
    terrain = mission_terrain(setup)
    path = write_fleet_file(setup, params, tmp_path / "fleet.yaml", 3, terrain,
                            {"fleet_sim": {"time_scale": 5.0}}, FleetOptions(coordination=False))
    simulator = load_node_parameters(path, "/fleet_sim")
    assert simulator["fleet.vehicles"] == 3 and simulator["time_scale"] == 5.0
    assert "start_pose" not in simulator
    poses = np.reshape(simulator["fleet.start_poses"], (3, 3))
    workspace = Workspace.from_config(setup.workspace)
    assert workspace.contains(poses[:, :2]).all() and terrain.contains(poses[:, :2]).all()
    assert len({tuple(pose) for pose in poses.tolist()}) == 3
    planners = [load_node_parameters(path, f"{namespace}/planner")
                for namespace in vehicle_namespaces(3)]
    assert len({planner["seed"] for planner in planners}) == 3
    for planner in planners:
        assert planner["mapper_name"] == CENTRAL_MAPPER
        assert planner["mission.max_samples"] == 3 * setup.mission_control.max_samples
        assert planner.get("mission.samples_counted", "map") == "map"
    assert load_node_parameters(path, "/auv1/sensor_ingest")["float64_samples"] is True
    assert load_node_parameters(path, CENTRAL_MAPPER)["mapping.seed"] == \
        setup.node_parameters("mapper")["mapping.seed"]


def test_coordinated_vehicles_know_their_teammates_and_start_on_their_pilot_share(tmp_path):
    params = default_parameter_file()
    setup = MissionSetup.from_file(params)
    path = write_fleet_file(setup, params, tmp_path / "fleet.yaml", 3, mission_terrain(setup))
    poses = np.reshape(load_node_parameters(path, "/fleet_sim")["fleet.start_poses"], (3, 3))
    pilot = pilot_survey(Workspace.from_config(setup.workspace), np.random.default_rng(0),
                         setup.pilot)  # the default bezier pilot: the same for every seed
    namespaces = vehicle_namespaces(3)
    for k, namespace in enumerate(namespaces):
        planner = load_node_parameters(path, f"{namespace}/planner")
        assert planner["fleet.vehicle_index"] == k and planner["fleet.vehicles"] == 3
        assert planner["coordination.enabled"] is True
        assert planner["fleet.teammates"] == [f"{other}/fleet/plan" for other in namespaces
                                              if other != namespace]
        share = pilot_share(pilot, k, 3)
        np.testing.assert_allclose(poses[k, :2], share[0])
        heading = share[1] - share[0]
        assert abs(poses[k, 2] - np.arctan2(heading[1], heading[0])) < 1e-9
    # the shares' starts are the pilot's cut points: the vehicles start apart
    assert min(np.linalg.norm(poses[i, :2] - poses[j, :2]) for i in range(3)
               for j in range(i)) > 10.0


def test_a_distributed_fleet_talks_over_its_links(tmp_path):
    params = default_parameter_file()
    setup = MissionSetup.from_file(params)
    link = {"bandwidth": 100.0, "latency": 2.0, "loss_probability": 0.1, "slot_length": 1.0}
    path = write_fleet_file(setup, params, tmp_path / "fleet.yaml", 3, mission_terrain(setup),
                            {"mapper": {"journal.path": str(tmp_path / "mapper.journal")}},
                            FleetOptions(central=False, link=link))
    nodes = {node.fqn: node for node in fleet_nodes(path, 3, central=False)}
    channel = nodes["/fleet_channel"].parameter_values()
    assert channel["vehicles"] == vehicle_namespaces(3) and channel["link.slots"] == 3
    assert {name: channel[f"link.{name}"] for name in link} == link
    journals = set()
    for k, namespace in enumerate(vehicle_namespaces(3)):
        own = nodes[f"{namespace}/fleet_link"].parameter_values()
        assert own["vehicle_id"] == k and own["link.slot"] == k and own["link.slots"] == 3
        assert own["link.bandwidth"] == 100.0 and own["use_sim_time"] is True
        planner = nodes[f"{namespace}/planner"].parameter_values()
        assert planner["mapper_name"] == "mapper"  # its own: /auv<k>/mapper
        assert planner["fleet.teammates"] == [f"{namespace}/fleet/teammate_{j}/plan"
                                              for j in range(3) if j != k]
        # its own soundings, its share of the fleet's budget: a thin link does not stretch it
        assert planner["mission.samples_counted"] == "own"
        assert planner["mission.max_samples"] == setup.mission_control.max_samples
        journals.add(nodes[f"{namespace}/mapper"].parameter_values()["journal.path"])
    assert len(journals) == 3  # no two mappers write one journal


def test_a_recorded_and_viewed_fleet_is_the_launch_file_s_graph(tmp_path):
    """``record:=true``: the recorder, and the fleet's clock held until it subscribes to every
    vehicle's sensors; ``view:=true``: the viewer in the root namespace on the fleet's map
    (central) or the first vehicle's own (distributed), its vehicles from the fleet's file."""
    params = default_parameter_file()
    for central, map_topic in ((True, "/fleet/map"), (False, "/auv0/map")):
        nodes = fleet_nodes(params, 3, central, record=True, view=True)
        assert nodes[:2] == expand(launch_file("fleet.launch.xml"), {
            "params_file": str(params), "sim": "true", "central_map": str(central).lower(),
            "record": "true", "view": "true"})[:2]
        by_name = {node.fqn: node for node in nodes}
        assert by_name["/fleet_sim"].parameter_values()["hold_for"] == ["sensor_ingest",
                                                                       "recorder_intake"]
        assert "/recorder" in by_name
        remaps = dict(by_name["/viewer"].remaps)
        assert remaps["map"] == map_topic and remaps["samples"] == map_topic[:-3] + "samples"
    assert "/viewer" not in {node.fqn for node in fleet_nodes(params, 2)}
    setup = MissionSetup.from_file(params)
    path = write_fleet_file(setup, params, tmp_path / "fleet.yaml", 3, mission_terrain(setup))
    assert load_node_parameters(path, "/viewer")["vehicles"] == vehicle_namespaces(3)


def test_the_fleet_s_recorder_records_every_vehicle_s_topics_and_the_fleet_s():
    assert recorded_topics(["odom", "map", "/clock"], 2) == [
        "/clock", "/auv0/odom", "/auv1/odom", "/fleet/odom", "/auv0/map", "/auv1/map",
        "/fleet/map", "/auv0/fleet/plan", "/auv1/fleet/plan"]
    assert recorded_topics(["samples"], 2, central=False) == [
        "/auv0/samples", "/auv1/samples", "/auv0/fleet/plan", "/auv0/fleet/out",
        "/auv0/fleet/in", "/auv0/fleet/teammate_1/plan", "/auv1/fleet/plan", "/auv1/fleet/out",
        "/auv1/fleet/in", "/auv1/fleet/teammate_0/plan"]
