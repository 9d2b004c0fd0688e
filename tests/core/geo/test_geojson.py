"""A lon/lat GeoJSON workspace becomes the map-metre workspace poam_ros.workspace takes."""

import json
import math

import numpy as np
import pytest
from affine import Affine
from geo_data import meridian_radius, prime_vertical_radius, write_geotiff

from poam_ros.geo.geojson import read_survey_area, resolve_workspace
from poam_ros.geo.georeference import GeoError, GeoReference
from poam_ros.geo.raster import load_geo_terrain
from poam_ros.params import ConfigError
from poam_ros.workspace import Workspace, WorkspaceConfig

ANCHOR = GeoReference.local(47.5, -123.5)
# A 0.02° square about the anchor with a 0.002° square hole, and a no-go triangle.
OUTER = [[-123.51, 47.49], [-123.49, 47.49], [-123.49, 47.51], [-123.51, 47.51],
         [-123.51, 47.49]]
HOLE = [[-123.501, 47.499], [-123.499, 47.499], [-123.499, 47.501], [-123.501, 47.501],
        [-123.501, 47.499]]
NO_GO = [[-123.505, 47.505], [-123.503, 47.505], [-123.504, 47.507], [-123.505, 47.505]]


def _write(path, document):
    path.write_text(json.dumps(document))
    return path


def _feature(geometry_type, coordinates, role=None):
    properties = {} if role is None else {"role": role}
    return {"type": "Feature", "properties": properties,
            "geometry": {"type": geometry_type, "coordinates": coordinates}}


def _collection(*features):
    return {"type": "FeatureCollection", "features": list(features)}


def test_workspace_hole_and_no_go_zone_in_map_metres(tmp_path):
    path = _write(tmp_path / "area.geojson", _collection(
        _feature("Polygon", [OUTER, HOLE], "workspace"),
        _feature("MultiPolygon", [[NO_GO]], "no_go")))
    config = read_survey_area(path).workspace_config(ANCHOR)
    assert isinstance(config, WorkspaceConfig)
    lon, lat = np.array(OUTER[:-1]).T
    np.testing.assert_allclose(np.reshape(config.vertices, (-1, 2)),
                               np.column_stack(ANCHOR.to_map(lon, lat)))
    assert config.no_go_vertex_counts == [4, 3]  # the hole, then the triangle
    # The 0.02° square is M(φ) · 0.02° tall and about N cos φ · 0.02° wide; the hole (a
    # hundredth of it) and the triangle (half a hundredth) are cut out.
    workspace = read_survey_area(path).workspace(ANCHOR)
    height = meridian_radius(47.5) * math.radians(0.02)
    width = prime_vertical_radius(47.5) * math.cos(math.radians(47.5)) * math.radians(0.02)
    xmin, xmax, ymin, ymax = workspace.bounds
    assert ymax - ymin == pytest.approx(height, rel=1e-4)
    assert xmax - xmin == pytest.approx(width, rel=1e-3)
    assert not workspace.contains(np.array([[0.0, 0.0]]))[0]  # in the hole
    assert workspace.area == pytest.approx(width * height * 0.985, rel=1e-3)


def test_a_lone_polygon_is_the_workspace(tmp_path):
    bare = _write(tmp_path / "bare.geojson", {"type": "Polygon", "coordinates": [OUTER]})
    area = read_survey_area(bare)
    assert area.no_go == () and len(area.outline.exterior.coords) == 5
    single = _write(tmp_path / "feature.geojson", _feature("Polygon", [OUTER]))
    assert read_survey_area(single).outline.equals(area.outline)


def test_the_area_cuts_the_terrain(tmp_path):
    raster = write_geotiff(tmp_path / "depth.tif", np.full((100, 100), -300.0), "EPSG:4326",
                           Affine(0.01, 0, -124.0, 0, -0.01, 48.0))
    area = read_survey_area(_write(tmp_path / "area.geojson", _feature("Polygon", [OUTER])))
    terrain = load_geo_terrain(raster, ANCHOR, area.outline).terrain
    workspace = area.workspace(ANCHOR)
    xmin, xmax, ymin, ymax = workspace.bounds
    txmin, txmax, tymin, tymax = terrain.extent
    assert txmin <= xmin and txmax >= xmax and tymin <= ymin and tymax >= ymax
    far = read_survey_area(_write(tmp_path / "far.geojson", _feature(
        "Polygon", [[[-124.01, 47.5], [-123.99, 47.5], [-124.0, 47.52], [-124.01, 47.5]]])))
    with pytest.raises(GeoError, match="depth.tif: survey area .* lies partly outside the "
                                       "raster"):
        load_geo_terrain(raster, ANCHOR, far.outline)


