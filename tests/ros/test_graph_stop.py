"""How ``poam-ros sim`` stops its children: in stages (the clock source, the other nodes, the
recorder), each stage after the one before has exited, and a child that ignores SIGINT is
killed once its stage's time is up. The children here are plain Python processes that log
when SIGINT reaches them and when they exit."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from poam_ros.ros.graph import CLOCK_SOURCE, RECORDER, Child, stop_in_stages  # noqa: E402

CHILD = """
import pathlib, signal, sys, time
name = "{name}"
events = pathlib.Path("{events}")
def note(what):
    with open(events, "a") as out:
        out.write(f"{{time.monotonic()}} {{name}} {{what}}\\n")
def stop(signum, frame):
    note("sigint")
    if {ignore}:
        return
    time.sleep(0.3)  # a node's teardown
    note("exit")
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
note("ready")
while True:
    time.sleep(0.01)
"""


def start(tmp_path, name: str, events, ignore: bool = False) -> Child:
    module = f"child_{name}"
    (tmp_path / f"{module}.py").write_text(CHILD.format(name=name, events=events,
                                                        ignore=ignore))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    return Child(name, module, [], tmp_path, env)


def wait_ready(events, names, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        text = events.read_text() if events.exists() else ""
        if all(f"{name} ready" in text for name in names):
            return
        time.sleep(0.02)
    raise AssertionError(f"children not ready: {text}")


def read(events) -> dict[tuple[str, str], float]:
    times = {}
    for line in events.read_text().splitlines():
        stamp, name, what = line.split()
        times[(name, what)] = float(stamp)
    return times


def test_the_clock_source_exits_before_the_nodes_hear_sigint_and_the_observers_last(tmp_path):
    events = tmp_path / "events.txt"
    names = [RECORDER, "viewer", "sensor_ingest", "mapper", CLOCK_SOURCE]
    children = [start(tmp_path, name, events) for name in names]
    wait_ready(events, names)
    codes = stop_in_stages(children, timeout=20.0)
    assert codes == dict.fromkeys(names, 0)
    t = read(events)
    nodes = ("sensor_ingest", "mapper")
    assert all(t[(CLOCK_SOURCE, "exit")] < t[(node, "sigint")] for node in nodes)
    assert all(t[(node, "exit")] < t[(observer, "sigint")] for node in nodes
               for observer in (RECORDER, "viewer"))


def test_a_child_that_ignores_sigint_is_killed_and_the_next_stage_still_stops(tmp_path):
    events = tmp_path / "events.txt"
    children = [start(tmp_path, "mapper", events),
                start(tmp_path, CLOCK_SOURCE, events, ignore=True)]
    wait_ready(events, ["mapper", CLOCK_SOURCE])
    start_time = time.monotonic()
    codes = stop_in_stages(children, timeout=1.0)
    assert codes == {CLOCK_SOURCE: "killed", "mapper": 0}
    assert time.monotonic() - start_time < 10.0
    assert all(child.process.poll() is not None for child in children)
    assert (CLOCK_SOURCE, "sigint") in read(events)
