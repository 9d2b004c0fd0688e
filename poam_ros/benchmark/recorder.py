"""``poam-ros bench recorder``: the recorder's sustained rate without loss.

Three processes, as on a robot, on a DDS domain of their own limited to this host:
``poam-ros record`` (the recorder under test), a sounder that publishes ``--count``
sonar-sized messages (``sensor_msgs/Range``, 48 bytes serialized, serialized once and
published as bytes) at each of ``--rates`` messages per second, paced in bursts every
0.5 ms, reliable, keep-last ``--depth``, and this process, which starts both, waits, stops
the recorder with SIGINT and reads the bag back.

Reported per rate: the rate offered, the rate the sounder achieved, the messages it
published (a publish call that fails, a reliable writer whose history is full, is not
published), the messages read back from the bag, the loss (offered − stored; the
recorder's own count of gaps in the sounder's sequence numbers beside it), the CPU time
per message of the recorder process (DDS's threads, chiefly its receive thread, and the
Python threads: the intake, the writer) and of the sounder, and the load average before
the run. A rate is sustained without loss when every message offered is in the bag. On a
machine with few cores the sounder (Python too, 20–35 µs a message here) and other jobs
compete with the recorder: read the rates beside the load and the CPU per message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from poam_ros.cli.common import ArgumentParser

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "/sonar/range"
SETTLE = 2.0  # s after the last publish for the recorder to take what is in flight


def _cpu_seconds(pid: int) -> dict[str, float]:
    """User + system CPU time so far of process ``pid``'s threads (Linux /proc): Fast DDS's
    (named ``dds.*``: receive, events) and the others (Python's: intake, writer, main)."""
    tick, times = os.sysconf("SC_CLK_TCK"), {"dds": 0.0, "python": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        kind = "dds" if name.startswith("dds.") else "python"
        times[kind] += (int(fields[11]) + int(fields[12])) / tick
    return times


def sound(rate: float, count: int, depth: int) -> int:
    """The sounder: wait for the recorder, say ``ready``, wait for ``go`` on stdin, publish,
    print the outcome as one JSON line."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Range
    from std_msgs.msg import Header

    rclpy.init(args=[])
    node = rclpy.create_node("bench_sounder")
    publisher = node.create_publisher(Range, TOPIC, QoSProfile(
        depth=depth, reliability=ReliabilityPolicy.RELIABLE))
    deadline = time.monotonic() + 60.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if publisher.get_subscription_count() == 0:
        print(json.dumps({"error": "the recorder did not subscribe within 60 s"}), flush=True)
        return 1
    print("ready", flush=True)
    sys.stdin.readline()
    data = serialize_message(Range(header=Header(frame_id="sonar_link"), range=1234.5,
                                   min_range=1.0, max_range=2000.0))
    failures = sent = 0
    cpu, start = time.process_time(), time.perf_counter()
    # Paced in bursts of what is due every 0.5 ms, sleeping between them: a busy-wait
    # would take a whole core from the recorder on a small machine.
    while sent < count:
        due = min(count, int((time.perf_counter() - start) * rate) + 1)
        while sent < due:
            try:
                publisher.publish(data)
            except RuntimeError:  # rclpy's RCLError: the writer's history stayed full
                failures += 1
            sent += 1
        time.sleep(0.0005)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"achieved": count / elapsed, "failures": failures,
                      "cpu_per_message": cpu / count, "message_bytes": len(data)}),
          flush=True)
    time.sleep(SETTLE)  # keep the writer up while the recorder asks for repairs
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def run_rate(rate: float, count: int, depth: int, bag: Path, env: dict) -> dict:
    """One rate: recorder and sounder as processes; the outcome as a dict."""
    from poam_ros.bags import BagReader

    recorder = subprocess.Popen([sys.executable, "-m", "poam_ros", "record", "-o", str(bag),
                                 TOPIC], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    sounder = subprocess.Popen([sys.executable, "-m", "poam_ros.benchmark.recorder",
                                "--sound", str(rate), str(count), str(depth)], cwd=ROOT,
                               env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        ready = sounder.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the sounder did not start: {ready}")
        load = os.getloadavg()[0]
        before = _cpu_seconds(recorder.pid)
        sounder.stdin.write("go\n")
        sounder.stdin.flush()
        outcome = json.loads(sounder.stdout.readline())
        time.sleep(SETTLE)
        after = _cpu_seconds(recorder.pid)
        sounder.wait(timeout=60)
    finally:
        for process in (sounder, recorder):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        output, _ = recorder.communicate(timeout=120)
    stored = sum(1 for message in BagReader(bag).messages() if message.topic == TOPIC)
    gaps = re.search(r"\((\d+) lost before the recorder\)", output)
    return {**outcome, "rate": rate, "offered": count, "published": count - outcome["failures"],
            "stored": stored, "lost": count - stored,
            "gaps": int(gaps.group(1)) if gaps else 0, "load": load,
            **{f"recorder_{kind}_cpu_per_message": (after[kind] - before[kind]) / max(stored, 1)
               for kind in after}}


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench recorder", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=float, nargs="+", default=[10000, 20000, 30000])
    parser.add_argument("--count", type=int, default=100000, help="messages per rate")
    parser.add_argument("--depth", type=int, default=1000, help="publisher queue depth")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="DDS domain (default: derived from the process id)")
    parser.add_argument("--sound", nargs=3, type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sound:
        rate, count, depth = args.sound
        return sound(rate, int(count), int(depth))
    domain = args.domain_id if args.domain_id is not None else 1 + os.getpid() % 100
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    print(f"{args.count} messages per rate, publisher depth {args.depth}, domain {domain}, "
          f"{os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        for rate in args.rates:
            r = run_rate(rate, args.count, args.depth, Path(workdir) / f"rate_{int(rate)}",
                         env)
            dds, python = r["recorder_dds_cpu_per_message"], r["recorder_python_cpu_per_message"]
            print(f"offered {r['rate']:>6.0f}/s  achieved {r['achieved']:>6.0f}/s  "
                  f"published {r['published']:>7}  stored {r['stored']:>7}  "
                  f"lost {r['lost']:>6} (recorder saw {r['gaps']} in gaps)  "
                  f"CPU/msg recorder {(dds + python) * 1e6:4.1f} µs (DDS {dds * 1e6:4.1f}, "
                  f"Python {python * 1e6:4.1f}), sounder {r['cpu_per_message'] * 1e6:4.1f} µs  "
                  f"load {r['load']:.1f}  {'lossless' if not r['lost'] else 'LOST'}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
