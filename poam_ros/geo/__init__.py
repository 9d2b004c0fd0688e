"""Georeferencing, free of ROS: the map frame's anchor on the Earth, real-scale terrain from
georeferenced rasters, lon/lat workspaces and georeferenced survey products.

* :mod:`.georeference`: :class:`GeoReference` (WGS 84 lon/lat ↔ map metres) and its
  :class:`GeoConfig`.
* :mod:`.raster`: :func:`load_geo_terrain`, a GeoTIFF, GEBCO NetCDF or SRTM tile cut to a
  survey area and resampled into the map frame (:class:`GeoTerrain`).
* :mod:`.geojson`: :func:`read_survey_area`, a workspace and its no-go zones from GeoJSON;
  :func:`resolve_workspace`, a ``WorkspaceConfig`` naming such a file, in map metres.
* :mod:`.export`: :func:`export_map_product`, map layers as a cloud-optimised GeoTIFF.
"""

from poam_ros.geo.export import MapProduct, export_map_product, read_map_product, sample_density
from poam_ros.geo.geojson import SurveyArea, read_survey_area, resolve_workspace
from poam_ros.geo.georeference import GeoConfig, GeoError, GeoReference, projected_crs
from poam_ros.geo.raster import GeoTerrain, load_geo_terrain

__all__ = ["GeoConfig", "GeoError", "GeoReference", "GeoTerrain", "MapProduct", "SurveyArea",
           "export_map_product", "load_geo_terrain", "projected_crs", "read_map_product",
           "read_survey_area", "resolve_workspace", "sample_density"]
