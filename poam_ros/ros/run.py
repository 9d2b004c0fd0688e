"""Run a node as a process: ``main()`` of every node executable, and the stop signals that
the node processes and the commands (``sim``, ``record``, ``play``) share.

rclpy's own handlers make SIGINT raise ``KeyboardInterrupt`` wherever the main thread
happens to be: inside rclpy's take of a message (which then fails with a ``RuntimeError``
and exit status 1), half-way through building a task, or in a lock. :class:`StopSignals`
turns SIGINT and SIGTERM into a request that the spin loop sees between two callbacks, so
that every process stops the same orderly way; a second signal interrupts at once.

The nodes spin on rclpy's ``SingleThreadedExecutor``. rclpy 9.1's experimental
``EventsExecutor`` dispatches messages several times faster, but with the Kilted wheels its
``spin()`` busy-waits without running timers and ignores shutdown, and it cannot call a
subscription callback that takes the ``MessageInfo`` (``SystemError: null argument to
internal routine``), which the ingest needs to count messages lost in DDS.

The ROS-free core says what a user must hear (a terrain's voids filled, say) through Python's
``logging`` at warning level; :func:`run_node` passes those records, warnings and worse, into
the node's ROS log at the same severity, where a node's user looks.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Callable

import rclpy
import rclpy.logging
from rclpy.executors import Executor, SingleThreadedExecutor, TimeoutException
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from poam_ros.params import ConfigError
from poam_ros.ros.parameter_sources import check_parameter_sources

STOP_CHECK_PERIOD = 0.1  # s: how long a stop request may wait for the spin loop to see it
CALLBACK_GRACE = 5.0  # s callbacks in flight get to finish once a stop is requested
DRAIN_QUIET, DRAIN_LIMIT = 0.2, 2.0  # s: see drain()
WARN_INTERVAL = 5.0  # s, wall: the same kind of warning at most this often


class StopSignals:
    """While entered, SIGINT and SIGTERM set :attr:`requested` instead of raising
    ``KeyboardInterrupt``; the second one raises it (a user who will not wait). Enter it
    before ``rclpy.init(..., signal_handler_options=SignalHandlerOptions.NO)``."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopSignals":
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.requested.set()


def init_rclpy(args=None, context=None) -> None:
    """``rclpy.init`` without rclpy's signal handlers (see :class:`StopSignals`)."""
    rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)


def spin_until_stopped(executor: Executor, stop: threading.Event,
                       duration: float | None = None,
                       finished: threading.Event | None = None) -> None:
    """Spin ``executor`` until ``stop`` (or ``finished``: a managed node's shutdown
    transition) is set, its context shuts down, or ``duration`` seconds have passed
    (``None``: no limit)."""
    end = None if duration is None else time.monotonic() + duration
    context = executor.context
    while (not stop.is_set() and not (finished is not None and finished.is_set())
           and context.ok() and (end is None or time.monotonic() < end)):
        executor.spin_once(timeout_sec=STOP_CHECK_PERIOD)


class ThrottledWarnings:
    """A node's warnings, each kind at most every ``WARN_INTERVAL`` seconds (a mixin of
    :class:`StartingNode` and :class:`~poam_ros.ros.managed.ManagedNode`, which set
    ``_warned``: key -> time.monotonic() of its last warning)."""

    _warned: dict[str, float]

    def warn_throttled(self, key: str, message: str, expected: bool = False) -> None:
        """Log ``message`` as a warning (as information when ``expected``) unless one of the
        same ``key`` (a kind of problem) was logged less than ``WARN_INTERVAL`` seconds ago:
        the node keeps running, and its log stays readable when the problem repeats at every
        message."""
        now = time.monotonic()
        if now - self._warned.get(key, -WARN_INTERVAL) < WARN_INTERVAL:
            return
        self._warned[key] = now
        # One call site per severity: rclpy refuses a severity change at one call site.
        if expected:
            self.get_logger().info(message)
        else:
            self.get_logger().warning(message)


