"""Frames of the ROS-free mission for the live view (``poam-ros mission --view``).

Called after every decision epoch (``Mission.run``'s ``on_epoch``): it takes what the epoch
left (the vehicle's pose and trail, the leg flown, its samples, the model's inducing inputs)
and a snapshot of the model, whose map the view's own thread predicts on a grid of at most
``cells`` cells a side, so that the mission's next epoch does not wait for it.
"""

from __future__ import annotations

import math

import numpy as np

from poam_ros.diagnostics import encode
from poam_ros.mapping.channels import channel_names
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.view.frames import MapView, ViewFrame
from poam_ros.view.server import LiveView


class MissionFeed:
    """Shows ``mission`` (a :class:`~poam_ros.mission.Mission`) on ``view``, epoch by epoch."""

    def __init__(self, view: LiveView, mission, cells: int = 128) -> None:
        self._view = view
        self._mission = mission
        xmin, xmax, ymin, ymax = mission.workspace.bounds
        resolution = max(xmax - xmin, ymax - ymin) / cells
        self.grid = MapGrid(mission.workspace.bounds, resolution, mission.workspace)
        self._channels = channel_names(mission.setup.ingest.channels)

    def __call__(self, record) -> None:
        mission = self._mission
        x, y, yaw = (float(v) for v in mission.auv.pose[:3])
        snapshot = mission.loop.snapshot()
        memory = getattr(mission.model, "memory_samples", None)  # a dual GP's (xy, z)
        self._view.show(ViewFrame(
            stamp=record.sim_time, pose=(x, y, 0.0, yaw), trail=mission.trail[:, :2],
            plan=mission.last_plan, soundings=mission.last_batch[:, :3],
            inducing=np.asarray(mission.model.inducing_inputs),
            memory=None if memory is None else np.column_stack(memory()),
            map=lambda: map_view(snapshot, self.grid, self._channels),
            status={"state": mission.control.state, "epoch": record.epoch,
                    "samples": record.num_samples,
                    # the reason and budgets, as mission/state's key-values under ROS
                    "mission": dict(encode(mission.control.status())),
                    "smse": _number(record.smse), "msll": _number(record.msll),
                    "last_update_s": record.update_time,
                    "drops": {reason: n for reason, n in
                              mission.ingest.drops.counts.items() if n}}))


def map_layers(channels: tuple[str, ...]) -> tuple[str, ...]:
    """The layer names :func:`map_view` gives for ``channels`` (the depth first)."""
    return ("mean", "std", *(f"{name}/{layer}" for name in channels[1:]
                             for layer in ("mean", "std")))


def map_view(loop: MappingLoop, grid: MapGrid, channels: tuple[str, ...]) -> MapView:
    """``loop``'s map on ``grid``: the depth's ``mean``/``std``, each further channel's
    ``<name>/mean``/``<name>/std``."""
    layers = loop.layers(grid, lengthscale=False)
    named = {"mean": layers.mean, "std": layers.std}
    for name, mean, std in zip(channels[1:], layers.channel_means, layers.channel_stds):
        named[f"{name}/mean"], named[f"{name}/std"] = mean, std
    return MapView(grid.origin, grid.resolution, named)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None
