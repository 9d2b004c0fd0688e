"""The area a robot may sample: a polygon in the ``map`` frame, minus optional no-go zones.

All coordinates are metres in the ``map`` frame; point sets are arrays of shape (N, 2)
holding (x, y) rows. The *free area* is the workspace polygon (with any holes it has)
minus the union of the no-go zones; every query below is about the free area.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import shapely
from shapely.geometry import Polygon
from shapely.validation import explain_validity

from poam_ros.params import ConfigError, Params, param

# Points this close to the free area count as inside. Shapely computes boundary
# intersections and nearest points in floating point, so a point it puts on an edge can
# land a rounding error outside; 1 nm is far below any positioning accuracy.
BOUNDARY_TOLERANCE = 1e-9  # m

# Rejection sampling gives up below this ratio of free area to bounding-box area: the
# expected number of draws per accepted point would exceed a million.
_MIN_ACCEPTANCE = 1e-6
_MAX_SAMPLING_ROUNDS = 100


class Extent(NamedTuple):
    """An axis-aligned box in metres, in the task-extent order of the paper."""

    xmin: float
    xmax: float
    ymin: float
    ymax: float


@dataclass
class WorkspaceConfig(Params):
    """The workspace as flat float lists, so that ROS parameters and YAML can carry it."""

    vertices: list = param([-30.0, -30.0, 30.0, -30.0, 30.0, 30.0, -30.0, 30.0],
                           "outer boundary vertices x0, y0, x1, y1, ... in the map frame "
                           "(at least 3 vertices)", unit="m")
    no_go_vertices: list = param([], "vertices of all no-go zones, concatenated in the "
                                     "order of no_go_vertex_counts: x0, y0, x1, y1, ...",
                                 unit="m")
    no_go_vertex_counts: list[int] = param([], "number of vertices of each no-go zone")
    geojson: str = param("", "a GeoJSON file (RFC 7946, WGS 84 lon/lat) of the workspace and "
                             "its no-go zones, converted into the map frame with the geodetic "
                             "anchor geo.*; replaces vertices and the no-go lists; empty: "
                             "those lists, in map metres")

    def validate(self) -> None:
        self.vertices = _float_list("WorkspaceConfig.vertices", self.vertices)
        self.no_go_vertices = _float_list("WorkspaceConfig.no_go_vertices",
                                          self.no_go_vertices)
        if len(self.vertices) < 6:
            raise ConfigError("WorkspaceConfig.vertices needs at least 3 (x, y) pairs, "
                              f"got {len(self.vertices)} numbers")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 3
               for n in self.no_go_vertex_counts):
            raise ConfigError("WorkspaceConfig.no_go_vertex_counts must hold integers >= 3, "
                              f"got {self.no_go_vertex_counts!r}")
        expected = 2 * sum(self.no_go_vertex_counts)
        if len(self.no_go_vertices) != expected:
            raise ConfigError(f"WorkspaceConfig.no_go_vertices has {len(self.no_go_vertices)} "
                              f"numbers but no_go_vertex_counts {self.no_go_vertex_counts} "
                              f"asks for {expected}")
        self._validate_geometry()

    def _validate_geometry(self) -> None:
        """The polygons themselves (zero area, self-intersecting, collinear, covered by the
        no-go zones) are refused here, so that every reader of the parameters (a file, a node
        at start, a parameter change) refuses them alike instead of meeting them later."""
        zones = self.no_go_zones()
        try:
            _valid_polygon(_pairs(self.vertices, "vertices"), "WorkspaceConfig.vertices")
            for i, zone in enumerate(zones):
                _valid_polygon(_pairs(zone, "zone"),
                               f"WorkspaceConfig.no_go_vertices (no-go zone {i})")
        except ValueError as error:
            raise ConfigError(str(error)) from None
        try:
            Workspace.from_vertices(self.vertices, zones)
        except ValueError as error:  # the zones leave nothing
            raise ConfigError(f"WorkspaceConfig.no_go_vertices: {error}") from None

    def no_go_zones(self) -> list[list[float]]:
        """The no-go zones as one flat [x0, y0, x1, y1, ...] list each."""
        ends = 2 * np.cumsum(self.no_go_vertex_counts, dtype=int)
        starts = np.concatenate([[0], ends[:-1]])
        return [self.no_go_vertices[s:e] for s, e in zip(starts, ends)]


def _float_list(where: str, values: list) -> list[float]:
    if len(values) % 2:
        raise ConfigError(f"{where} must hold (x, y) pairs, got an odd count {len(values)}")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
           for v in values):
        raise ConfigError(f"{where} must hold finite numbers, got {values!r}")
    return [float(v) for v in values]


class Workspace:
    """A polygonal sampling area with optional no-go zones (obstacles, exclusion areas).

    ``polygon`` and each no-go zone are a shapely ``Polygon`` (holes allowed) or an array
    of vertices (K, 2), K >= 3. Points on the boundary of the free area count as inside.
    Invalid geometry (fewer than 3 distinct vertices, self-intersection, zero area,
    non-finite coordinates, no-go zones covering the whole polygon) raises ``ValueError``.
    """

    def __init__(self, polygon: Polygon | np.ndarray,
                 no_go: Sequence[Polygon | np.ndarray] = ()) -> None:
        outer = _valid_polygon(polygon, "workspace polygon")
        self._no_go = tuple(_valid_polygon(zone, f"no-go zone {i}")
                            for i, zone in enumerate(no_go))
        free = outer
        if self._no_go:
            free = free.difference(shapely.union_all(self._no_go))
        if free.is_empty or free.area <= 1e-12 * outer.area:
            raise ValueError("the no-go zones cover the whole workspace polygon")
        shapely.prepare(free)
        self._free = free
        xmin, ymin, xmax, ymax = free.bounds
        self._bounds = Extent(float(xmin), float(xmax), float(ymin), float(ymax))

    def __repr__(self) -> str:
        return (f"Workspace(bounds={tuple(self._bounds)}, area={self.area:.6g} m^2, "
                f"no_go_zones={len(self._no_go)})")

    @classmethod
    def from_extent(cls, xmin: float, xmax: float, ymin: float, ymax: float) -> Workspace:
        """An axis-aligned rectangle; ``xmin < xmax`` and ``ymin < ymax`` in metres."""
        if not (xmin < xmax and ymin < ymax):
            raise ValueError(f"extent needs xmin < xmax and ymin < ymax, got "
                             f"[{xmin}, {xmax}, {ymin}, {ymax}]")
        return cls(shapely.box(xmin, ymin, xmax, ymax))

    @classmethod
    def from_vertices(cls, vertices: Sequence[float],
                      no_go: Sequence[Sequence[float]] = ()) -> Workspace:
        """From flat lists [x0, y0, x1, y1, ...]: the boundary and one list per no-go zone."""
        return cls(_pairs(vertices, "workspace vertices"),
                   [_pairs(zone, f"no-go zone {i}") for i, zone in enumerate(no_go)])

    @classmethod
    def from_config(cls, config: WorkspaceConfig) -> Workspace:
        """The workspace of ``config``'s vertices; a ``geojson`` file must have been read
        into them first (:func:`poam_ros.geo.resolve_workspace`, which needs the anchor)."""
        if config.geojson:
            raise ConfigError(f"workspace.geojson {config.geojson!r} is in latitude/longitude "
                              f"and was not converted into the map frame: the component "
                              f"reading it needs the map's geodetic anchor (geo.*)")
        return cls.from_vertices(config.vertices, config.no_go_zones())

    @property
    def free_area(self):
        """The sampleable region: a shapely ``Polygon`` or ``MultiPolygon``."""
        return self._free

    @property
    def bounds(self) -> Extent:
        """Bounding box of the free area, (xmin, xmax, ymin, ymax) in metres."""
        return self._bounds

    @property
    def area(self) -> float:
        """Free area in square metres."""
        return float(self._free.area)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Which points (N, 2) lie in the free area, boundary included: bool (N,)."""
        xy = _points(xy)
        inside = shapely.intersects_xy(self._free, xy[:, 0], xy[:, 1])
        near = ~inside & np.isfinite(xy).all(axis=1)
        if near.any():
            distance = shapely.distance(self._free, shapely.points(xy[near]))
            inside[near] = distance <= BOUNDARY_TOLERANCE
        return inside

    def check(self, xy: np.ndarray, what: str) -> None:
        """Raise ``ValueError`` naming the first point of ``xy`` (2,) or (N, 2) outside.

        ``what`` names the points in the message, e.g. ``"goal"``.
        """
        single = np.ndim(xy) == 1
        points = _points(xy)
        outside = np.flatnonzero(~self.contains(points))
        if outside.size == 0:
            return
        i = outside[0]
        x, y = (round(float(v), 6) for v in points[i])
        label = what if single else f"{what}[{i}]"
        problem = "is not finite" if not np.isfinite(points[i]).all() else \
            "is outside the workspace"
        extra = "" if single or outside.size == 1 else \
            f" ({outside.size} of {len(points)} points are)"
        raise ValueError(f"{label} ({x}, {y}) {problem}{extra}")

    def sample_uniform(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points (n, 2) drawn uniformly from the free area.

        Rejection sampling from the bounding box, in vectorised batches sized by the
        acceptance ratio (free area / box area).
        """
        if n < 0:
            raise ValueError(f"number of samples must be >= 0, got {n}")
        xmin, xmax, ymin, ymax = self._bounds
        acceptance = self.area / ((xmax - xmin) * (ymax - ymin))
        if acceptance < _MIN_ACCEPTANCE:
            raise ValueError(f"the free area ({self.area:.3g} m^2) is too small a fraction of "
                             "its bounding box to sample from")
        batches, have = [], 0
        for _ in range(_MAX_SAMPLING_ROUNDS):
            if have >= n:
                break
            draws = int(math.ceil(1.2 * (n - have) / acceptance)) + 16
            xy = rng.uniform((xmin, ymin), (xmax, ymax), size=(draws, 2))
            xy = xy[self.contains(xy)]
            batches.append(xy)
            have += len(xy)
        if have < n:
            raise ValueError(f"rejection sampling found only {have} of {n} points in "
                             f"{_MAX_SAMPLING_ROUNDS} rounds")
        return np.concatenate(batches)[:n] if batches else np.empty((0, 2))

    def nearest_inside(self, xy: np.ndarray) -> np.ndarray:
        """Points (N, 2) with each one outside the free area moved to its nearest point in it."""
        xy = _points(xy).copy()
        outside = ~self.contains(xy)
        if outside.any():
            lines = shapely.shortest_line(self._free, shapely.points(xy[outside]))
            # Each shortest line runs from the free area to the point: keep its start.
            xy[outside] = shapely.get_coordinates(lines)[0::2]
        return xy


def _points(xy: np.ndarray) -> np.ndarray:
    xy = np.asarray(xy, dtype=float)
    if xy.ndim == 1:
        xy = xy[None, :]
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must have shape (N, 2) or (2,), got {np.shape(xy)}")
    return xy


def _pairs(flat: Sequence[float], what: str) -> np.ndarray:
    flat = np.asarray(flat, dtype=float)
    if flat.ndim != 1 or flat.size % 2:
        raise ValueError(f"{what} must be a flat list x0, y0, x1, y1, ..., got {flat.size} "
                         "numbers")
    return flat.reshape(-1, 2)


def _valid_polygon(shape: Polygon | np.ndarray, what: str) -> Polygon:
    if not isinstance(shape, Polygon):
        vertices = np.asarray(shape, dtype=float)
        if vertices.ndim != 2 or vertices.shape[1] != 2:
            raise ValueError(f"{what} must be a shapely Polygon or vertices (K, 2), got "
                             f"shape {vertices.shape}")
        if len(np.unique(vertices, axis=0)) < 3:
            raise ValueError(f"{what} needs at least 3 distinct vertices, got "
                             f"{len(np.unique(vertices, axis=0))}")
        if not np.isfinite(vertices).all():
            raise ValueError(f"{what} has non-finite vertices")
        shape = Polygon(vertices)
    if shape.is_empty or not np.isfinite(shapely.get_coordinates(shape)).all():
        raise ValueError(f"{what} is empty or has non-finite vertices")
    if not shape.is_valid:
        problem = "is degenerate (zero area)" if shape.area <= 0.0 else "is invalid"
        raise ValueError(f"{what} {problem}: {explain_validity(shape)}")
    return shape
