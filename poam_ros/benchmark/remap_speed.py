"""``poam-ros bench remap``: the offline remap time of a simulated mission's bag.

Writes a bag of a lockstep survey by the ROS-free simulated AUV (pilot survey, then random
goals until ``--samples`` soundings; :mod:`poam_ros.bags.sim_survey`), or takes ``--bag``,
and re-maps it with the parameter file's method and settings (POAM, M = 500 by default),
timing the whole remap: reading, the ingest core, every model update and the map after
each. Needs no ROS.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from poam_ros.cli.common import ArgumentParser


def main(argv=None) -> int:
    from poam_ros.bags.remap import remap_bag
    from poam_ros.bags.remap_config import RemapConfig
    from poam_ros.bags.sim_survey import write_survey
    from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file

    parser = ArgumentParser(prog="poam-ros bench remap", description=__doc__)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--params", help="parameter file (default: the package's config)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bag", type=Path, help="remap this bag instead of writing one")
    parser.add_argument("--device", help="mapping device (cpu, cuda, auto)")
    args = parser.parse_args(argv)
    params = args.params or default_parameter_file()
    setup = MissionSetup.from_file(params)
    setup.mission = setup.mission.replace(seed=args.seed)
    if args.device:
        setup.mapping = setup.mapping.replace(device=args.device)
    with tempfile.TemporaryDirectory() as folder:
        bag = args.bag
        if bag is None:
            tic = time.perf_counter()
            bag = write_survey(Path(folder) / "survey", setup, legs=(),
                               min_samples=args.samples)
            print(f"wrote a {args.samples}-sample survey bag in "
                  f"{time.perf_counter() - tic:.1f} s")
        result = remap_bag(bag, setup, RemapConfig(truth="none"))
    updates = [r.update_time for r in result.records]
    predicts = [r.predict_time for r in result.records]
    print(f"remap: {sum(result.messages.values())} sensor messages, {len(result.batches)} "
          f"batches, {len(result.records)} updates, {result.model.num_samples} samples, "
          f"{setup.mapping.method} M <= {setup.mapping.num_inducing} on "
          f"{result.model.device}")
    print(f"remap wall time {result.wall_time:.1f} s: model updates {sum(updates):.1f} s "
          f"(median {statistics.median(updates):.3f} s), maps {sum(predicts):.1f} s, "
          f"reading + ingest + the rest {result.wall_time - sum(updates) - sum(predicts):.1f} s")
    return 0
