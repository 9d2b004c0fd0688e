"""``poam-ros export``: a saved model or a bag's survey as a georeferenced map product.

The product (:mod:`poam_ros.mapping.survey_product`) is the mapper's map on the parameter
file's grid (``grid.*`` over ``workspace.*``, or ``--resolution`` / ``--bounds``), in the
CRS of the map frame's anchor (``geo.*``). A map frame without an anchor has no place on the
Earth, so its map is refused unless ``--crs`` says which CRS its metres already are. Input
it cannot use is one line and exit status 2 before anything is read; a failure once started
is exit status 1. A bag is re-mapped as ``poam-ros remap`` does it, and says what that says
besides the map: its notes, and a damaged bag's messages lost, as a warning.
"""

from __future__ import annotations

import logging
from pathlib import Path

from poam_ros.cli.common import ArgumentParser, fail

NO_ANCHOR = ("the map frame has no geodetic anchor (geo.anchor: none), so the map has no "
             "place on the Earth: set geo.anchor to latlon or projected in the mapper's "
             "geo.* of the parameter file (--params), or give --crs when the map's metres "
             "are eastings and northings of a CRS")


def export(argv) -> int:
    """Export a saved model state (``~/save``, ``poam-ros remap``'s model.pt) or a bag
    (re-mapped first, as ``poam-ros remap`` does) as a cloud-optimised GeoTIFF: mean, std,
    learned lengthscale and sample density, with the anchor's CRS and vertical reference."""
    from poam_ros.bags import BagError
    from poam_ros.bags.remap import remap_bag
    from poam_ros.bags.remap_config import RemapConfig
    from poam_ros.cli.bags import print_remap_notes
    from poam_ros.cli.mission import setup_errors
    from poam_ros.geo import GeoError
    from poam_ros.mapping.survey_product import export_map
    from poam_ros.models import ModelNotReadyError, NumericalError, StateFileError, load_model

    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    remap_config = RemapConfig(truth="none")  # only the bag's model is wanted
    try:  # all of it before a bag's first message is read
        setup, georeference, grid = _setup(args)
        bag = _bag(args.source, remap_config)
        model = load_model(args.source, setup.mapping.device) if bag is None else None
    except (*setup_errors(), StateFileError, BagError) as error:
        return fail("export", error)
    try:
        if bag is not None:
            print(f"export: re-mapping {args.source} with {setup.mapping.method}", flush=True)
            result = remap_bag(bag, setup, remap_config)
            print_remap_notes(result)  # a damaged bag is said, as the remap says it
            model = result.model
        path = export_map(args.output, model, grid, georeference,
                          setup.mapper_node.std_includes_noise, setup.ingest.channels)
    except (BagError, GeoError, ModelNotReadyError, NumericalError) as error:
        return fail("export", error, 1)
    rows, cols = grid.shape
    print(f"{path}: {rows} × {cols} cells of {grid.resolution:g} m from {model.num_samples} "
          f"samples ({model.method}); CRS {georeference.crs.name}, elevations relative to "
          f"{georeference.vertical_reference}")
    return 0


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="poam-ros export", description=export.__doc__)
    parser.add_argument("source", type=Path, help="a model state file or a bag folder")
    parser.add_argument("-o", "--output", type=Path, required=True, help="GeoTIFF to write")
    parser.add_argument("--params", type=Path,
                        help="parameter file: anchor, grid, workspace; for a bag also the "
                             "method and the ingest (default: the package's "
                             "config/topobathy.yaml, the default survey's)")
    parser.add_argument("--resolution", type=float, help="cell size [m] (default: grid."
                                                         "resolution)")
    parser.add_argument("--bounds", type=float, nargs=4, metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
                        help="extent in map metres (default: grid.extent, else the "
                             "workspace's bounds)")
    parser.add_argument("--crs", help="for a map frame without an anchor: the CRS whose "
                                      "eastings and northings its metres are ('UTM 10N', "
                                      "'EPSG:32610', ...)")
    return parser


def _setup(args):
    """(MissionSetup, GeoReference, MapGrid) of the command line; raises ConfigError or
    GeoError."""
    from poam_ros.geo import GeoReference
    from poam_ros.mapping.map_grid import MapGrid
    from poam_ros.params import ConfigError
    from poam_ros.setup.mission_setup import (
        DEFAULT_SURVEY_FILE,
        MissionSetup,
        default_parameter_file,
    )
    from poam_ros.workspace import Workspace

    params = args.params or default_parameter_file(DEFAULT_SURVEY_FILE)
    setup = MissionSetup.from_file(params.resolve())
    georeference = GeoReference.from_config(setup.geo)
    if args.crs is not None:
        if georeference is not None:
            raise ConfigError(f"--crs applies to a map frame without an anchor; this one is "
                              f"anchored (geo.anchor: {setup.geo.anchor}) in "
                              f"{georeference.crs.name}")
        georeference = GeoReference(args.crs, (0.0, 0.0), setup.geo.vertical_reference)
    if georeference is None:
        raise ConfigError(NO_ANCHOR)
    overrides = {"resolution": args.resolution, "extent": args.bounds}
    grid_config = setup.grid.replace(**{k: v for k, v in overrides.items() if v is not None})
    try:
        grid = MapGrid.from_config(grid_config, Workspace.from_config(setup.workspace))
    except ValueError as error:
        raise ConfigError(f"map grid: {error}") from error
    return setup, georeference, grid


def _bag(source: Path, config):
    """A bag folder's reader, its topics checked; None for a state file. Raises BagError."""
    from poam_ros.bags import BagError, BagReader
    from poam_ros.bags.remap_config import check_topics

    if source.is_file():
        return None
    if not source.is_dir():
        raise BagError(f"{source}: neither a model state file nor a bag folder")
    reader = BagReader(source)
    check_topics(reader, config)
    return reader
