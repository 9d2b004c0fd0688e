"""The DDS side of the map-latency benchmark: send a samples batch, time its map.

:class:`LatencyProbe` publishes batches on ``samples`` as an ingest node would, and times
each until the ``map`` stamped with the batch's stamp arrives (the mapper stamps a map with
the newest samples it holds); the mapper's /diagnostics message for that map gives its own
account (update time, map prediction, node overhead). All times are ``time.monotonic()``
seconds of this process.
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.diagnostics import MapperStatus, status_name
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos


class LatencyProbe:
    """A client of one mapper node (``mapper_name``) in ``context``."""

    def __init__(self, context: Context, mapper_name: str = "mapper",
                 samples_type: int = PointField.FLOAT32, frame: str = "map") -> None:
        self.node = Node("map_latency_probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._status_name = status_name(mapper_name, MapperStatus)
        self._samples_type, self._frame = samples_type, frame
        self._maps: dict[int, float] = {}  # map stamp -> arrival
        self._diagnostics: dict[int, MapperStatus] = {}  # map stamp -> the mapper's status
        self._samples = self.node.create_publisher(PointCloud2, "samples", qos.SAMPLES)
        self.node.create_subscription(PointCloud2, "map", self._on_map, qos.LATCHED)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                      qos.DIAGNOSTICS)

    def _on_map(self, message: PointCloud2) -> None:
        self._maps[msg.time_to_nanoseconds(message.header.stamp)] = time.monotonic()

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == self._status_name:
                record = msg.status_record(status)
                if record.map_stamp:  # 0: no map yet
                    self._diagnostics.setdefault(record.map_stamp, record)

    def spin_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.executor.spin_once(timeout_sec=min(0.05, remaining))
        return True

    def wait_for_mapper(self, timeout: float) -> bool:
        """Until the mapper subscribes to ``samples`` and its first diagnostics came."""
        self.node.create_subscription(DiagnosticArray, "/diagnostics",
                                      lambda message: setattr(self, "_heard", True),
                                      qos.DIAGNOSTICS)
        self._heard = False
        return self.spin_until(lambda: self._samples.get_subscription_count() > 0
                               and self._heard, timeout)

    def measure(self, xy: np.ndarray, z: np.ndarray, stamp_ns: int,
                timeout: float) -> tuple[float, MapperStatus] | None:
        """Send one batch; (seconds until its map arrived, the mapper's diagnostics for
        it), or None when no map came within ``timeout``. ``stamp_ns`` must exceed every
        earlier batch's."""
        header = Header(frame_id=self._frame, stamp=cv.nanoseconds_to_time(stamp_ns))
        cloud = cv.samples_to_cloud(header, xy, z, datatype=self._samples_type)
        sent = time.monotonic()
        self._samples.publish(cloud)
        if not self.spin_until(lambda: stamp_ns in self._maps and stamp_ns in
                               self._diagnostics, timeout):
            return None
        return self._maps[stamp_ns] - sent, self._diagnostics[stamp_ns]

    def destroy(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
