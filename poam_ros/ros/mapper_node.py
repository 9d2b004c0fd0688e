"""The mapper node: POAM's online sparse GP behind the graph's ``samples`` and ``map`` topics.

A thin rclpy adapter. It declares the parameters, opens the map
(:class:`~poam_ros.mapping.persistence.MapPersistence`: a state file, the crash journal of a
process that did not shut down in order, or a new model) and hands it to a
:class:`~poam_ros.ros.mapper_worker.MapperWorker`, whose thread updates the model and publishes
the maps and /diagnostics; the callbacks only convert and hand over. Queries, ``~/save`` and
``~/export`` are answered from the worker's served copy of the published map's model, beside
an update in progress (:mod:`~poam_ros.ros.mapper_worker`).

Topics, services and their QoS: README.md ("mapper"). ``~/export`` writes the published map's
model on the map grid as a GeoTIFF at ``export_path``
(:mod:`poam_ros.mapping.survey_product`) in the CRS of the map frame's anchor (``geo.*``),
refused without an anchor or a map. A ``state_file`` the node cannot load stops the start with
one line naming the file; the crash journal (``journal.*``) is
:mod:`~poam_ros.mapping.persistence`'s.

Parameters: ``mapping.*`` (:class:`MappingConfig`) take effect when a model is created: at
start and on ``~/reset`` (a model resumed from ``state_file`` keeps the settings saved with
it, except the device). ``grid.*`` (:class:`MapGridConfig`), ``workspace.*`` (the map's
default extent and mask; a ``workspace.geojson`` file in lat/lon is placed with the anchor
``geo.*``, and refused without one), ``map_frame``, ``save_path``, ``export_path``,
``publish_lengthscale`` and ``std_includes_noise`` apply at once (the map is republished);
``state_file``, ``diagnostics_period``, ``evaluation_grid``, ``torch_threads``, ``channels``
(the ingest's: a field per channel in the samples, a model of D = 1 + C outputs), ``journal.*``
and ``geo.*`` (the map frame's anchor, :class:`GeoConfig`) are read-only.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header
from std_srvs.srv import SetBool, Trigger

from poam_ros import messages as msg
from poam_ros.geo import GeoConfig, GeoError, GeoReference, resolve_workspace
from poam_ros.mapping.channels import check_method
from poam_ros.mapping.journal import JournalConfig
from poam_ros.mapping.map_grid import MapGrid, MapGridConfig
from poam_ros.mapping.metrics import evaluation_points
from poam_ros.mapping.persistence import MapPersistence
from poam_ros.mapping.survey_product import export_map
from poam_ros.models import (
    MappingConfig,
    ModelNotReadyError,
    NumericalError,
    StateFileError,
    resolve_device,
)
from poam_ros.params import ConfigError
from poam_ros.params.node_settings import MapperSettings, for_node
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos
from poam_ros.ros.managed import ManagedNode
from poam_ros.ros.mapper_worker import MapperConfig, MapperWorker
from poam_ros.ros.parameters import (
    add_config_callback,
    declare_config,
    proposed_config,
    read_config,
)
from poam_ros.ros.run import RosLogBridge, run_node
from poam_ros.workspace import Workspace, WorkspaceConfig

# Rejections the node counts itself, beside the model's (non-finite, duplicate, malformed).
WRONG_FRAME = "wrong_frame"
UNREADABLE_MESSAGE = "unreadable_message"


class MapperNode(ManagedNode):
    """POAM mapping node; see the module docstring for its interface. A managed node
    (:mod:`poam_ros.ros.managed`): configure opens the map and starts the update thread,
    activate subscribes to ``samples`` and ``uncertainty/query`` and publishes the map again,
    deactivate stops listening (batches already queued still go into the model, their maps
    out at the next activation), keeping the model and the journal; cleanup ends the map as
    an orderly stop does (the journal removed; ``~/save`` keeps one)."""

    start_errors = (StateFileError,)
    _worker: MapperWorker | None = None
    _persistence: MapPersistence | None = None

    def __init__(self, node_name: str = "mapper", **kwargs) -> None:
        super().__init__(node_name, **kwargs)

    def _configure(self) -> None:
        mapping = declare_config(self, MappingConfig, "mapping")
        grid_config = declare_config(self, MapGridConfig, "grid")
        settings = declare_config(self, MapperSettings,
                                  read_only=("state_file", "diagnostics_period",
                                             "evaluation_grid", "torch_threads", "channels"))
        # The samples' channels fix the model's outputs and the map's layers: set once.
        self._channels = tuple(settings.channels)
        check_method(mapping, self._channels)
        journal_config = declare_config(
            self, JournalConfig, "journal", read_only=[s.name for s in JournalConfig.specs()])
        self._georeference = GeoReference.from_config(declare_config(
            self, GeoConfig, "geo", read_only=[s.name for s in GeoConfig.specs()]))
        workspace_config = resolve_workspace(
            declare_config(self, WorkspaceConfig, "workspace"), self._georeference)
        settings.use_torch_threads()
        resolve_device(mapping.device)  # a device torch can use, or ConfigError
        config = MapperConfig(mapping, settings, self._make_grid(grid_config, workspace_config),
                              Workspace.from_config(workspace_config),
                              _evaluation_points(settings, workspace_config))
        self.add_on_set_parameters_callback(self._vet_parameters)
        add_config_callback(self, MappingConfig, self._apply_mapping, "mapping")
        add_config_callback(self, MapGridConfig, self._apply_grid, "grid")
        add_config_callback(self, WorkspaceConfig, self._apply_grid, "workspace")
        add_config_callback(self, MapperSettings, self._apply_settings)

        node = self.get_fully_qualified_name()
        self._persistence = MapPersistence(
            journal_config.replace(path=for_node(journal_config.path, node)),
            for_node(settings.save_path, node), self._channels, _ros_logger(self))
        opened = self._persistence.open(mapping, for_node(settings.state_file, node))
        self._response_pub = self.create_lifecycle_publisher(
            PointCloud2, "uncertainty/response", qos.QUERY)
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/save", self._on_save, callback_group=services)
        self.create_service(Trigger, "~/reset", self._on_reset, callback_group=services)
        self.create_service(SetBool, "~/pause", self._on_pause, callback_group=services)
        self.create_service(Trigger, "~/export", self._on_export, callback_group=services)
        if self._persistence.journal is not None and journal_config.sync_period > 0:
            self.create_timer(journal_config.sync_period, self._persistence.sync,
                              callback_group=MutuallyExclusiveCallbackGroup())

        self._worker = MapperWorker(self, config, self._persistence, opened, self._channels)
        self.create_timer(settings.diagnostics_period, self._worker.publish_diagnostics)
        self._worker.start()
        self.get_logger().info(
            f"mapping with {mapping.method} on {opened.model.device}, "
            f"{config.grid.shape[0]} x {config.grid.shape[1]} map grid in "
            f"'{settings.map_frame}'")

    def _activate(self) -> None:
        self.create_subscription(PointCloud2, "samples", self._on_samples, qos.SAMPLES)
        # Queries get a group, so that a multi-threaded executor runs a prediction for a
        # query beside incoming samples and service calls (which have theirs).
        self.create_subscription(PointCloud2, "uncertainty/query", self._on_query, qos.QUERY,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        # The served map again: maps made while inactive (a journal's replay, a loaded
        # state, an update that was under way) were not published.
        self._worker.configure()

    def _cleanup(self) -> None:
        if self._worker is not None:
            self._worker.stop()
        if self._persistence is not None:  # an orderly end: the next start begins a new map
            self._persistence.close()

    def _make_grid(self, grid: MapGridConfig, workspace: WorkspaceConfig) -> MapGrid:
        """The map grid of ``grid`` over ``workspace``, its scales for the samples' channels."""
        try:
            return MapGrid.from_config(grid, Workspace.from_config(workspace), self._channels)
        except ValueError as error:  # ConfigError is one: kept, with the grid named
            raise ConfigError(f"map grid: {error}") from error

    # ---------------------------------------------------------------- parameters
    def _vet_parameters(self, parameters) -> SetParametersResult:
        """Checks across configs and against the machine, beyond each dataclass's own."""
        try:
            mapping = proposed_config(self, MappingConfig, parameters, "mapping")
            resolve_device(mapping.device)
            check_method(mapping, self._channels)
            self._make_grid(proposed_config(self, MapGridConfig, parameters, "grid"),
                            resolve_workspace(proposed_config(self, WorkspaceConfig,
                                                              parameters, "workspace"),
                                              self._georeference))
        except (ConfigError, ValueError) as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_mapping(self, config: MappingConfig) -> None:
        self._worker.configure(republish=False, mapping=config)
        self.get_logger().info("mapping.* changed: applies from the next ~/reset")

    def _apply_grid(self, _config) -> None:
        workspace = resolve_workspace(read_config(self, WorkspaceConfig, "workspace"),
                                      self._georeference)
        grid = self._make_grid(read_config(self, MapGridConfig, "grid"), workspace)
        evaluation = _evaluation_points(self._worker.config.settings, workspace)
        self._worker.configure(grid=grid, workspace=Workspace.from_config(workspace),
                               evaluation=evaluation)

    def _apply_settings(self, settings: MapperSettings) -> None:
        self._worker.configure(settings=settings)

    # ---------------------------------------------------------------- callbacks
    def _on_samples(self, message: PointCloud2) -> None:
        arrival = time.monotonic()
        frame = self._worker.config.settings.map_frame
        if message.header.frame_id != frame:
            self._reject(WRONG_FRAME, f"samples in frame '{message.header.frame_id}', "
                                      f"expected '{frame}'")
            return
        try:
            xy, z = msg.cloud_to_samples(message, self._channels)
        except ValueError as error:
            self._reject(UNREADABLE_MESSAGE, f"unreadable samples cloud: {error}")
            return
        self._worker.put(xy, z, msg.time_to_nanoseconds(message.header.stamp), arrival)

    def _reject(self, reason: str, text: str) -> None:
        self._worker.reject(reason)
        self.warn_throttled(reason, text)

    def _on_query(self, message: PointCloud2) -> None:
        """Predictive std of a new measurement at the query's candidates (with channels,
        their covariance), from the served model, conditioned on the query's planned points
        (a fleet's teammates'); an empty response means there is no model yet (or the query
        was unusable)."""
        served, config = self._worker.query()
        frame = config.settings.map_frame
        xy, spread = np.empty((0, 2)), np.empty(0)
        if message.header.frame_id != frame:
            self.warn_throttled("query_frame", f"query in frame '{message.header.frame_id}', "
                                               f"expected '{frame}': answered empty")
        elif served is not None:
            try:
                points, planned = msg.cloud_to_query_sets(message)
                if len(planned) and not served.conditions:
                    self.warn_throttled("query_unconditioned", f"{config.mapping.method} "
                                        f"cannot condition on planned samples: answered "
                                        f"without the {len(planned)} of the query")
                # The paper's planner scores the predictive distribution of a measurement
                # (of every channel, with several), conditioned on the teammates' samples.
                spread = served.uncertainty(points, planned)
                xy = points
            except (ValueError, NumericalError, ModelNotReadyError) as error:
                self.warn_throttled("query_failed", f"query answered empty: {error}")
        self._response_pub.publish(cv.response_to_cloud(
            Header(stamp=message.header.stamp, frame_id=frame), xy, spread))

    def _on_save(self, _request, response):
        served = self._worker.served_model()
        path = self._node_file(self._worker.config.settings.save_path)
        if served is None:
            return self._answer(response, False, "no map to save yet")
        model = served.model
        try:
            model.save(path)
        except OSError as error:
            return self._answer(response, False, f"cannot save to {path}: {error}")
        return self._answer(response, True, f"saved the model of the published map "
                                            f"({model.num_samples} samples, "
                                            f"{model.inducing.shape[0]} inducing inputs) to "
                                            f"{path}")

    def _on_export(self, _request, response):
        """The served model's map on the map grid as a GeoTIFF at ``export_path``."""
        anchor = self._georeference
        if anchor is None:
            return self._answer(response, False, "no geodetic anchor (geo.anchor: none): the "
                                                 "map has no place on the Earth to export; "
                                                 "set geo.anchor to latlon or projected")
        served = self._worker.served_model()
        config = self._worker.config
        path, grid = self._node_file(config.settings.export_path), config.grid
        if served is None:
            return self._answer(response, False, "no map to export yet")
        model = served.model
        try:
            export_map(path, model, grid, anchor, config.settings.std_includes_noise,
                       self._channels)
        except (GeoError, ModelNotReadyError, NumericalError) as error:
            return self._answer(response, False, f"cannot export to {path}: {error}")
        rows, cols = grid.shape
        return self._answer(response, True, f"exported the published map ({rows} x {cols} "
                                            f"cells of {grid.resolution:g} m, "
                                            f"{model.num_samples} samples) to {path} in "
                                            f"{anchor.crs.name}")

    def _on_reset(self, _request, response):
        """Drop the model, the map and buffered batches; later samples start a new model."""
        dropped = self._worker.reset()
        return self._answer(response, True, f"map reset ({dropped} buffered batches dropped); "
                                            f"the next samples start a new "
                                            f"{self._worker.config.mapping.method} model")

    def _node_file(self, path: str) -> Path:
        """``save_path`` or ``export_path`` for this node (``{node}`` and ``~`` replaced)."""
        return Path(for_node(path, self.get_fully_qualified_name())).expanduser()

    def _answer(self, response, success: bool, message: str):
        """A service's response, logged when it did something."""
        response.success, response.message = success, message
        if success:
            self.get_logger().info(message)
        return response

    def _on_pause(self, request, response):
        buffered = self._worker.pause(bool(request.data))
        response.success = True
        response.message = (f"paused: incoming batches are buffered ({buffered} so far)"
                            if request.data else
                            f"resumed: {buffered} buffered batches go into the next update")
        return response


def _ros_logger(node: Node) -> logging.Logger:
    """A logger of the node's own (outside logging's registry, which outlives nodes)."""
    logger = logging.Logger(node.get_name())
    logger.addHandler(RosLogBridge(node.get_logger(), logging.INFO))
    return logger


def _evaluation_points(settings: MapperSettings,
                       workspace: WorkspaceConfig) -> np.ndarray | None:
    if not settings.evaluation_grid:
        return None
    return evaluation_points(Workspace.from_config(workspace), settings.evaluation_grid)


def main(args=None) -> None:
    # Threads for a query's prediction beside incoming samples and service calls.
    run_node(MapperNode, "mapper", args, lambda: MultiThreadedExecutor(num_threads=3),
             start_errors=MapperNode.start_errors)


if __name__ == "__main__":
    main()
