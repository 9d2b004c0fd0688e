"""Map latency over DDS: from a samples batch leaving its publisher to its map arriving.

Runs the mapper node in a process of its own and feeds it the legs of a simulated survey
(the pilot survey, then legs to random goals, sounded by the SurveySimulator), one batch at a
time, each once the previous batch's map has arrived, so the mapper is idle when a batch
comes. Per batch it reports

* ``latency``: publish of the batch -> arrival of its map, in this process (both DDS hops);
* the mapper's own account from /diagnostics: its ``update`` (the core's ``update()``),
  ``map`` (predicting the grid layers), and ``overhead`` (everything else between the
  batch's arrival in the mapper and its map's publication: conversion, hand-off to the
  worker, add_data, the copy of the model that serves queries, building the messages);
* ``latency - update``: what the graph adds to the core's update (target: <= 50 ms plus
  the map prediction).

Run::

    python3 -m poam_ros.benchmark.map_latency [--legs 8] [--num-inducing 500] ...

Medians are reported because other work on the machine inflates single runs. Only the DDS
side needs ROS (:mod:`poam_ros.ros.latency_probe`); it is imported when the benchmark runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from poam_ros.cli.common import ArgumentParser
from poam_ros.diagnostics import MapperStatus
from poam_ros.planners import RandomPlanner, pilot_survey
from poam_ros.processes import wait_or_kill
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file, mission_seeds
from poam_ros.setup.truth import mission_terrain
from poam_ros.sim import SurveySimulator, lower_right_start
from poam_ros.workspace import Workspace

COLUMNS = ("samples", "latency", "mapper_latency", "update", "map", "overhead",
           "latency_minus_update")


def survey_batches(setup: MissionSetup, legs: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(positions (N, 2) m, elevations (N,)) of the pilot survey and ``legs`` legs after it."""
    workspace = Workspace.from_config(setup.workspace)
    seeds = mission_seeds(setup.mission.seed)
    simulator = SurveySimulator(mission_terrain(setup), setup.vehicle, setup.sonar,
                                seed=seeds["simulator"],
                                start_pose=lower_right_start(workspace.bounds))
    rng = np.random.default_rng(seeds["planner"])
    goals = RandomPlanner(workspace, rng)
    plans = [pilot_survey(workspace, rng, setup.pilot)]
    batches = []
    for index in range(legs + 1):
        if index:
            plans.append(goals.plan(np.asarray(simulator.pose[:2])))
        survey = simulator.follow(plans[-1])
        batches.append((survey.positions, survey.elevations))
    return batches


def mapper_parameter_file(setup: MissionSetup, directory: Path) -> Path:
    """The mapper's parameters as a --params-file, from MissionSetup.node_parameters, without
    the simulated mission's evaluation points (a robot's mapper predicts its map alone)."""
    nested: dict = {}
    for name, value in {**setup.node_parameters("mapper"), "evaluation_grid": 0}.items():
        *parents, leaf = name.split(".")
        branch = nested
        for parent in parents:
            branch = branch.setdefault(parent, {})
        branch[leaf] = value
    path = directory / "mapper.yaml"
    path.write_text(yaml.safe_dump({"mapper": {"ros__parameters": nested}}))
    return path


def summarise(rows: list[dict[str, float]]) -> dict[str, float]:
    return {column: statistics.median(row[column] for row in rows) for column in COLUMNS}


def _row(samples: int, latency: float, mapper: MapperStatus) -> dict[str, float]:
    return {"samples": samples, "latency": latency, "mapper_latency": mapper.latency,
            "update": mapper.update_time, "map": mapper.map_predict_time,
            "overhead": mapper.node_overhead,
            "latency_minus_update": latency - mapper.update_time}


def _print_table(rows: list[dict[str, float]]) -> None:
    print(f"{'batch':>5} " + " ".join(f"{c:>12}" for c in COLUMNS))
    for index, row in enumerate(rows):
        cells = [f"{row['samples']:>12d}"] + [f"{1e3 * row[c]:>10.1f}ms" for c in COLUMNS[1:]]
        print(f"{index:>5} " + " ".join(cells))
    median = summarise(rows)
    print("median " + f"{median['samples']:>10.0f} " +
          " ".join(f"{1e3 * median[c]:>10.1f}ms" for c in COLUMNS[1:]))


def parse_args(argv=None) -> argparse.Namespace:
    parser = ArgumentParser(prog="poam-ros bench latency", description=__doc__.split("\n")[0])
    parser.add_argument("--params-file", type=Path, default=None,
                        help="ROS parameter file of the mission (default: the package's)")
    parser.add_argument("--legs", type=int, default=8, help="legs after the pilot survey")
    parser.add_argument("--num-inducing", type=int, help="override mapping.num_inducing")
    parser.add_argument("--train-steps", type=int, help="override mapping.train_steps")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"),
                        help="override mapping.device")
    parser.add_argument("--resolution", type=float, help="override grid.resolution [m]")
    parser.add_argument("--torch-threads", type=int, help="override the mapper's torch_threads")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS domain of the benchmark (default: one from the process id)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for one map")
    parser.add_argument("--output", type=Path, help="also write the rows as JSON here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    setup = MissionSetup.from_file(args.params_file or default_parameter_file())
    changes = {"num_inducing": args.num_inducing, "train_steps": args.train_steps,
               "device": args.device}
    setup.mapping = setup.mapping.replace(**{k: v for k, v in changes.items()
                                             if v is not None})
    if args.resolution is not None:
        setup.grid = setup.grid.replace(resolution=args.resolution)
    if args.torch_threads is not None:
        setup.mapper_node = setup.mapper_node.replace(torch_threads=args.torch_threads)
    batches = survey_batches(setup, args.legs)
    domain_id = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 100
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    print(f"mapping: {setup.mapping.method}, M = {setup.mapping.num_inducing}, "
          f"{setup.mapping.train_steps} training steps, device {setup.mapping.device}, "
          f"torch_threads {setup.mapper_node.torch_threads}; grid {setup.grid.resolution} m; "
          f"{len(batches)} batches; domain {domain_id}")

    import rclpy  # the DDS side only

    from poam_ros.ros.latency_probe import LatencyProbe

    with tempfile.TemporaryDirectory() as directory:
        params = mapper_parameter_file(setup, Path(directory))
        mapper = subprocess.Popen([sys.executable, "-m", "poam_ros.ros.mapper_node",
                                   "--ros-args", "--params-file", str(params)], env=env)
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=domain_id)
        probe = LatencyProbe(context)
        try:
            if not probe.wait_for_mapper(timeout=120.0):
                print("the mapper did not come up within 120 s", file=sys.stderr)
                return 1
            rows = []
            for index, (xy, z) in enumerate(batches):
                result = probe.measure(xy, z, stamp_ns=(index + 1) * 1_000_000_000,
                                       timeout=args.timeout)
                if result is None:
                    print(f"no map for batch {index} within {args.timeout} s", file=sys.stderr)
                    return 1
                rows.append(_row(len(z), *result))
        finally:
            probe.destroy()
            rclpy.try_shutdown(context=context)
            mapper.terminate()
            wait_or_kill(mapper, 20)
    _print_table(rows)
    if args.output:
        args.output.write_text(json.dumps({"rows": rows, "median": summarise(rows),
                                           "mapping": setup.mapping.to_dict(),
                                           "grid": setup.grid.to_dict(),
                                           "time": time.strftime("%Y-%m-%dT%H:%M:%S")},
                                          indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
