"""Throughput of the sensor_ingest node on a multibeam stream, through DDS, nothing lost.

The ingest runs as its own process (the ``sensor_ingest`` executable's code), on a private
DDS domain limited to this host. This process plays the vehicle: it publishes odometry and
one multibeam swath per ping at an offered rate, and counts the samples that come back on
``samples``. The swaths are synthetic (a fan of ``--beams`` beams over a sloping seafloor,
every beam a hit), built before the clock starts.

A run offers ``--samples`` samples at ``rate`` samples/s; the ingest cuts a batch every
``--batch`` samples, so every sample must come back. Its throughput is the samples that
came back over the time from the first ping sent to the last batch received. A run counts
only when nothing was lost: every sample came back, ``/diagnostics`` shows no drop and no
message lost in transport. Rates double from ``--rate`` until a run loses something or
falls behind (below 95 % of the offered rate); each rate runs ``--runs`` times and the
median is reported. With ``--filters`` the swath filters run too (voxel 0.25 m, 20-neighbour
outlier test); then merged and outlying points are counted, not lost.

    python3 -m poam_ros.benchmark.ingest_throughput [--beams 256] [--runs 3]

Imports no ROS at module level, so the package's core imports without ROS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from poam_ros import messages as msg
from poam_ros.cli.common import ArgumentParser
from poam_ros.diagnostics import IngestStatus
from poam_ros.ingest.reasons import STATISTICAL_OUTLIER, VOXEL_MERGED
from poam_ros.processes import wait_or_kill

PLANE_Z = 300.0
SPEED = 1.0  # m/s along x
HALF_EXTENT = 5000.0  # m, the workspace the samples must fall in
KEEP_UP = 0.95  # a run slower than this fraction of the offered rate has fallen behind


@dataclass
class RunResult:
    offered: float       # samples/s
    achieved: float      # samples/s that came back
    sent: int            # samples
    received: int        # samples
    accounted: int       # samples filtered out (voxel merges, outliers): not lost
    lost: int            # drops and transport losses (messages or samples)

    @property
    def clean(self) -> bool:
        """Nothing lost: every sample came back or was filtered out, no drop counted."""
        return self.lost == 0 and self.received + self.accounted == self.sent


def synthetic_swaths(beams: int, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` pings of (beams, 3) points in the sonar frame: a 120 degree fan over a
    seafloor 200-400 m below, with 0.5 m of range noise."""
    rng = np.random.default_rng(seed)
    angles = np.linspace(-1.0472, 1.0472, beams)
    swaths = []
    for k in range(count):
        depth = 300.0 + 100.0 * np.sin(0.01 * k + 0.002 * np.arange(beams))
        ranges = depth / np.cos(angles) + rng.normal(0.0, 0.5, beams)
        swaths.append(np.column_stack([np.zeros(beams), ranges * np.sin(angles),
                                       -ranges * np.cos(angles)]))
    return swaths


def _ingest_parameters(path: Path, batch: int, filters: bool) -> None:
    h = HALF_EXTENT
    lines = ["sensor_ingest:", "  ros__parameters:",
             f"    max_batch_size: {batch}",
             "    sonar_rate: 0.0",
             "    swath_max_range: 10000.0",
             f"    voxel_size: {0.25 if filters else 0.0}",
             f"    outlier_neighbors: {20 if filters else 0}",
             "    workspace:",
             f"      vertices: [{-h}, {-h}, {h}, {-h}, {h}, {h}, {-h}, {h}]"]
    path.write_text("\n".join(lines) + "\n")


