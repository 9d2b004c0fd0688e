"""The planner's questions to the mapper: the predictive std at candidate points, asked on
``uncertainty/query`` and answered on ``uncertainty/response``, matched by stamp.

A question may carry, besides its candidates, the points where a fleet's teammates will
sample (a field ``planned`` marks them, :func:`~poam_ros.ros.conversions.query_to_cloud`);
the answer is about the candidates only, conditioned on samples at those points.

One question is open at a time (the planner's thread asks and waits); an answer to an
earlier question, or to another planner, is ignored. A planner's stamps differ between its
questions even when the clock stands still (a held simulation clock); two planners asking one
mapper (a fleet's central mapper) may share a stamp, and an answer about other points than
the question's is then the other planner's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Header

from poam_ros import messages as msg
from poam_ros.mapping.binary import ChannelSpread
from poam_ros.ros import conversions as cv
from poam_ros.ros import qos


class QueryFailed(RuntimeError):
    """The mapper gave no usable answer to an uncertainty query."""


@dataclass
class _Query:
    stamp: int  # ns, identifies the answer
    points: np.ndarray  # (N, 2) m
    done: threading.Event = field(default_factory=threading.Event)
    # std (N,) or the channels' covariance (N, D, D), with a binary channel a ChannelSpread
    spread: np.ndarray | ChannelSpread | None = None
    error: str = "no answer"


class UncertaintyQueries:
    """``node``'s questions (its lifecycle publisher on ``uncertainty/query``)."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self._publisher = node.create_lifecycle_publisher(PointCloud2, "uncertainty/query",
                                                          qos.QUERY)
        self._lock = threading.Lock()
        self._query: _Query | None = None
        self._last_stamp = 0

    def ask(self, points: np.ndarray, timeout: float, frame: str,
            planned: np.ndarray | None = None) -> np.ndarray:
        """The mapper's answer for ``points`` (N, 2) [m] in ``frame``: std (N,), the
        channels' covariance (N, D, D) or with a binary channel a
        :class:`~poam_ros.mapping.binary.ChannelSpread`; :class:`QueryFailed` without one in
        ``timeout`` s. ``planned`` (T, 2) [m]: where a fleet's teammates will sample; the std
        is then conditioned on samples there (if the mapping method can: ``docs/fleet.md``)."""
        with self._lock:
            stamp = max(self._node.get_clock().now().nanoseconds, self._last_stamp + 1)
            self._last_stamp = stamp
            query = self._query = _Query(stamp, np.asarray(points, dtype=float))
        header = Header(stamp=cv.nanoseconds_to_time(stamp), frame_id=frame)
        self._publisher.publish(cv.query_to_cloud(header, query.points, planned))
        answered = query.done.wait(timeout)
        with self._lock:
            self._query = None
        if not answered:
            raise QueryFailed(f"no answer to the uncertainty query within {timeout} s")
        if query.spread is None:
            raise QueryFailed(query.error)
        return query.spread

    def on_response(self, message: PointCloud2) -> str | None:
        """Take an answer; returns why it is unreadable (None: read, or not this question's)."""
        stamp = msg.time_to_nanoseconds(message.header.stamp)
        with self._lock:
            query = self._query
        if query is None or stamp != query.stamp:
            return None  # an answer to an earlier query, or to another planner
        unreadable = None
        try:
            points, spread = msg.cloud_to_response(message)
            if spread.ndim == 3:  # a binary channel's probability besides the covariance
                probability = msg.cloud_to_probability(message, spread.shape[1])
                spread = spread if probability is None else ChannelSpread(spread, probability)
        except ValueError as error:
            unreadable = query.error = f"unreadable answer: {error}"
        else:
            if len(spread) and not np.array_equal(points, query.points):
                # Another planner's question with the same stamp (a fleet's planners asking
                # one mapper under a held clock): this one's answer is still to come.
                return None
            if len(spread) == 0:
                query.error = "the mapper has no map to answer from"
            else:
                query.spread = spread
        query.done.set()
        return unreadable

    def fail(self, why: str) -> None:
        """End the wait for the question open, if any, with ``why``."""
        with self._lock:
            if self._query is not None:
                self._query.error = why
                self._query.done.set()
