"""MissionSetup loads every node's section of the parameter file and says what each node gets."""

import math
import textwrap

import pytest

from poam_ros.mapping.map_grid import MapGridConfig
from poam_ros.params import ConfigError
from poam_ros.params.files import load_node_parameters
from poam_ros.params.node_settings import MapperSettings, PlannerSettings
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file, mission_seeds


def test_the_package_parameter_file_loads():
    setup = MissionSetup.from_file(default_parameter_file())
    assert isinstance(setup.mapper_node, MapperSettings)
    assert isinstance(setup.planner_node, PlannerSettings)
    assert isinstance(setup.grid, MapGridConfig)


def test_node_settings_load_from_their_sections(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent("""
        mapper:
          ros__parameters:
            map_frame: world
            grid: {resolution: 0.5}
        planner:
          ros__parameters:
            mode: realtime
            goal_radius: 1.5
    """))
    setup = MissionSetup.from_file(path)
    assert setup.mapper_node.map_frame == "world" and setup.grid.resolution == 0.5
    assert setup.planner_node.mode == "realtime" and setup.planner_node.goal_radius == 1.5


def test_a_setup_written_to_a_file_reads_back_as_it_is(tmp_path):
    """to_file over a base file: the setup's values win, the base keeps what the setup does
    not hold (the simulator's clock), and an empty list clears the base's list."""
    base = tmp_path / "base.yaml"
    base.write_text(textwrap.dedent("""
        simulated_auv:
          ros__parameters:
            time_scale: 7.0
            vehicle: {altitude: 3.0}
        mapper:
          ros__parameters:
            grid: {extent: [0.0, 1.0, 0.0, 1.0], resolution: 0.5}
    """))
    setup = MissionSetup()
    setup.vehicle = setup.vehicle.replace(vertical_mode="altitude", altitude=50.0)
    setup.grid = setup.grid.replace(resolution=50.0)
    setup.mission = setup.mission.replace(seed=9)
    setup.mission_control = setup.mission_control.replace(max_samples=123)
    setup.geo = setup.geo.replace(anchor="latlon", origin_latitude=47.5,
                                  origin_longitude=-123.5)
    path = setup.to_file(tmp_path / "setup.yaml", base=base)
    assert MissionSetup.from_file(path).to_dict() == setup.to_dict()
    assert load_node_parameters(path, "simulated_auv")["time_scale"] == 7.0
    assert "grid.extent" not in load_node_parameters(path, "mapper")
    assert MissionSetup.from_file(setup.to_file(tmp_path / "alone.yaml")).to_dict() == \
        setup.to_dict()


def test_unknown_node_settings_are_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("planner:\n  ros__parameters:\n    goal_raduis: 1.0\n")
    with pytest.raises(ConfigError, match="goal_raduis"):
        MissionSetup.from_file(path)


def test_a_method_family_s_options_load_from_their_group_and_its_flat_names_are_refused(
        tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      method: poam-vips\n"
                    "      vips: {delta: 0.005}\n")
    setup = MissionSetup.from_file(path)
    assert setup.mapping.vips.delta == 0.005
    assert MissionSetup.from_file(setup.to_file(tmp_path / "again.yaml")) == setup
    assert setup.node_parameters("mapper")["mapping.vips.delta"] == 0.005
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      vips_delta: 0.005\n")
    with pytest.raises(ConfigError, match=r"node /mapper: unknown parameter\(s\) "
                                          r"mapping.vips_delta \(now mapping.vips.delta\)"):
        MissionSetup.from_file(path)


def test_node_parameters_carry_the_derived_seeds_and_the_shared_workspace():
    setup = MissionSetup()
    setup.mission.seed = 7
    setup.workspace.vertices = [0.0, 0.0, 10.0, 0.0, 10.0, 10.0]
    seeds = mission_seeds(7)
    mapper, planner = setup.node_parameters("mapper"), setup.node_parameters("planner")
    assert mapper["mapping.seed"] == seeds["model"] and planner["seed"] == seeds["planner"]
    assert mapper["workspace.vertices"] == planner["workspace.vertices"] \
        == [0.0, 0.0, 10.0, 0.0, 10.0, 10.0]
    assert "workspace.no_go_vertices" not in planner  # empty lists are left out
    assert mapper["grid.resolution"] == 2.0 and planner["mode"] == "lockstep"
    vehicle = setup.node_parameters("simulated_auv")
    assert vehicle["seed"] == seeds["simulator"]
    assert vehicle["start_pose"] == [10.0, 0.0, math.pi]  # Mission's: lower right, facing west
    with pytest.raises(ConfigError, match="unknown node"):
        setup.node_parameters("mapper_typo")


