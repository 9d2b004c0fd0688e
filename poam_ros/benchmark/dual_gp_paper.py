"""Reproductions for the memory-based dual GP (Chang et al. 2023), printed as JSON lines.

* ``magnetometer``: the paper's streaming set-up (App. B.3): the field magnitude of path 3 of
  the indoor magnetometer survey in 20 batches in time order, scored after every batch on paths
  1, 2, 4 and 5 (as the VIPS paper tests), M = 100 inducing inputs, a constant + Matérn-5/2
  kernel; ``dual-gp`` against ``ssgp++``, ``ovc++`` and ``poam``: RMSE (µT) and NLPD (nats, of
  a new measurement) per batch, and the update time. The paper shows this only as a figure.
* ``seabed``: a binary seabed class (elevation above the terrain's median) of the default
  terrain, learned offline by the Bernoulli dual GP from labelled samples along lawnmower
  survey tracks (5 % of labels flipped), one track per batch after a pilot batch of the first
  and last tracks (the input scaler is fitted on the first batch: one straight track would
  make its cross-track axis degenerate): accuracy and Brier score against the true class on a
  50 × 50 grid, for memories of 0 and more samples per batch, and all samples in one batch.

The paper's classification streams (``uci``, ``memory``, ``banana``) are in
:mod:`poam_ros.benchmark.dual_gp_streams`; they print a closing JSON line with pass checks and
exit with status 1 when one fails.

    python3 -m poam_ros.benchmark.dual_gp_paper magnetometer
    python3 -m poam_ros.benchmark.dual_gp_paper seabed
    python3 -m poam_ros.benchmark.dual_gp_paper uci|memory|banana
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch

from poam_ros.benchmark import dual_gp_streams
from poam_ros.benchmark.magnetometer import held_out, load_path, streaming_batches
from poam_ros.cli.common import ArgumentParser
from poam_ros.mapping.metrics import evaluate_map, evaluation_grid
from poam_ros.models import MappingConfig, make_model
from poam_ros.models.bernoulli import BernoulliDualGP
from poam_ros.models.config import DualOptions
from poam_ros.sim.default_terrain import default_terrain

MAGNETOMETER_METHODS = ("dual-gp", "ssgp++", "ovc++", "poam")


def magnetometer(args) -> None:
    batches = streaming_batches(load_path(3), args.batches)
    x_test, y_test = held_out((1, 2, 4, 5))
    for method in args.methods:
        config = MappingConfig(method=method, kernel=args.kernel, num_inducing=args.inducing,
                               train_steps=args.train_steps, m_step=args.m_step, device="cpu",
                               dual=DualOptions(memory_per_batch=args.memory,
                                                objective=args.dual_objective),
                               seed=args.seed)
        model = make_model(config)
        seen = []
        for index, (x, y) in enumerate(batches):
            model.add_data(x, y)
            report = model.update()
            seen.append(y)
            mean, std = model.predict(x_test, include_noise=True)
            metrics = evaluate_map(y_test, mean, std, np.concatenate(seen))
            print(json.dumps(dict(
                experiment="magnetometer", method=method, batch=index + 1,
                samples=model.num_samples, inducing=report.num_inducing,
                rmse=round(metrics.rmse, 4), nlpd=round(metrics.nlpd, 4),
                noise_std=round(float(model.y_scaler.inverse_std(model.noise.sqrt().item())), 4),
                update_s=round(report.total_time, 3),
                **{k: None if math.isnan(v) else v for k, v in report.extra.items()
                   if k.startswith("memory")})),
                flush=True)


def survey_tracks(extent, spacing: float, step: float) -> list[np.ndarray]:
    """Lawnmower tracks over ``extent`` (xmin, xmax, ymin, ymax, metres): lines of constant y
    ``spacing`` apart, alternating in direction, sampled every ``step``; [(n_i × 2), ...]."""
    xmin, xmax, ymin, ymax = extent
    tracks = []
    for i, y in enumerate(np.arange(ymin + spacing / 2, ymax, spacing)):
        x = np.arange(xmin + step / 2, xmax, step)
        x = x if i % 2 == 0 else x[::-1]
        tracks.append(np.column_stack([x, np.full_like(x, y)]))
    return tracks


def seabed(args) -> None:
    terrain = default_terrain()
    threshold = float(np.median(terrain.elevation(evaluation_grid(terrain.extent, 200, 200))))
    rng = np.random.default_rng(args.seed)
    tracks = survey_tracks(terrain.extent, args.spacing, args.step)
    batches = []
    for track in [np.vstack([tracks[0], tracks[-1]]), *tracks[1:-1]]:
        label = (terrain.elevation(track) > threshold).astype(float)
        flip = rng.uniform(size=len(label)) < args.flip
        batches.append((track, np.where(flip, 1.0 - label, label)))
    grid = evaluation_grid(terrain.extent, 50, 50)
    truth = terrain.elevation(grid) > threshold
    one_batch = [tuple(np.concatenate(parts) for parts in zip(*batches))]
    for memory, stream in [*((m, batches) for m in args.memory), ("one batch", one_batch)]:
        config = MappingConfig(kernel=args.kernel, num_inducing=args.inducing,
                               train_steps=args.train_steps, device="cpu",
                               dual=DualOptions(
                                   memory_per_batch=0 if stream is one_batch else memory),
                               seed=args.seed)
        model = BernoulliDualGP(config)
        start = time.perf_counter()
        for x, y in stream:
            model.add_data(x, y)
            model.update()
        elapsed = time.perf_counter() - start
        probability = model.predict_proba(grid)
        print(json.dumps(dict(
            experiment="seabed", memory_per_batch=memory, batches=len(stream),
            samples=model.num_samples, memory_size=len(model.memory_rows),
            accuracy=round(float(((probability > 0.5) == truth).mean()), 4),
            brier=round(float(np.mean((probability - truth) ** 2)), 4),
            total_update_s=round(elapsed, 2))), flush=True)


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench dual-gp-paper",
                            description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", default=None,
                        help="kernel (default: matern52 for magnetometer and the paper's "
                             "streams uci, memory, banana; rbf for seabed)")
    parser.add_argument("--ard", action="store_true",
                        help="with --kernel rbf in uci and memory: a lengthscale per input")
    sub = parser.add_subparsers(dest="experiment", required=True)
    mag = sub.add_parser("magnetometer", help="path 3 streamed, paths 1, 2, 4, 5 tested")
    mag.add_argument("--methods", nargs="+", default=list(MAGNETOMETER_METHODS))
    mag.add_argument("--batches", type=int, default=20)
    mag.add_argument("--inducing", type=int, default=100)
    mag.add_argument("--memory", type=int, default=100,
                     help="dual-gp memory samples per batch (the reference code's 100)")
    mag.add_argument("--dual-objective", default="dual", choices=("dual", "all-data"))
    mag.add_argument("--m-step", default="lbfgs", choices=("adam", "lbfgs"))
    mag.add_argument("--train-steps", type=int, default=100, help="Adam steps per batch")
    bed = sub.add_parser("seabed", help="binary seabed class by the Bernoulli dual GP")
    bed.add_argument("--memory", type=int, nargs="+", default=[0, 10, 20, 50])
    bed.add_argument("--inducing", type=int, default=100)
    bed.add_argument("--train-steps", type=int, default=20)
    bed.add_argument("--spacing", type=float, default=6.0, help="track spacing, m")
    bed.add_argument("--step", type=float, default=1.0, help="sample spacing along a track, m")
    bed.add_argument("--flip", type=float, default=0.05, help="share of labels flipped")
    dual_gp_streams.add_parsers(sub)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.experiment in dual_gp_streams.EXPERIMENTS:
        try:
            dual_gp_streams.check_kernel(args)
        except ValueError as error:
            parser.error(str(error))
        result = dual_gp_streams.EXPERIMENTS[args.experiment](args)
        result["checks"] = {name: bool(ok) for name, ok in result["checks"].items()}
        print(json.dumps(result))
        return 0 if all(result["checks"].values()) else 1
    if args.kernel is None:
        args.kernel = "matern52" if args.experiment == "magnetometer" else "rbf"
    if args.ard:
        parser.error("--ard is for the paper's streams (uci, memory, banana)")
    (magnetometer if args.experiment == "magnetometer" else seabed)(args)
    return 0


if __name__ == "__main__":
    main()
