"""``poam-ros bench fleet``: map accuracy against mission time for a fleet of 1, 2 and 4.

Flies the simulated mission through the ROS 2 graph (``poam-ros sim --robots N``, one run
after the other on one ROS domain) for every setting asked: N vehicles, coordination on or off,
a ``central`` map or a ``distributed`` one over links of each budget (B/s, 0 unlimited), on
the default survey (or ``--map``), the same seed and per-vehicle sample budget
(``--max-samples``) for all. Per run it prints the final map's SMSE, MSLL and RMSE (m; with a
distributed map, the first vehicle's own map), the **mission time** (the simulated time of the
map that ended the fleet's mission), the time the map first reached the single vehicle's final
SMSE and its ratio to the single vehicle's mission time (the goal: about 1/N), the bytes each
vehicle's link sent, the wall time and the command; a run whose ingests' timing decided part
of it (readings lost or late: the graph fell behind the simulated clock) is marked ``*``, as
it depends on the machine's load. ``--quick``: N = 1 and 2, central,
coordination on and off, 1,000 samples per vehicle. Run::

    poam-ros bench fleet [--robots 1 2 4] [--coordination on off]
        [--maps central distributed] [--bandwidths 0 1000 100] [--max-samples N]
        [--seed S] [--map FILE] [--params FILE] [--time-scale X] [--quick] [--domain-id D]
        [--out DIR]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from poam_ros.cli.common import ArgumentParser

QUICK_SAMPLES = 1000  # per vehicle with --quick


@dataclass(frozen=True)
class Setting:
    """One fleet to fly: ``robots`` vehicles, ``coordination``, the map ``central`` or
    distributed over links of ``bandwidth`` B/s (0: unlimited)."""

    robots: int
    coordination: bool = True
    central: bool = True
    bandwidth: float = 0.0

    @property
    def label(self) -> str:
        if self.robots == 1:
            return "1 vehicle"
        link = "central" if self.central else (
            f"distributed, {'unlimited' if self.bandwidth == 0 else f'{self.bandwidth:g} B/s'}")
        return f"{self.robots} vehicles, coordination {'on' if self.coordination else 'off'}, " \
               f"{link}"

    def arguments(self) -> list[str]:
        """``poam-ros sim``'s options for this fleet."""
        if self.robots == 1:
            return []
        arguments = ["--robots", str(self.robots), "--coordination",
                     "on" if self.coordination else "off"]
        if not self.central:
            arguments += ["--fleet-map", "distributed", "--link-bandwidth", f"{self.bandwidth:g}"]
        return arguments


def settings(robots: list[int], coordination: list[bool], maps: list[str],
             bandwidths: list[float]) -> list[Setting]:
    """Every fleet of the matrix, the single vehicle first (once: it has no teammates)."""
    fleets = [Setting(1)] if 1 in robots else []
    for n in sorted(set(robots) - {1}):
        for coordinated in coordination:
            if "central" in maps:
                fleets.append(Setting(n, coordinated))
            if "distributed" in maps:
                fleets += [Setting(n, coordinated, False, b) for b in bandwidths]
    return fleets


@dataclass
class Outcome:
    """What one run gave (see the module docstring); ``time_to_single`` is None when the
    map never reached the single vehicle's final SMSE, or there is no single vehicle."""

    setting: Setting
    command: list[str]
    status: int
    samples: int | None = None
    smse: float | None = None
    msll: float | None = None
    rmse: float | None = None
    mission_time: float | None = None  # s of sim time
    time_to_single: float | None = None  # s of sim time
    bytes_sent: dict | None = None  # vehicle -> bytes its link sent
    wall_time: float = 0.0
    #: per ingest, its decisions that depended on its timing (``poam-ros sim``'s summary)
    timing_dependent: dict | None = None


def fly(setting: Setting, common: list[str], out: Path, domain: int) -> tuple[Outcome, list]:
    """One ``poam-ros sim`` into ``out`` on ROS domain ``domain``: its outcome and its
    records (epochs.jsonl: samples, SMSE and sim time per map)."""
    command = [sys.executable, "-m", "poam_ros", "sim", *common, *setting.arguments(),
               "--out", str(out)]
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    start = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, env=env)
    outcome = Outcome(setting, command, finished.returncode,
                      wall_time=time.perf_counter() - start)
    summary_path, epochs_path = out / "sim.json", out / "epochs.jsonl"
    if finished.returncode != 0 or not summary_path.is_file():
        print(f"{setting.label}: exit status {finished.returncode}\n{finished.stderr[-2000:]}",
              file=sys.stderr)
        return outcome, []
    summary = json.loads(summary_path.read_text())
    final = summary["final"]
    outcome.samples, outcome.smse, outcome.msll, outcome.rmse = (
        final["num_samples"], final["smse"], final["msll"], final["rmse"])
    outcome.mission_time = final["sim_time"]
    outcome.bytes_sent = {namespace: vehicle["link"]["bytes_sent"] for namespace, vehicle
                          in summary.get("vehicles", {}).items() if vehicle.get("link")}
    outcome.timing_dependent = summary.get("timing_dependent")
    records = [json.loads(line) for line in epochs_path.read_text().splitlines() if line]
    return outcome, records