class Vehicle:
    """The benchmark's node: odometry and swaths out, batches and diagnostics in."""

    def __init__(self, context):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import PointCloud2

        from poam_ros.ros import qos

        self.node = rclpy.create_node("ingest_benchmark", context=context)
        self.odom = self.node.create_publisher(Odometry, "odom", qos.SENSORS)
        self.swath = self.node.create_publisher(PointCloud2, "sonar/swath", qos.SENSORS)
        self.received = 0
        self.last_batch = 0.0
        self.ingest: IngestStatus | None = None  # the ingest's newest status
        self._lock = threading.Lock()
        self.node.create_subscription(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                      qos.DIAGNOSTICS)

    def _on_samples(self, message) -> None:
        with self._lock:
            self.received += message.width * message.height
            self.last_batch = time.perf_counter()

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            record = msg.status_record(status)
            if isinstance(record, IngestStatus):
                with self._lock:
                    self.ingest = record

    def snapshot(self) -> tuple[int, int | None, dict[str, int]]:
        """Samples received, the ingest's samples published (None before its first status)
        and its drops per reason, read together."""
        with self._lock:
            if self.ingest is None:
                return self.received, None, {}
            return self.received, self.ingest.samples_published, dict(self.ingest.dropped)

    def settled(self, timeout: float = 5.0) -> tuple[int, dict[str, int]]:
        """Samples received and the ingest's drops once its diagnostics have caught up
        with every batch received (they come once a second)."""
        deadline = time.perf_counter() + timeout
        while True:
            received, published, drops = self.snapshot()
            if published == received or time.perf_counter() > deadline:
                return received, drops
            time.sleep(0.05)


FILTERED = (VOXEL_MERGED, STATISTICAL_OUTLIER)  # filtered out, not lost


def run_once(vehicle: Vehicle, swaths, t0: float, rate: float, total: int,
             timeout: float) -> tuple[RunResult, float]:
    """Offer ``total`` samples at ``rate`` samples/s from stamp ``t0``; returns the result
    and the next free stamp."""
    beams = len(swaths[0])
    pings = total // beams
    ping_period = beams / rate
    messages, closing, t_end = _ping_messages(swaths, t0, pings)
    received_before, drops_before = vehicle.settled()
    start = time.perf_counter()
    for k, (odom, cloud) in enumerate(messages):
        delay = start + k * ping_period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        vehicle.odom.publish(odom)
        vehicle.swath.publish(cloud)
    vehicle.odom.publish(closing)
    sent = pings * beams
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        received, _, drops = vehicle.snapshot()
        if received - received_before + _grown(drops, drops_before, FILTERED) >= sent:
            break
        time.sleep(0.01)
    elapsed = vehicle.last_batch - start
    received, drops = vehicle.settled()
    accounted = _grown(drops, drops_before, FILTERED)
    lost = _grown(drops, drops_before, [k for k in drops if k not in FILTERED])
    got = received - received_before
    lost += max(0, sent - got - accounted)
    # Processed input: what came back plus what the filters merged or removed.
    achieved = (got + accounted) / elapsed if elapsed > 0 else 0.0
    return RunResult(rate, achieved, sent, got, accounted, lost), t_end + 1.0


def _ping_messages(swaths, t0: float, pings: int) -> tuple[list, object, float]:
    """(odometry, swath cloud) per ping from stamp ``t0``, the closing odometry after the
    last ping (so that the last swath lies between two poses), and its stamp."""
    from std_msgs.msg import Header

    from poam_ros.ros import conversions as cv

    stamp_period = 0.1  # s of stamp time per ping: the vehicle moves 0.1 m per ping

    def odometry(t: float):
        header = Header(frame_id="map", stamp=cv.seconds_to_time(t))
        return cv.odometry_from_state(header, "base_link", (-HALF_EXTENT / 2 + SPEED * t, 0.0),
                                      0.0, SPEED, z=PLANE_Z)

    messages = []
    for k in range(pings):
        odom = odometry(t0 + k * stamp_period)
        cloud = cv.points_to_cloud(Header(frame_id="sonar_link", stamp=odom.header.stamp),
                                   swaths[k % len(swaths)])
        messages.append((odom, cloud))
    t_end = t0 + pings * stamp_period
    return messages, odometry(t_end), t_end


