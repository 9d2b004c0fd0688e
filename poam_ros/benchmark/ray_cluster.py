"""A sweep's missions as Ray tasks: ``poam-ros bench sweep --cluster ray`` (a local Ray started
on demand) or ``--cluster ray://HOST:PORT`` (an existing cluster's Ray Client server).

Each mission is one task that asks for ``num_cpus`` = ``--threads`` (at least 1) and, when
the mapping parameters select CUDA, one GPU. A task runs :func:`~.sweep.run_one` into a
folder of its own worker's and returns the files it wrote; this process writes them into the
sweep's ``runs/`` and ``figures/``, the status file last, so a cluster's nodes need no shared
disk for the results and resume works exactly as with the local pool (a run with a status
file is done). They do need the terrain files at the same path as here (``--data-dir``), and
this package installed in the same version. A task whose worker dies (a node lost, a process
killed) is retried by Ray up to :data:`RETRIES` times; Ctrl-C cancels the tasks in flight.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Callable

from poam_ros.dependencies import MissingDependency, import_optional
from poam_ros.params import ConfigError

log = logging.getLogger(__name__)

RETRIES = 3  # times Ray reruns a mission whose worker died


def ray_module():
    """Ray, or ``ConfigError`` naming the install command."""
    try:
        return import_optional("ray", "--cluster ray")
    except MissingDependency as error:
        raise ConfigError(str(error)) from None


def check_cluster(cluster: str) -> None:
    """``ConfigError`` unless ``cluster`` is ``ray`` or ``ray://HOST:PORT`` and Ray imports."""
    if cluster != "ray" and not (cluster.startswith("ray://") and ":" in cluster[6:]):
        raise ConfigError(f"--cluster must be ray or ray://HOST:PORT, got {cluster!r}")
    ray_module()


def run_on_ray(cluster: str, todo: list, base, out: Path, figure_seeds: set[int],
               threads: int, done: Callable[[object], None]) -> None:
    """Run the specs ``todo`` as Ray tasks on ``cluster``, writing each one's files under
    ``out`` as it finishes and calling ``done(spec)``. Raises ``KeyboardInterrupt`` after
    cancelling the tasks in flight."""
    ray = ray_module()
    started = not ray.is_initialized()
    if started:
        ray.init(address=None if cluster == "ray" else cluster, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    gpus = 1 if str(base.mapping.device).startswith("cuda") else 0
    task = ray.remote(num_cpus=max(threads, 1), num_gpus=gpus, max_retries=RETRIES)(_mission)
    pending = {task.remote(spec, base, spec.seed in figure_seeds, threads): spec
               for spec in todo}
    try:
        while pending:
            [finished], _ = ray.wait(list(pending), num_returns=1)
            spec = pending.pop(finished)
            write_files(out, ray.get(finished))
            done(spec)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


def write_files(out: Path, files: dict[str, bytes]) -> None:
    """``files`` (path relative to the sweep folder -> content) under ``out``; the status
    file (``runs/<run>.json``) last, so that a run counts as done only once all is there."""
    for name in sorted(files, key=lambda name: name.startswith("runs/")
                       and name.endswith(".json")):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])


def _mission(spec, base, figure: bool, threads: int) -> dict[str, bytes]:
    """On a Ray worker: :func:`~.sweep.run_one` into a temporary folder; its files."""
    from poam_ros.benchmark.sweep import run_one, set_threads

    set_threads(threads)
    with tempfile.TemporaryDirectory(prefix="poam_ros_sweep_") as folder:
        run_one(spec, base, Path(folder), figure)
        return {path.relative_to(folder).as_posix(): path.read_bytes()
                for path in Path(folder).rglob("*") if path.is_file()}