@pytest.mark.parametrize("document, message", [
    (_feature("Polygon", [[[-123.5, 47.5], [-123.4, 91.0], [-123.4, 47.5], [-123.5, 47.5]]]),
     r"bad.geojson: latitude 91.0 is out of range \[-90, 90\]"),
    (_feature("Polygon", [[[-190.0, 47.5], [-123.4, 47.6], [-123.4, 47.5], [-190.0, 47.5]]]),
     r"bad.geojson: longitude -190.0 is out of range"),
    (dict(_feature("Polygon", [OUTER]), crs={"type": "name",
                                            "properties": {"name": "EPSG:32610"}}),
     "bad.geojson: GeoJSON coordinates must be lon/lat WGS 84 .* 'EPSG:32610'"),
    (_collection(_feature("Polygon", [OUTER]), _feature("Polygon", [NO_GO])),
     "bad.geojson: 2 features; say which is the workspace"),
    (_collection(_feature("Polygon", [NO_GO], "no_go")),
     "bad.geojson: needs exactly one workspace Polygon, got none"),
    (_feature("Polygon", [OUTER], "harbour"), "bad.geojson: properties.role must be one of"),
    (_feature("Point", [-123.5, 47.5]), "bad.geojson: .* are polygons, got Point"),
    (_collection(), "bad.geojson: holds no features"),
])
def test_bad_files_are_named(tmp_path, document, message):
    with pytest.raises(GeoError, match=message):
        read_survey_area(_write(tmp_path / "bad.geojson", document))


def test_unreadable_and_degenerate_files(tmp_path):
    broken = tmp_path / "broken.geojson"
    broken.write_text("{not json")
    with pytest.raises(GeoError, match="broken.geojson: unreadable GeoJSON"):
        read_survey_area(broken)
    bowtie = [[-123.51, 47.49], [-123.49, 47.51], [-123.49, 47.49], [-123.51, 47.51],
              [-123.51, 47.49]]
    area = read_survey_area(_write(tmp_path / "bowtie.geojson", _feature("Polygon", [bowtie])))
    with pytest.raises(GeoError, match="bowtie.geojson: workspace polygon is degenerate"):
        area.workspace(ANCHOR)


def test_a_workspace_config_naming_a_file_is_resolved_with_the_anchor(tmp_path):
    path = _write(tmp_path / "area.geojson", _collection(
        _feature("Polygon", [OUTER], "workspace"), _feature("Polygon", [NO_GO], "no_go")))
    resolved = resolve_workspace(WorkspaceConfig(geojson=str(path)), ANCHOR)
    assert resolved == read_survey_area(path).workspace_config(ANCHOR)
    assert resolved.geojson == "" and resolved.no_go_vertex_counts == [3]
    plain = WorkspaceConfig()
    assert resolve_workspace(plain, None) is plain
    with pytest.raises(ConfigError, match="area.geojson' is in latitude/longitude and was "
                                          "not converted"):
        Workspace.from_config(WorkspaceConfig(geojson=str(path)))


def test_a_file_without_an_anchor_or_a_bad_file_is_one_config_error(tmp_path):
    path = _write(tmp_path / "area.geojson", _feature("Polygon", [OUTER]))
    with pytest.raises(ConfigError, match="area.geojson' is in latitude/longitude: set the "
                                          "map frame's geodetic anchor"):
        resolve_workspace(WorkspaceConfig(geojson=str(path)), None)
    with pytest.raises(ConfigError, match="workspace.geojson: .*missing.geojson: unreadable"):
        resolve_workspace(WorkspaceConfig(geojson=str(tmp_path / "missing.geojson")), ANCHOR)