def _grown(counts: dict[str, int], before: dict[str, int], keys) -> int:
    """How much the ingest's drops for the reasons ``keys`` grew since ``before``."""
    return sum(counts.get(key, 0) - before.get(key, 0) for key in keys)


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.batch % args.beams or args.samples % args.batch:
        parser.error("--batch must be a multiple of --beams and --samples of --batch, so that "
                     "every sample is flushed by size")
    domain = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 100
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
    with tempfile.TemporaryDirectory() as folder:
        params = Path(folder) / "ingest.yaml"
        _ingest_parameters(params, args.batch, args.filters)
        results = _with_ingest(params, env, domain,
                               lambda vehicle: _step_rates(args, vehicle, domain))
    return _report(results, args.runs)


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="poam-ros bench ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--beams", type=int, default=256, help="beams per ping (256)")
    parser.add_argument("--samples", type=int, default=102_400,
                        help="samples offered per run (102400)")
    parser.add_argument("--batch", type=int, default=10_240,
                        help="ingest max_batch_size in samples (10240)")
    parser.add_argument("--rate", type=float, default=20_000.0,
                        help="first offered rate in samples/s; doubled each step (20000)")
    parser.add_argument("--max-rate", type=float, default=640_000.0,
                        help="highest offered rate tried (640000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per rate (3)")
    parser.add_argument("--filters", action="store_true",
                        help="run the swath filters (voxel 0.25 m, 20-neighbour outliers)")
    parser.add_argument("--verbose", action="store_true", help="print every run's counts")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="DDS domain (default: derived from the process id)")
    return parser


def _with_ingest(params: Path, env: dict, domain: int, measure):
    """Start the ingest process with ``params`` and this process's :class:`Vehicle` on
    ``domain``; once the ingest is up, ``measure(vehicle)``; then stop both."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    root = Path(__file__).resolve().parents[2]
    ingest = subprocess.Popen(
        [sys.executable, "-c", "from poam_ros.ros.ingest_node import main; main()",
         "--ros-args", "--params-file", str(params), "--log-level", "error"],
        cwd=root, env={**env, "PYTHONPATH": f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"})
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    vehicle = Vehicle(context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(vehicle.node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + 60.0
        while vehicle.swath.get_subscription_count() == 0 or vehicle.ingest is None:
            if time.monotonic() > deadline or ingest.poll() is not None:
                raise SystemExit("the ingest node did not come up within 60 s")
            time.sleep(0.1)
        return measure(vehicle)
    finally:
        executor.shutdown()
        vehicle.node.destroy_node()
        rclpy.try_shutdown(context=context)
        ingest.terminate()
        wait_or_kill(ingest, 10)


def _step_rates(args, vehicle: Vehicle, domain: int) -> list[tuple[float, list[RunResult]]]:
    """Runs at rates doubling from ``--rate`` until one loses something or falls behind."""
    swaths = synthetic_swaths(args.beams, 64)
    results: list[tuple[float, list[RunResult]]] = []
    t0, rate = 0.0, args.rate
    print(f"ingest throughput, {args.beams} beams/ping, {args.samples} samples/run, "
          f"filters {'on' if args.filters else 'off'}, domain {domain}")
    print(f"{'offered/s':>10} {'achieved/s (each run)':>40} {'lost':>6}")
    while rate <= args.max_rate:
        runs = []
        for _ in range(args.runs):
            result, t0 = run_once(vehicle, swaths, t0, rate, args.samples,
                                  timeout=max(30.0, 4 * args.samples / rate))
            runs.append(result)
            if args.verbose:
                print(f"    {result}", flush=True)
        results.append((rate, runs))
        print(f"{rate:>10.0f} {' '.join(f'{r.achieved:>12.0f}' for r in runs):>40} "
              f"{sum(r.lost for r in runs):>6}", flush=True)
        if not _sustained(rate, runs):
            break
        rate *= 2
    return results


def _sustained(rate: float, runs: list[RunResult]) -> bool:
    """Nothing lost in any run, and the median run kept up with the offered ``rate``."""
    return (all(r.clean for r in runs)
            and statistics.median(r.achieved for r in runs) >= KEEP_UP * rate)


def _report(results: list[tuple[float, list[RunResult]]], runs_per_rate: int) -> int:
    sustained = [(rate, statistics.median(r.achieved for r in runs)) for rate, runs in results
                 if _sustained(rate, runs)]
    if not sustained:
        print("no offered rate was sustained without loss")
        return 1
    rate, achieved = sustained[-1]
    print(f"sustained: {achieved:.0f} samples/s with nothing lost (median of {runs_per_rate} "
          f"runs at an offered {rate:.0f} samples/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
