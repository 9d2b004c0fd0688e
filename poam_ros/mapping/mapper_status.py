"""The mapper's status: its counters, its last update and latencies, as one record. ROS-free.

A :class:`MapperTally` keeps what the mapper's /diagnostics reports: updates and failures (the
latest attempt's outcome), the model's size, device and method, the idle training since the
last update (steps and seconds, among the figures), samples refused per reason
(the node's own beside the model's), queries answered, the latency from a batch's arrival to
its map in parts (queue wait, update, map prediction, the rest) with its median over the last
:data:`LATENCY_WINDOW` maps, the stamp of the last map, autosaves, and the MSLL baseline of
the samples the model holds (the depth's, and with channels each channel's).
:meth:`MapperTally.record` turns it into a :class:`~poam_ros.diagnostics.MapperStatus`,
:meth:`MapperTally.health` into a level and a line. Not thread-safe: the node calls it under
its own lock.
"""

from __future__ import annotations

import statistics
from collections import Counter, deque
from typing import Sequence

import numpy as np

from poam_ros.diagnostics import MapperStatus
from poam_ros.mapping.channels import channel_names
from poam_ros.mapping.metrics import TargetBaseline
from poam_ros.models import OnlineSparseGP, UpdateReport

LATENCY_WINDOW = 20  # updates over which the median latency is reported
OK, WARN, ERROR = "ok", "warn", "error"  # the levels of :meth:`MapperTally.health`


