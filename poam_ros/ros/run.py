"""Run one node as a process: ``main()`` of every node executable.

The nodes spin on rclpy's ``SingleThreadedExecutor``. rclpy 9.1's experimental
``EventsExecutor`` dispatches messages several times faster, but with the Kilted wheels its
``spin()`` busy-waits without running timers and ignores shutdown, and it cannot call a
subscription callback that takes the ``MessageInfo`` (``SystemError: null argument to
internal routine``), which the ingest needs to count messages lost in DDS.
"""

from __future__ import annotations

from typing import Callable

import rclpy
import rclpy.logging
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from poam_ros.params import ConfigError


class StartingNode(Node):
    """A node whose set-up, :meth:`_start`, may fail (a bad parameter, an unreadable file): the
    node then leaves the graph at once, rather than when its context shuts down, and the error
    propagates to :func:`run_node` or the caller."""

    def __init__(self, node_name: str, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        try:
            self._start(node_name)
        except BaseException:
            Node.destroy_node(self)  # not the subclass's: its set-up did not complete
            raise

    def _start(self, node_name: str) -> None:
        raise NotImplementedError


def run_node(make_node: Callable[[], Node], name: str, args=None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor) -> None:
    """Initialise rclpy with ``args``, build the node and spin it until shutdown.

    A :class:`ConfigError` while building (a bad parameter) is logged and exits with
    status 1, without a traceback. Ctrl-C or SIGTERM, also while starting, end it quietly;
    callbacks in flight get a few seconds to finish.
    """
    rclpy.init(args=args)
    node = executor = None
    try:
        node = make_node()
        executor = make_executor()
        executor.add_node(node)
        executor.spin()
    except ConfigError as error:
        rclpy.logging.get_logger(name).fatal(f"bad configuration: {error}")
        raise SystemExit(1) from error
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
        # Shut down (Ctrl-C, SIGTERM) while starting: nothing went wrong.
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=5.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
