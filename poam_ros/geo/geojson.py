"""A workspace polygon and its no-go zones from a GeoJSON file in WGS 84 lon/lat.

GeoJSON (RFC 7946) coordinates are [longitude, latitude] in WGS 84 degrees. The file holds
a FeatureCollection, one Feature or one bare geometry. With one polygon and nothing else,
that polygon is the workspace; otherwise each feature says what it is in
``properties.role``: ``"workspace"`` (exactly one Polygon) or ``"no_go"`` (a Polygon or a
MultiPolygon). Holes in the workspace polygon are no-go zones too. Vertices are projected
into the map frame one by one and edges stay straight in metres. An edge along a parallel
of latitude φ is curved there: it bows out by about L² tan φ / (8 R) over a length L
(R = 6371 km): 0.5 m for 5 km at 47°. Add vertices along such an edge where that matters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import shapely
from shapely.geometry import Polygon, shape

from poam_ros.geo.georeference import GeoError, GeoReference, check_lonlat
from poam_ros.params import ConfigError
from poam_ros.workspace import Workspace, WorkspaceConfig

ROLES = ("workspace", "no_go")
# A legacy (2008) GeoJSON "crs" member may only restate RFC 7946's lon/lat WGS 84.
LONLAT_CRS_NAMES = ("urn:ogc:def:crs:OGC:1.3:CRS84", "urn:ogc:def:crs:OGC::CRS84",
                    "EPSG:4326", "urn:ogc:def:crs:EPSG::4326")


@dataclass(frozen=True)
class SurveyArea:
    """The workspace ``outline`` (lon/lat Polygon, holes allowed) and ``no_go`` zones
    (lon/lat Polygons), read from ``source``."""

    outline: Polygon
    no_go: tuple[Polygon, ...]
    source: str

    def workspace_config(self, georeference: GeoReference) -> WorkspaceConfig:
        """The area in map metres as :class:`WorkspaceConfig` flat lists (holes → no-go);
        check it with :meth:`workspace` first, whose errors name the file."""
        boundary, no_go = self._map_rings(georeference)
        return WorkspaceConfig(vertices=boundary.ravel().tolist(),
                               no_go_vertices=[v for zone in no_go for v in zone.ravel()],
                               no_go_vertex_counts=[len(zone) for zone in no_go])

    def workspace(self, georeference: GeoReference) -> Workspace:
        """The area as a :class:`Workspace` in map metres; :class:`GeoError` naming the file
        for a polygon that is degenerate or self-intersecting there."""
        boundary, no_go = self._map_rings(georeference)
        try:
            return Workspace(boundary, no_go)
        except ValueError as exc:
            raise GeoError(f"{self.source}: {exc}") from exc

    def _map_rings(self, georeference: GeoReference) -> tuple[np.ndarray, list[np.ndarray]]:
        """The outline's vertices (K, 2) and each no-go zone's (holes first), map metres."""
        zones = [Polygon(ring) for ring in self.outline.interiors] + list(self.no_go)
        return (self._map_vertices(self.outline.exterior, georeference),
                [self._map_vertices(zone.exterior, georeference) for zone in zones])

    def _map_vertices(self, ring, georeference: GeoReference) -> np.ndarray:
        """(K, 2) map metres of a ring's vertices, without the closing repeat."""
        lon, lat = np.asarray(ring.coords)[:-1, :2].T
        try:
            return np.column_stack(georeference.to_map(lon, lat))
        except GeoError as exc:
            raise GeoError(f"{self.source}: {exc}") from exc


