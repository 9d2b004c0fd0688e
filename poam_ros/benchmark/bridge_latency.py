"""``poam-ros bench bridge``: the vehicle bridge's latencies and CPU share against the
simulated autopilot over UDP on loopback.

The ``vehicle_bridge`` node runs in a process of its own, as on a robot; this process holds
the simulated autopilot (telemetry at ``--rate``, stepped the moment a message arrives:
:mod:`poam_ros.ros.bridge_probe`) and a ROS node that publishes plans and receives the
odometry. Once the operator's part is done (GUIDED, armed) and the bridge's ``~/start`` succeeds, it
publishes ``--plan-rate`` plans a second for ``--seconds``, each to another goal, and
measures, all on this process's ``perf_counter``:

* ``plan``: a plan published on ``plan`` -> its SET_POSITION_TARGET_GLOBAL_INT arriving at
  the autopilot (DDS, the bridge's plan check, the wait for its next tick at ``tick_rate``,
  UDP);
* ``telemetry``: a GLOBAL_POSITION_INT sent by the autopilot -> its ``odom`` message
  received here (UDP, the bridge's tick, conversion, DDS); a message is matched to its
  odometry by the stamp: the autopilot's boot time plus the clock offset the bridge
  reports on ``vehicle/state``;
* ``cpu``: the bridge process's CPU time (user + system, all its threads, DDS's included)
  over the wall time of the window.

Medians and 99th percentiles; other work on the machine inflates the tails.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from poam_ros.cli.common import ArgumentParser
from poam_ros.geo import GeoReference
from poam_ros.processes import wait_or_kill

ANCHOR = (47.0, 8.0)  # lat, lon of the map origin = the autopilot's EKF origin
GOALS = ((-20.0, -20.0), (-20.0, 20.0), (0.0, 20.0), (0.0, 0.0))  # m, far from the start
START_TIMEOUT = 120.0  # s: the bridge process up, the link and the origin known


def cpu_seconds(pid: int) -> float:
    """User + system CPU time (s) of process ``pid`` and all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plan_latencies(plans, targets, tolerance: float = 0.05) -> list[float]:
    """For each (perf s, goal) plan, the delay (s) to the first target (perf s, x, y, alt)
    at its goal after it; plans whose target never came are left out."""
    delays = []
    for sent, goal in plans:
        arrival = next((t for t, x, y, _ in targets
                        if t >= sent and np.hypot(x - goal[0], y - goal[1]) < tolerance), None)
        if arrival is not None:
            delays.append(arrival - sent)
    return delays


def telemetry_latencies(sent, received, offsets, period: float) -> list[float]:
    """Each received odometry (stamp s, perf s) matched to the send (boot s, perf s) whose
    boot time is nearest its stamp less the bridge's clock offset reported last before it
    arrived (``offsets``: (perf s, offset s), in order), within a third of the telemetry
    ``period``."""
    if not sent or not offsets:
        return []
    boots = np.array([boot for boot, _ in sent])
    reported = np.array([perf for perf, _ in offsets])
    delays = []
    for stamp, arrival in received:
        latest = max(int(np.searchsorted(reported, arrival, side="right")) - 1, 0)
        boot = stamp - offsets[latest][1]
        index = int(np.argmin(np.abs(boots - boot)))
        if abs(boots[index] - boot) < period / 3.0:
            delays.append(arrival - sent[index][1])
    return delays