class MapperTally:
    """What the mapper's /diagnostics reports; ``channels`` are the samples' (none: depth
    only), ``device`` and ``method`` those of the model to come."""

    def __init__(self, channels: Sequence[str] = (), device: str = "", method: str = "") -> None:
        self._channels = tuple(channels)
        self.queries = 0  # answered; survives a reset
        self.reset(device, method)

    def reset(self, device: str, method: str) -> None:
        """A new map (``~/reset``): everything but the queries answered starts again."""
        self.updates = self.failures = 0
        self.last_failure = ""
        self.failed = False  # the latest update attempt failed
        self.report: UpdateReport | None = None
        self.num_samples = self.num_inducing = 0
        self.device, self.method = device, method
        self.rejections: Counter = Counter()  # the node's own reasons
        self.model_rejections: Counter = Counter()  # the model's, copied
        self.latency = self.queue_wait = self.map_time = self.overhead = float("nan")
        self.latencies: deque = deque(maxlen=LATENCY_WINDOW)
        self.map_stamp = 0  # ns, header stamp of the last map published
        self.data_stamp = 0  # ns, the newest samples stamp in it (0: none stamped)
        # of the samples the model holds (MSLL baseline); with channels, one per channel
        self.targets: TargetBaseline | list[TargetBaseline | None] | None = None
        self.autosaves = 0
        self.autosave_time = float("nan")  # s, the last autosave's
        self.idle_steps, self.idle_time = 0, 0.0  # idle training since the last update (s)

    def loaded(self, model: OnlineSparseGP) -> None:
        """A model loaded at start, before any update."""
        self.num_samples, self.num_inducing = model.num_samples, model.inducing.shape[0]
        self.device, self.method = str(model.device), model.method

    def updated(self, model: OnlineSparseGP, report: UpdateReport,
                map_time: float = float("nan")) -> None:
        """An update (``report.skipped``: one that added nothing) and its map's prediction
        time [s]."""
        self.updates += 0 if report.skipped else 1
        if not report.skipped:
            self.idle_steps, self.idle_time = 0, 0.0
        self.failed = False
        self.report = report
        self.map_time = map_time
        self.num_samples = model.num_samples
        self.num_inducing = model.inducing.shape[0] if model.ready else 0  # also if skipped
        if model.num_samples:
            self.targets = target_baselines(model.buffer.y)
        self.device, self.method = str(model.device), model.method
        self.model_rejections = Counter(model.rejections)

    def fail(self, text: str, model: OnlineSparseGP | None = None) -> None:
        """An update attempt failed; ``model`` (if it ran) counts the samples it set aside."""
        self.failures += 1
        self.failed = True
        self.last_failure = text
        if model is not None:
            self.model_rejections = Counter(model.rejections)

    def idled(self, steps: int, seconds: float) -> None:
        """A round of ``steps`` idle training steps that took ``seconds``."""
        self.idle_steps += steps
        self.idle_time += seconds

    def autosaved(self, seconds: float) -> None:
        """An autosave of the live model that took ``seconds``."""
        self.autosaves += 1
        self.autosave_time = seconds

    def timed(self, arrival: float, taken: float, published: float, update_time: float) -> None:
        """The latency of a map published at ``published`` whose newest batch arrived at
        ``arrival`` and was taken for its update at ``taken`` (time.monotonic(), s), in parts;
        the rest beside the queue wait, the update and the map prediction is the node's."""
        self.latency, self.queue_wait = published - arrival, taken - arrival
        self.overhead = self.latency - self.queue_wait - update_time - self.map_time
        self.latencies.append(self.latency)

    def health(self, serving: bool, paused: bool) -> tuple[str, str]:
        """The level (:data:`OK`, :data:`WARN`, :data:`ERROR`) and the line of the status;
        ``serving``: a map's model answers queries."""
        if self.failed:
            return ERROR, self.last_failure
        if self.report is not None and self.report.training_failure:
            return WARN, "hyper-parameter training failed: " + self.report.training_failure
        if not serving:
            return OK, "waiting for samples"
        return OK, "paused" if paused else "mapping"

    def record(self, paused: bool, buffered: Sequence[int], journal: str) -> MapperStatus:
        """The status record; ``buffered``: the sample count of each batch waiting."""
        report = self.report
        # The MSLL baselines: one of the depth, or with channels one per channel (the
        # depth's unsuffixed), each None until its channel is measured.
        targets = self.targets if isinstance(self.targets, list) else [self.targets]
        depth, further = targets[0], dict(zip(self._channels, targets[1:]))
        further = {name: target for name, target in further.items() if target is not None}
        return MapperStatus(
            samples=self.num_samples, inducing_points=self.num_inducing,
            method=self.method, device=self.device, updates=self.updates,
            paused=paused, buffered_batches=len(buffered), buffered_samples=sum(buffered),
            queries_answered=self.queries, failures=self.failures,
            last_failure=self.last_failure,
            **({} if report is None else dict(
                update_time=report.total_time, inducing_time=report.inducing_time,
                variational_time=report.variational_time,
                training_time=report.training_time, new_samples=report.num_new,
                loss=report.loss, training_failure=report.training_failure or "",
                figures={**report.extra, **({"idle_steps": self.idle_steps,
                                             "idle_time": self.idle_time}
                                            if self.idle_steps else {})})),
            map_predict_time=self.map_time, latency=self.latency,
            queue_wait=self.queue_wait, node_overhead=self.overhead,
            median_latency=(statistics.median(self.latencies) if self.latencies
                            else float("nan")),
            map_stamp=self.map_stamp, data_stamp=self.data_stamp, journal=journal,
            autosaves=self.autosaves, autosave_time=self.autosave_time,
            channels=(tuple(channel_names(self._channels))
                      if isinstance(self.targets, list) else None),
            target_mean=None if depth is None else depth.mean,
            target_std=None if depth is None else depth.std,
            channel_target_means={name: t.mean for name, t in further.items()},
            channel_target_stds={name: t.std for name, t in further.items()},
            rejected=dict(self.model_rejections + self.rejections))


def target_baselines(targets: np.ndarray) -> TargetBaseline | list[TargetBaseline | None]:
    """The MSLL baseline of the samples' targets (N,); of each channel's measured values
    (N, D) with channels (None for a channel without any)."""
    if targets.ndim == 1:
        return TargetBaseline.of(targets)
    columns = [column[np.isfinite(column)] for column in targets.T]
    return [TargetBaseline.of(column) if len(column) else None for column in columns]