def test_the_anchor_loads_from_the_mapper_s_section_and_reaches_the_geo_nodes(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent("""
        mapper:
          ros__parameters:
            geo: {anchor: latlon, origin_latitude: 47.5, origin_longitude: -123.5,
                  crs: UTM 10N, vertical_reference: chart datum}
    """))
    setup = MissionSetup.from_file(path)
    assert (setup.geo.anchor, setup.geo.crs) == ("latlon", "UTM 10N")
    geo = {"geo.anchor": "latlon", "geo.origin_latitude": 47.5,
           "geo.origin_longitude": -123.5, "geo.crs": "UTM 10N", "geo.origin_easting": 0.0,
           "geo.origin_northing": 0.0, "geo.vertical_reference": "chart datum"}
    assert "mapper" in MissionSetup.GEO_NODES
    for node in MissionSetup.NODES:
        parameters = setup.node_parameters(node)
        handed = {name: value for name, value in parameters.items()
                  if name.startswith("geo.")}
        assert handed == (geo if node in MissionSetup.GEO_NODES else {}), node
    assert "geo.anchor" not in MissionSetup().node_parameters("simulated_auv")
    assert MissionSetup().node_parameters("mapper")["geo.anchor"] == "none"


@pytest.mark.parametrize("geo, message", [
    ("{anchor: utm}", "GeoConfig.anchor must be one of ['none', 'latlon', 'projected']"),
    ("{anchor: projected, crs: EPSG:4326}", "GeoConfig.crs: CRS 'EPSG:4326'"),
    ("{anchor: projected, crs: 'UTM 61N'}", "UTM zones run from 1 to 60"),
    ("{origin_latitude: 47.5}", "origin_latitude apply to an anchor"),
    ("{anchor: latlon, origin_latitude: 91.0}", "origin_latitude must be <= 90"),
])
def test_a_bad_anchor_is_one_error_naming_the_file(tmp_path, geo, message):
    path = tmp_path / "params.yaml"
    path.write_text(f"mapper:\n  ros__parameters:\n    geo: {geo}\n")
    with pytest.raises(ConfigError, match="params.yaml: node /mapper under 'geo'") as error:
        MissionSetup.from_file(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_missing_or_broken_parameter_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="missing.yaml: no such parameter file"):
        MissionSetup.from_file(tmp_path / "missing.yaml")
    path = tmp_path / "broken.yaml"
    path.write_text("mapper:\n  ros__parameters: {mapping: [\n")
    with pytest.raises(ConfigError, match="broken.yaml: not a YAML parameter file: "):
        MissionSetup.from_file(path)


def test_a_geojson_workspace_reaches_every_node_as_map_metres(tmp_path):
    area = tmp_path / "area.geojson"
    area.write_text('{"type": "Polygon", "coordinates": [[[10.0, 59.0], [10.01, 59.0], '
                    '[10.01, 59.01], [10.0, 59.0]]]}')
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(f"""
        mapper:
          ros__parameters:
            geo: {{anchor: latlon, origin_latitude: 59.0, origin_longitude: 10.0}}
        planner:
          ros__parameters:
            workspace: {{geojson: {str(area)!r}}}
        """))
    setup = MissionSetup.from_file(path)
    assert setup.workspace.geojson == "" and len(setup.workspace.vertices) == 6
    assert setup.workspace.vertices[:2] == pytest.approx([0.0, 0.0], abs=1e-6)
    x, y = setup.workspace.vertices[2:4]  # 0.01° east along the parallel at 59° N
    assert x == pytest.approx(6.39e6 * math.cos(math.radians(59.0)) * math.radians(0.01),
                              rel=1e-3)
    assert y == pytest.approx(x ** 2 * math.tan(math.radians(59.0)) / (2 * 6.39e6), rel=1e-2)
    for node in ("planner", "mapper", "sensor_ingest"):
        parameters = setup.node_parameters(node)
        assert parameters["workspace.vertices"] == setup.workspace.vertices
        assert parameters["workspace.geojson"] == ""
    path.write_text(path.read_text().replace("anchor: latlon", "anchor: none").replace(
        ", origin_latitude: 59.0, origin_longitude: 10.0", ""))
    with pytest.raises(ConfigError, match="area.geojson' is in latitude/longitude: set"):
        MissionSetup.from_file(path)