def summary(values: list[float]) -> dict[str, float]:
    """Count, median and 99th percentile (ms)."""
    if not values:
        return {"count": 0, "median_ms": float("nan"), "p99_ms": float("nan")}
    return {"count": len(values), "median_ms": 1e3 * statistics.median(values),
            "p99_ms": 1e3 * float(np.percentile(values, 99.0))}


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="poam-ros bench bridge", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="length of the measured window (30)")
    parser.add_argument("--rate", type=float, default=10.0, help="telemetry rate, Hz (10)")
    parser.add_argument("--plan-rate", type=float, default=4.0, help="plans per second (4)")
    parser.add_argument("--tick-rate", type=float, default=50.0,
                        help="the bridge's tick_rate, Hz (50)")
    parser.add_argument("--domain-id", type=int, help="ROS domain (default: from the pid)")
    parser.add_argument("--output", type=Path, help="also write the results as JSON here")
    return parser


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    domain = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 100
    os.environ.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])))
    port = _free_udp_port()
    parameters = {"connection": f"udpin:127.0.0.1:{port}", "tick_rate": args.tick_rate,
                  "geo.anchor": "latlon", "geo.origin_latitude": ANCHOR[0],
                  "geo.origin_longitude": ANCHOR[1]}
    bridge = subprocess.Popen([sys.executable, "-m", "poam_ros.ros.vehicle_bridge_node",
                               "--ros-args", "--log-level", "warn",
                               *[a for name, value in parameters.items()
                                 for a in ("-p", f"{name}:={value}")]],
                              env=env, stdout=subprocess.DEVNULL)
    import rclpy  # the DDS side only

    from poam_ros.ros.bridge_probe import AutopilotThread, BridgeProbe

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    autopilot = AutopilotThread(GeoReference.local(*ANCHOR), port, args.rate)
    probe = BridgeProbe(context)
    try:
        results = _measure(args, bridge.pid, autopilot, probe)
    finally:
        probe.close()
        autopilot.close()
        rclpy.try_shutdown(context=context)
        bridge.terminate()
        wait_or_kill(bridge, 20)
    if results is None:
        return 1
    _report(args, results)
    return 0


def _measure(args, pid: int, autopilot, probe) -> dict | None:
    """The window: plans out, telemetry in, the bridge's CPU; None if it never starts."""
    vehicle = autopilot.autopilot
    vehicle.operator_mode("GUIDED")  # the operator's part: the bridge never arms
    vehicle.operator_arm()
    answer = probe.start(START_TIMEOUT)
    if answer != "commanding":
        print(f"the bridge did not start within {START_TIMEOUT:g} s: {answer}", file=sys.stderr)
        return None
    received_before, sent_before = len(probe.odometry), len(autopilot.sent)
    plans = []
    cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
    for index in range(max(1, round(args.seconds * args.plan_rate))):
        goal = GOALS[index % len(GOALS)]
        plans.append((probe.publish_plan(goal), goal))
        time.sleep(max(0.0, wall0 + (index + 1) / args.plan_rate - time.perf_counter()))
    cpu1, wall1 = cpu_seconds(pid), time.perf_counter()
    time.sleep(0.5)  # the last plan's target and odometry in flight
    sent = autopilot.sent[sent_before:]
    return {"sent_rate": len([1 for _, perf in sent if wall0 <= perf < wall1]) / (wall1 - wall0),
            "plan": summary(plan_latencies(plans, list(vehicle.targets))),
            "telemetry": summary(telemetry_latencies(sent,
                                                     probe.odometry[received_before:],
                                                     list(probe.offsets), 1.0 / args.rate)),
            "cpu_share": (cpu1 - cpu0) / (wall1 - wall0), "plans": len(plans),
            "window_s": wall1 - wall0}


def _report(args, results: dict) -> None:
    print(f"vehicle bridge against the simulated autopilot on UDP loopback: telemetry "
          f"{args.rate:g} Hz ({results['sent_rate']:.2f} Hz sent), tick {args.tick_rate:g} Hz, "
          f"{results['plans']} plans in {results['window_s']:.1f} s")
    for name, label in (("plan", "plan -> SET_POSITION_TARGET_GLOBAL_INT"),
                        ("telemetry", "GLOBAL_POSITION_INT -> odom received")):
        row = results[name]
        print(f"{label:40} median {row['median_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms  "
              f"({row['count']} messages)")
    print(f"{'bridge process CPU share':40} {100.0 * results['cpu_share']:.1f} % of one core")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({**results, "rate": args.rate,
                                           "tick_rate": args.tick_rate}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
