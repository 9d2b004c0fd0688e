"""The ``map`` frame's geodetic anchor: WGS 84 longitude/latitude ↔ map metres, via pyproj.

``map`` stays ENU (REP-103/105): x east, y north, metres. It is tied to the Earth in one
of two ways:

* **local**: a transverse Mercator projection on the WGS 84 ellipsoid whose central meridian
  and latitude of origin pass through the map origin (scale 1 there). Its scale grows as
  k ≈ 1 + x² / (2 R²): below 1 + 1e-5 within 25 km east or west of the origin; grid north
  is true north along the central meridian. The tangent plane of a survey area, with
  exact round trips.
* **projected**: a projected CRS in metres (a UTM zone, an EPSG code) whose coordinates are
  shifted so that ``origin`` (easting, northing) is the map origin:
  ``x = E - E0``, ``y = N - N0``. Grid north then differs from true north by the CRS's
  meridian convergence (up to about 3° at the edge of a UTM zone), as in robot_localization.

Heights are not transformed: the vertical reference (mean sea level, a chart datum, the
vehicle's depth reference) is a declared label that travels with the data into the products.
Tides and geoid models are out of scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyproj
from pyproj.crs import ProjectedCRS
from pyproj.crs.coordinate_operation import TransverseMercatorConversion
from pyproj.exceptions import CRSError

from poam_ros.params import ConfigError, Params, param

WGS84 = pyproj.CRS.from_epsg(4326)
ANCHORS = ("none", "latlon", "projected")
DEFAULT_VERTICAL_REFERENCE = "mean sea level"
_UTM = re.compile(r"\s*UTM\s*:?\s*(\d{1,2})\s*([NS])\s*", re.IGNORECASE)
_METRE = ("metre", "meter", "m")


class GeoError(ValueError):
    """A georeferencing input is invalid; the message names the value or the file."""


def projected_crs(text: str | pyproj.CRS) -> pyproj.CRS:
    """A projected CRS in metres from ``"UTM 10N"``, ``"EPSG:32610"`` or anything pyproj reads.

    Raises :class:`GeoError` for a CRS pyproj does not know, a geographic (degrees) or
    geocentric one, or one whose horizontal axes are not in metres.
    """
    if isinstance(text, pyproj.CRS):
        crs = text
    else:
        utm = _UTM.fullmatch(text)
        try:
            crs = pyproj.CRS.from_user_input(_utm_code(utm, text) if utm else text)
        except CRSError as exc:
            raise GeoError(f"CRS {text!r} is not known to pyproj ({exc})") from exc
    if not crs.is_projected:
        kind = "geographic (degrees)" if crs.is_geographic else "not a projected CRS"
        raise GeoError(f"CRS {text!r} ({crs.name}) is {kind}; the map frame needs a projected "
                       f"CRS in metres, e.g. 'UTM 10N' or 'EPSG:32610'")
    units = [axis.unit_name for axis in crs.axis_info[:2]]
    if any(unit not in _METRE for unit in units):
        raise GeoError(f"CRS {text!r} ({crs.name}) has axes in {units}; the map frame is in "
                       f"metres")
    return crs


def _utm_code(match: re.Match, text: str) -> str:
    zone, hemisphere = int(match.group(1)), match.group(2).upper()
    if not 1 <= zone <= 60:
        raise GeoError(f"CRS {text!r}: UTM zones run from 1 to 60, got {zone}")
    return f"EPSG:{(32600 if hemisphere == 'N' else 32700) + zone}"


def check_lonlat(lon, lat, what: str = "coordinates") -> tuple[np.ndarray, np.ndarray]:
    """``lon``, ``lat`` (degrees, any equal shapes) as float arrays; :class:`GeoError` naming
    the first one that is not finite or out of range (latitude [-90, 90], longitude
    [-180, 180])."""
    lon, lat = np.broadcast_arrays(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float))
    for values, name, limit in ((lat, "latitude", 90.0), (lon, "longitude", 180.0)):
        bad = ~(np.abs(values) <= limit)  # NaN compares False, so it is bad too
        if bad.any():
            first = float(values[bad].flat[0])
            raise GeoError(f"{what}: {name} {first!r} is out of range [-{limit:g}, {limit:g}] "
                           f"({int(bad.sum())} bad value(s))")
    return lon, lat


class GeoReference:
    """Where the map frame lies on the Earth: a projected CRS and the map origin in it.

    Args:
        crs: a projected CRS in metres (see :func:`projected_crs` for what is accepted).
        origin: (E0, N0), the map origin in ``crs`` coordinates [m].
        vertical_reference: what elevation 0 is (e.g. "mean sea level"); a label, carried
            into the products, not a transformation.
    """

    def __init__(self, crs: str | pyproj.CRS, origin=(0.0, 0.0),
                 vertical_reference: str = DEFAULT_VERTICAL_REFERENCE) -> None:
        self.crs = projected_crs(crs)
        origin = np.asarray(origin, dtype=float)
        if origin.shape != (2,) or not np.isfinite(origin).all():
            raise GeoError(f"origin must be two finite numbers (easting, northing) in metres, "
                           f"got {origin.tolist()!r}")
        if not vertical_reference.strip():
            raise GeoError("vertical_reference must name what elevation 0 is, e.g. "
                           "'mean sea level'")
        self.origin = origin
        self.vertical_reference = vertical_reference
        self._forward = pyproj.Transformer.from_crs(WGS84, self.crs, always_xy=True)
        self._inverse = pyproj.Transformer.from_crs(self.crs, WGS84, always_xy=True)

    @classmethod
    def local(cls, latitude: float, longitude: float,
              vertical_reference: str = DEFAULT_VERTICAL_REFERENCE) -> GeoReference:
        """A local transverse Mercator whose origin is (``latitude``, ``longitude``) degrees."""
        lon, lat = (float(v) for v in check_lonlat(longitude, latitude, "map origin"))
        conversion = TransverseMercatorConversion(latitude_natural_origin=lat,
                                                  longitude_natural_origin=lon)
        crs = ProjectedCRS(conversion, name=f"local transverse Mercator at {lat!r}, {lon!r}",
                           geodetic_crs=WGS84)
        return cls(crs, (0.0, 0.0), vertical_reference)

    @classmethod
    def at_lonlat(cls, crs: str | pyproj.CRS, latitude: float, longitude: float,
                  vertical_reference: str = DEFAULT_VERTICAL_REFERENCE) -> GeoReference:
        """A projected ``crs`` with the map origin at (``latitude``, ``longitude``) degrees."""
        anchored = cls(crs, (0.0, 0.0), vertical_reference)
        return cls(anchored.crs, anchored.to_map(longitude, latitude), vertical_reference)

    @classmethod
    def from_config(cls, config: GeoConfig) -> GeoReference | None:
        """The anchor ``config`` declares; None for ``anchor: none`` (local metres only)."""
        if config.anchor == "none":
            return None
        if config.anchor == "projected":
            return cls(config.crs, (config.origin_easting, config.origin_northing),
                       config.vertical_reference)
        if config.crs:
            return cls.at_lonlat(config.crs, config.origin_latitude, config.origin_longitude,
                                 config.vertical_reference)
        return cls.local(config.origin_latitude, config.origin_longitude,
                         config.vertical_reference)

    def to_map(self, lon, lat) -> tuple[np.ndarray, np.ndarray]:
        """Map (x, y) metres of WGS 84 (``lon``, ``lat``) degrees; arrays of their shape."""
        lon, lat = check_lonlat(lon, lat)
        easting, northing = self._forward.transform(lon, lat)
        x, y = np.asarray(easting) - self.origin[0], np.asarray(northing) - self.origin[1]
        bad = ~(np.isfinite(x) & np.isfinite(y))
        if bad.any():
            raise GeoError(f"{int(bad.sum())} point(s) cannot be projected into "
                           f"{self.crs.name}, the first at longitude {float(lon[bad].flat[0])!r}, "
                           f"latitude {float(lat[bad].flat[0])!r}")
        return x, y

    def to_lonlat(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """WGS 84 (lon, lat) degrees of map (``x``, ``y``) metres; arrays of their shape.

        The transformer is built once: a pyproj transformer costs tens of milliseconds to
        make, and the live view and the vehicle bridge convert every pose."""
        x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
        lon, lat = self._inverse.transform(x + self.origin[0], y + self.origin[1])
        return np.asarray(lon), np.asarray(lat)

    def map_to(self, crs: pyproj.CRS, x, y) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates in ``crs`` (x, y order: lon/lat or easting/northing) of map points."""
        x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
        transformer = pyproj.Transformer.from_crs(self.crs, crs, always_xy=True)
        u, v = transformer.transform(x + self.origin[0], y + self.origin[1])
        return np.asarray(u), np.asarray(v)

    def map_from(self, crs: pyproj.CRS, u, v) -> tuple[np.ndarray, np.ndarray]:
        """Map (x, y) metres of points given in ``crs`` (x, y order)."""
        transformer = pyproj.Transformer.from_crs(crs, self.crs, always_xy=True)
        easting, northing = transformer.transform(np.asarray(u, dtype=float),
                                                  np.asarray(v, dtype=float))
        return np.asarray(easting) - self.origin[0], np.asarray(northing) - self.origin[1]

    def __repr__(self) -> str:
        return (f"GeoReference({self.crs.name!r}, origin=({self.origin[0]:.3f}, "
                f"{self.origin[1]:.3f}), vertical_reference={self.vertical_reference!r})")