def time_to_reach(records: list, smse: float) -> float | None:
    """The sim time [s] of the first map with an SMSE at or below ``smse``."""
    return next((record["sim_time"] for record in records if record["smse"] <= smse), None)


def print_table(outcomes: list[Outcome], single: Outcome | None) -> None:
    print(f"{'fleet':52} {'samples':>7} {'SMSE':>7} {'MSLL':>7} {'RMSE m':>7} "
          f"{'mission s':>9} {'to single s':>11} {'ratio':>6} {'wall s':>7}  bytes sent")
    for o in outcomes:
        if o.samples is None:
            print(f"{o.setting.label:52} failed (exit status {o.status})")
            continue
        reach = "-" if o.time_to_single is None else f"{o.time_to_single:.0f}"
        ratio = "-" if o.time_to_single is None or single is None or not single.mission_time \
            else f"{o.time_to_single / single.mission_time:.2f}"
        sent = ", ".join(f"{ns} {b}" for ns, b in (o.bytes_sent or {}).items()) or "-"
        label = o.setting.label + (" *" if o.timing_dependent else "")
        print(f"{label:52} {o.samples:7d} {o.smse:7.4f} {o.msll:7.3f} {o.rmse:7.1f} "
              f"{o.mission_time:9.0f} {reach:>11} {ratio:>6} {o.wall_time:7.0f}  {sent}")
    if any(o.timing_dependent for o in outcomes):
        print("* the ingests' timing decided part of the run (readings lost or late: "
              "the graph fell behind the simulated clock); it depends on the machine's load")


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench fleet", description=__doc__.split("\n")[0])
    parser.add_argument("--robots", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--coordination", nargs="+", choices=("on", "off"),
                        default=["on", "off"])
    parser.add_argument("--maps", nargs="+", choices=("central", "distributed"),
                        default=["central", "distributed"])
    parser.add_argument("--bandwidths", type=float, nargs="+", default=[0.0, 1000.0, 100.0],
                        help="the links' budgets in B/s with a distributed map (0: unlimited)")
    parser.add_argument("--max-samples", type=int, help="per vehicle (default: the file's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--map", help="a terrain file (default: the default survey)")
    parser.add_argument("--params", help="the parameter file (default: the package's)")
    parser.add_argument("--time-scale", type=float,
                        help="sim seconds per wall second (default: the file's)")
    parser.add_argument("--quick", action="store_true",
                        help=f"N = 1 and 2, central, coordination on and off, "
                             f"{QUICK_SAMPLES} samples per vehicle")
    parser.add_argument("--domain-id", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", 0)),
                        help="the ROS domain of the runs (each run in turn on it)")
    parser.add_argument("--out", type=Path, default=Path("results/bench_fleet"))
    args = parser.parse_args(argv)
    if args.quick:
        args.robots, args.maps = [1, 2], ["central"]
        args.max_samples = args.max_samples or QUICK_SAMPLES
    common = ["--seed", str(args.seed)]
    for option, value in (("--max-samples", args.max_samples), ("--map", args.map),
                          ("--params", args.params), ("--time-scale", args.time_scale)):
        if value is not None:
            common += [option, str(value)]
    fleets = settings(args.robots, [c == "on" for c in args.coordination], args.maps,
                      args.bandwidths)
    print(f"poam-ros bench fleet: {len(fleets)} run(s), seed {args.seed}, poam-ros sim "
          f"{' '.join(common)}", flush=True)
    outcomes, single = [], None
    for index, setting in enumerate(fleets):
        outcome, records = fly(setting, common, args.out / f"run{index}", args.domain_id)
        if setting.robots == 1 and outcome.smse is not None:
            single = outcome
        if single is not None and outcome.smse is not None:
            outcome.time_to_single = time_to_reach(records, single.smse)
        outcomes.append(outcome)
        print(f"{setting.label}: {' '.join(outcome.command[2:])}", flush=True)
    print_table(outcomes, single)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fleet.json").write_text(json.dumps(
        {"seed": args.seed, "common": common, "runs": [asdict(o) for o in outcomes]}, indent=1))
    print(f"records: {args.out / 'fleet.json'}")
    return 0 if all(o.status == 0 for o in outcomes) else 1
