"""``poam-ros bench seabed-class``: the simulated seabed class (a binary channel) mapped beside
the depth by ``poam-mt`` with a Bernoulli channel, against the class mapped alone by the dual
GP with a Bernoulli likelihood (``dual-gp-bernoulli``). Needs no ROS.

Per seed and method of ``--methods`` (default ``poam-mt``; ``poam-independent`` and
``dual-gp-independent`` map the class by ``dual-gp-bernoulli`` beside the depth's own map):
the ROS-free mission of the parameter file (default: the package's) with the seabed class on
(:mod:`poam_ros.sim.seabed_class`, its ``seabed_class.*``), the ingest's channel
``seabed_class`` and the method with ``channel_likelihoods: [gaussian, bernoulli]``, the
max-entropy planner scoring the class by its Bernoulli entropy (``--acquisition``) until
``--max-samples``. Then ``dual-gp-bernoulli`` takes the first method's class readings in the
same batches (one update per mission epoch, the labels alone). The final maps are scored at
the mission's evaluation points against the noise-free class c(p) (hard where steep):

* accuracy: the share of points where p̂ > ½ says c;
* NLPD: −mean ln p̂(c), the class's negative log predictive probability [nats] (ln 2 for a
  map that knows nothing, p̂ = ½ everywhere);
* the mission's own ``nlpd_seabed_class``: the cross-entropy against P(y = 1), the readings'
  (with the flips) rather than the class's.

Prints one JSON line per seed and method, then the means over seeds (``alone``: the labels
of the first method's mission).
"""

from __future__ import annotations

import json
import time

import numpy as np

from poam_ros.cli.common import ArgumentParser
from poam_ros.mapping.binary import class_probability
from poam_ros.mission import Mission, MissionResult
from poam_ros.models import make_model
from poam_ros.setup.mission_setup import MissionSetup, default_parameter_file, mission_seeds
from poam_ros.sim.seabed_class import CHANNEL, SeabedClass

#: the methods that map the class beside the depth, and the class mapped alone
JOINT = ("poam-mt", "cmogp", "poam-independent", "dual-gp-independent")
ALONE = "dual-gp-bernoulli"


def class_setup(setup: MissionSetup, args, method: str) -> MissionSetup:
    """``setup`` with the seabed class mapped beside the depth by ``method``, at ``args``'
    size."""
    setup.seabed_class = setup.seabed_class.replace(enabled=True)
    setup.temperature = setup.temperature.replace(enabled=False)
    setup.ingest = setup.ingest.replace(channels=[CHANNEL], channel_rates=[
        setup.seabed_class.rate], channel_topics=[], channel_types=[], channel_frames=[])
    setup.mapping = setup.mapping.replace(
        method=method, channel_likelihoods=["gaussian", "bernoulli"], device="cpu",
        num_inducing=args.num_inducing, train_steps=args.train_steps, channel_min_samples=10)
    setup.max_entropy = setup.max_entropy.replace(acquisition=args.acquisition)
    setup.mission_control = setup.mission_control.replace(max_samples=args.max_samples)
    setup.mission = setup.mission.replace(eval_grid=args.eval_grid)
    return setup


def class_scores(probability: np.ndarray, hard: np.ndarray) -> dict[str, float]:
    """Accuracy and NLPD [nats] of predicted P(class 1) (G,) against the classes (G,)."""
    tiny = np.finfo(float).eps
    chance = np.clip(np.where(hard == 1.0, probability, 1.0 - probability), tiny, 1.0)
    return {"accuracy": float(np.mean((probability > 0.5) == (hard == 1.0))),
            "nlpd": float(-np.mean(np.log(chance)))}


def alone(setup: MissionSetup, result, seed: int) -> np.ndarray:
    """``dual-gp-bernoulli`` on the mission's class readings, in its epochs' batches; its
    P(class 1) at the evaluation points."""
    config = setup.mapping.replace(method=ALONE, channel_likelihoods=[],
                                   seed=mission_seeds(seed)["model"])
    model = make_model(config)
    start = 0
    for record in result.records:
        end = record.num_samples
        x, label = result.samples_x[start:end], result.samples_y[start:end, 1]
        measured = np.isfinite(label)
        if measured.any():
            model.add_data(x[measured], label[measured])
            model.update()
        start = end
    return model.predict_proba(result.eval_points)


def mission_row(setup: MissionSetup, seed: int) -> tuple[dict, MissionResult, np.ndarray]:
    """The mission of ``setup`` at ``seed``: its row, its result and the class at its
    evaluation points."""
    setup.mission = setup.mission.replace(seed=seed)
    tic = time.perf_counter()
    result = Mission(setup).run()
    hard = SeabedClass(result.terrain, setup.seabed_class).hard(result.eval_points)
    mean, std = result.model.predict(result.eval_points)
    row = {"method": setup.mapping.method, "seed": seed, "samples": result.final.num_samples,
           "labels": int(np.isfinite(result.samples_y[:, 1]).sum()),
           **class_scores(class_probability(mean[:, 1], std[:, 1]), hard),
           "nlpd_readings": result.final.extra["nlpd_seabed_class"],
           "wall_s": time.perf_counter() - tic}
    return row, result, hard


def run_seed(setups: list[MissionSetup], seed: int) -> list[dict]:
    """The rows of one seed: each setup's mission, then the class alone on the first's
    readings."""
    missions = [mission_row(setup, seed) for setup in setups]
    row, result, hard = missions[0]
    tic = time.perf_counter()
    scores = class_scores(alone(setups[0], result, seed), hard)
    return [*(mission[0] for mission in missions),
            {"method": ALONE, "seed": seed, "samples": row["samples"], "labels": row["labels"],
             **scores, "wall_s": time.perf_counter() - tic}]


def parser() -> ArgumentParser:
    parser = ArgumentParser(prog="poam-ros bench seabed-class", description=__doc__)
    parser.add_argument("--params", help="parameter file (default: the package's)")
    parser.add_argument("--methods", type=lambda text: text.split(","), default=["poam-mt"],
                        help=f"comma-separated, each its own mission: {', '.join(JOINT)}")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-samples", type=int, default=1500)
    parser.add_argument("--num-inducing", type=int, default=40)
    parser.add_argument("--train-steps", type=int, default=2)
    parser.add_argument("--eval-grid", type=int, default=30)
    parser.add_argument("--acquisition", choices=("depth", "weighted", "joint"),
                        default="joint")
    return parser


def main(argv=None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    unknown = [method for method in args.methods if method not in JOINT]
    if unknown:
        cli.error(f"--methods: {', '.join(unknown)} not among {', '.join(JOINT)}")
    rows = []
    for seed in args.seeds:
        setups = [class_setup(MissionSetup.from_file(args.params or default_parameter_file()),
                              args, method) for method in args.methods]
        for row in run_seed(setups, seed):
            print(json.dumps(row), flush=True)
            rows.append(row)
    for method in (*args.methods, ALONE):
        mine = [row for row in rows if row["method"] == method]
        print(json.dumps({"method": method, "seeds": len(mine), **{
            key: float(np.mean([row[key] for row in mine]))
            for key in ("accuracy", "nlpd")}}))
    return 0