@dataclass
class GeoConfig(Params):
    """How the map frame is anchored on the Earth (see the module docstring)."""

    anchor: str = param("none", "none: local metres only; latlon: the map origin is at "
                                "origin_latitude/longitude; projected: the map origin is at "
                                "origin_easting/northing in crs", choices=ANCHORS)
    origin_latitude: float = param(0.0, "WGS 84 latitude of the map origin (anchor latlon)",
                                   unit="deg", low=-90.0, high=90.0)
    origin_longitude: float = param(0.0, "WGS 84 longitude of the map origin (anchor latlon)",
                                    unit="deg", low=-180.0, high=180.0)
    crs: str = param("", "projected CRS of the map axes: 'UTM 10N', 'EPSG:32610' or any CRS "
                         "pyproj knows; empty with anchor latlon: a local transverse "
                         "Mercator about the origin")
    origin_easting: float = param(0.0, "easting of the map origin in crs (anchor projected)",
                                  unit="m")
    origin_northing: float = param(0.0, "northing of the map origin in crs (anchor "
                                        "projected)", unit="m")
    vertical_reference: str = param(DEFAULT_VERTICAL_REFERENCE,
                                    "what elevation 0 is (mean sea level, a chart datum, the "
                                    "vehicle's depth reference); tides are not applied")

    def validate(self) -> None:
        if not self.vertical_reference.strip():
            raise ConfigError("GeoConfig.vertical_reference must not be empty")
        if self.anchor == "projected" and not self.crs:
            raise ConfigError("GeoConfig.anchor 'projected' needs crs (e.g. 'UTM 10N')")
        defaults = {spec.name: spec.default for spec in self.specs()}
        moved = [name for name in ("origin_latitude", "origin_longitude", "crs",
                                   "origin_easting", "origin_northing")
                 if getattr(self, name) != defaults[name]]
        if self.anchor == "none" and moved:
            raise ConfigError(f"GeoConfig: {', '.join(moved)} apply to an anchor; set anchor "
                              f"to latlon or projected, or leave them default")
        if self.crs:
            try:
                projected_crs(self.crs)
            except GeoError as exc:
                raise ConfigError(f"GeoConfig.crs: {exc}") from exc
        try:  # the anchor as a whole: its origin projected into its CRS
            GeoReference.from_config(self)
        except GeoError as exc:
            raise ConfigError(f"GeoConfig ({self.anchor} anchor): {exc}") from exc