def resolve_workspace(config: WorkspaceConfig, georeference: GeoReference | None
                      ) -> WorkspaceConfig:
    """``config`` with its ``geojson`` file read into map-metre vertices and no-go zones
    (and ``geojson`` cleared, so that whoever is handed it needs no anchor); ``config``
    itself when it names no file. ``~`` is expanded; a relative path is taken from the
    working directory.

    Raises:
        ConfigError: naming the file, when it is bad (see :func:`read_survey_area`) or
            there is no anchor (``georeference`` None) to place its latitudes and
            longitudes.
    """
    if not config.geojson:
        return config
    path = Path(config.geojson).expanduser()
    if georeference is None:
        raise ConfigError(f"workspace.geojson {str(path)!r} is in latitude/longitude: set "
                          f"the map frame's geodetic anchor (geo.anchor latlon or projected) "
                          f"to place it, or give the workspace in map metres (vertices)")
    try:
        area = read_survey_area(path)
        area.workspace(georeference)  # a polygon that is degenerate in metres is refused now
        return area.workspace_config(georeference)
    except GeoError as error:
        raise ConfigError(f"workspace.geojson: {error}") from error


def read_survey_area(path) -> SurveyArea:
    """The workspace and no-go zones of the GeoJSON file at ``path`` (see module docstring).

    Raises:
        GeoError: naming the file: unreadable JSON, a CRS other than lon/lat WGS 84, a
            geometry that is not a polygon, no or several workspaces, coordinates out of
            range.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise GeoError(f"{path}: unreadable GeoJSON ({exc})") from exc
    if not isinstance(document, dict):
        raise GeoError(f"{path}: a GeoJSON document is a JSON object, got "
                       f"{type(document).__name__}")
    _check_crs(document, path)
    features = _features(document, path)
    roles = [_role(feature, path) for feature in features]
    if roles == [None]:
        roles = ["workspace"]
    elif None in roles:
        raise GeoError(f"{path}: {len(features)} features; say which is the workspace and "
                       f"which are no-go zones with properties.role ({' or '.join(ROLES)})")
    outlines = [_geometry(f, path) for f, role in zip(features, roles) if role == "workspace"]
    if len(outlines) != 1 or outlines[0].geom_type != "Polygon":
        raise GeoError(f"{path}: needs exactly one workspace Polygon, got "
                       f"{[g.geom_type for g in outlines] or 'none'}")
    no_go = [part for f, role in zip(features, roles) if role == "no_go"
             for part in shapely.get_parts(_geometry(f, path))]
    return SurveyArea(outlines[0], tuple(no_go), str(path))


def _check_crs(document: dict, path: Path) -> None:
    name = (document.get("crs") or {}).get("properties", {}).get("name")
    if "crs" in document and name not in LONLAT_CRS_NAMES:
        raise GeoError(f"{path}: GeoJSON coordinates must be lon/lat WGS 84 (RFC 7946), but "
                       f"the file declares the CRS {name!r}")


def _features(document: dict, path: Path) -> list[dict]:
    kind = document.get("type")
    if kind == "FeatureCollection":
        features = document.get("features") or []
    elif kind == "Feature":
        features = [document]
    else:
        features = [{"type": "Feature", "geometry": document, "properties": {}}]
    if not features:
        raise GeoError(f"{path}: holds no features")
    return features


def _role(feature: dict, path: Path) -> str | None:
    role = (feature.get("properties") or {}).get("role")
    if role is not None and role not in ROLES:
        raise GeoError(f"{path}: properties.role must be one of {list(ROLES)}, got {role!r}")
    return role


def _geometry(feature: dict, path: Path):
    try:
        geometry = shape(feature.get("geometry") or {})
    except (ValueError, TypeError, AttributeError, KeyError, IndexError,
            shapely.errors.ShapelyError) as exc:
        raise GeoError(f"{path}: not a GeoJSON geometry ({exc!r})") from exc
    if geometry.is_empty or geometry.geom_type not in ("Polygon", "MultiPolygon"):
        raise GeoError(f"{path}: workspace and no-go zones are polygons, got "
                       f"{geometry.geom_type}")
    check_lonlat(*shapely.get_coordinates(geometry).T, str(path))
    return geometry
