"""``poam-ros bench view``: what the live view costs the simulated mission.

Runs ``poam-ros sim`` and ``poam-ros sim --view`` with a Foxglove client connected (a
``websockets`` client that subscribes to every channel the viewer advertises and decodes
nothing, as a browser that keeps up would), interleaved ``--rounds`` times (plain, viewed,
plain, viewed, ...), each on the same setup, and prints each run's wall time, the decisions'
sample counts (the view must not change them) and the median ratio viewed / plain. The
machine is noisy: only the ratio within one interleaved run means anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from poam_ros.cli.common import ArgumentParser
from poam_ros.dependencies import import_optional


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _subscribe_all(port: int, done: threading.Event, counts: dict[str, int]) -> None:
    websockets = import_optional("websockets", "bench view")

    while not done.is_set():
        try:
            connection = await websockets.connect(f"ws://127.0.0.1:{port}",
                                                  subprotocols=["foxglove.sdk.v1"])
            break
        except OSError:
            await asyncio.sleep(0.2)
    else:
        return
    async with connection as client:
        while not done.is_set():
            try:
                data = await asyncio.wait_for(client.recv(), 0.5)
            except asyncio.TimeoutError:
                continue
            except websockets.ConnectionClosed:
                return
            if isinstance(data, str):
                message = json.loads(data)
                if message["op"] == "advertise":
                    await client.send(json.dumps({"op": "subscribe", "subscriptions": [
                        {"id": channel["id"], "channelId": channel["id"]}
                        for channel in message["channels"]]}))
            else:
                counts["messages"] = counts.get("messages", 0) + 1


def run(arguments: list[str], out: Path, view: bool) -> dict:
    """One ``poam-ros sim`` into ``out``; with ``view``, a client watching throughout."""
    port = free_port()
    command = [sys.executable, "-m", "poam_ros", "sim", *arguments, "--out", str(out)]
    if view:
        command += ["--view", "--view-port", str(port)]
    done, counts = threading.Event(), {}
    client = threading.Thread(target=lambda: asyncio.run(_subscribe_all(port, done, counts)),
                              daemon=True)
    if view:
        client.start()
    start = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    done.set()
    if view:
        client.join(10.0)
    if finished.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{finished.stderr[-2000:]}")
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    return {"view": view, "wall": wall, "samples": [e["num_samples"] for e in epochs],
            "messages": counts.get("messages", 0)}


def main(argv=None) -> int:
    parser = ArgumentParser(prog="poam-ros bench view", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="plain and viewed runs each")
    parser.add_argument("--out", type=Path, default=Path("results/bench_view"))
    parser.add_argument("sim_arguments", nargs=argparse.REMAINDER,
                        help="poam-ros sim's own options, after --")
    args = parser.parse_args(argv)
    arguments = [a for a in args.sim_arguments if a != "--"]
    runs = []
    for index in range(args.rounds):
        for view in (False, True):
            result = run(arguments, args.out / f"{'view' if view else 'plain'}_{index}", view)
            runs.append(result)
            print(f"{'sim --view' if view else 'sim':10} round {index}: {result['wall']:.1f} s, "
                  f"{len(result['samples'])} epochs, {result['samples'][-1]} samples"
                  + (f", {result['messages']} messages to the client" if view else ""),
                  flush=True)
    plain = [r for r in runs if not r["view"]]
    viewed = [r for r in runs if r["view"]]
    ratios = [v["wall"] / p["wall"] for p, v in zip(plain, viewed)]
    same = all(v["samples"] == p["samples"] for p, v in zip(plain, viewed))
    print(f"median wall time viewed / plain: {statistics.median(ratios):.3f} "
          f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)}); the same decisions: {same}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "view_cost.json").write_text(json.dumps(
        {"runs": runs, "ratios": ratios, "same_decisions": same}, indent=1))
    return 0 if same else 1