class StartingNode(ThrottledWarnings, Node):
    """The base of the package's plain nodes: a node whose set-up, :meth:`_start`, may fail (a
    bad parameter, an unreadable file): the node then leaves the graph at once, rather than
    when its context shuts down, and the error propagates to :func:`run_node` or the caller.

    Before it, :func:`~poam_ros.ros.parameter_sources.check_parameter_sources` reports a
    parameter file that gives the node nothing and refuses unset required values.

    A subclass with arguments of its own keeps them as attributes before it calls
    ``super().__init__(node_name, **node_kwargs)``, which calls :meth:`_start`.
    """

    def __init__(self, node_name: str, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self._warned = {}
        try:
            check_parameter_sources(self)
            self._start(node_name)
        except BaseException:
            Node.destroy_node(self)  # not the subclass's: its set-up did not complete
            raise

    def _start(self, node_name: str) -> None:
        raise NotImplementedError


def spin_node(node: Node, stop: threading.Event,
              make_executor: Callable[[], Executor] = SingleThreadedExecutor,
              duration: float | None = None) -> None:
    """Spin ``node`` until ``stop`` (or ``duration`` s, see :func:`spin_until_stopped`);
    then callbacks in flight get ``CALLBACK_GRACE`` seconds to finish, the node is destroyed
    and rclpy shut down. A managed node's shutdown transition (its ``finalized`` event, set
    when a supervisor shuts it down) also ends the spin. The log marks the start and the end
    of that teardown, so that a process that does not exit shows where it stands."""
    executor = None
    logger = node.get_logger()
    try:
        executor = make_executor()
        executor.add_node(node)
        spin_until_stopped(executor, stop, duration, getattr(node, "finalized", None))
    finally:
        logger.info("stopping")
        if executor is not None:
            executor.shutdown(timeout_sec=CALLBACK_GRACE)
        node.destroy_node()
        rclpy.try_shutdown()
        logger.info("stopped: node destroyed, middleware shut down")


def drain(node: Node, quiet: float = DRAIN_QUIET, limit: float = DRAIN_LIMIT) -> None:
    """Run ``node``'s callbacks for what its readers hold, and for what comes within ``quiet``
    s of the last, for at most ``limit`` s: a node that shows what its peers publish (the live
    view) takes their last messages, a mission's end, before it closes. Call after its spin
    has ended."""
    if not node.context.ok():
        return
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            try:
                handler, _, _ = executor.wait_for_ready_callbacks(timeout_sec=quiet)
            except TimeoutException:
                return
            handler()
            handler.result()
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0.0)


class RosLogBridge(logging.Handler):
    """Python ``logging`` records, ``level`` and worse, into the ROS logger ``logger`` at the
    same severity (info, warning, error), as the handler's formatter writes them."""

    def __init__(self, logger: RcutilsLogger, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self._logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        # One call site per severity: rclpy keys a logger's severity by its call site and
        # refuses another severity from the same line (ValueError).
        if record.levelno >= logging.ERROR:
            self._logger.error(text)
        elif record.levelno >= logging.WARNING:
            self._logger.warning(text)
        else:
            self._logger.info(text)


def run_node(make_node: Callable[[], Node], name: str, args=None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor,
             start_errors: tuple[type[Exception], ...] = ()) -> None:
    """Initialise rclpy with ``args``, build the node and :func:`spin_node` it until SIGINT
    or SIGTERM, also one that came while it was being built. A :class:`ConfigError` while
    building (a bad parameter), or one of the node's ``start_errors`` (a file it needs that
    cannot be used, with a message that names it), is logged as one line and exits with
    status 1, without a traceback: for a managed node, a failed configure at autostart
    (with ``autostart: false`` the node stays up, unconfigured, and the failure of a
    supervisor's configure is the transition's, logged by the node). The package's
    ``logging`` warnings go to the node's ROS log (:class:`RosLogBridge`)."""
    bridge = RosLogBridge(rclpy.logging.get_logger(name))
    bridge.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("poam_ros").addHandler(bridge)
    with StopSignals() as stop:
        init_rclpy(args)
        node = None
        try:
            node = make_node()
        except ConfigError as error:
            rclpy.logging.get_logger(name).fatal(f"bad configuration: {error}")
            raise SystemExit(1) from error
        except start_errors as error:
            rclpy.logging.get_logger(name).fatal(f"cannot start: {error}")
            raise SystemExit(1) from error
        finally:
            if node is None:
                rclpy.try_shutdown()
        spin_node(node, stop.requested, make_executor)
