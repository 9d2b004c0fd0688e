"""Fixtures for the tests that need rclpy and DDS.

Each test module gets a DDS domain of its own, discovery limited to this host and an
rclpy context initialised for it, so that modules (and concurrent test runs) do not hear
each other's topics and nothing leaves the machine. Test modules that use these fixtures
start with ``pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)``: without ROS
they show as skipped while the core suite still runs, and a ROS installation that is
present but broken (a shared library not found) fails them instead of hiding behind a skip.
"""

import itertools
import os
import time

import pytest

# Domain ids whose DDS ports stay clear of Linux's ephemeral port range (32768-60999);
# 0 is left out because it is every ROS user's default domain.
VALID_DOMAIN_IDS = (*range(1, 102), *range(215, 233))
_modules_started = itertools.count()


def next_domain_id() -> int:
    """A domain id derived from the process id and a per-process counter."""
    return VALID_DOMAIN_IDS[(31 * os.getpid() + next(_modules_started)) % len(VALID_DOMAIN_IDS)]


@pytest.fixture(scope="module")
def ros_domain_id():
    """This module's domain id, also exported (with localhost-only discovery) to the
    environment so that processes the tests start join the same isolated graph."""
    domain_id = next_domain_id()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROS_DOMAIN_ID", str(domain_id))
        patch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        patch.delenv("ROS_STATIC_PEERS", raising=False)
        yield domain_id


@pytest.fixture(scope="module")
def ros_context(ros_domain_id):
    """An rclpy context initialised on this module's domain, shut down after the module."""
    rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domain_id)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def nodes_to_destroy():
    """A list whose nodes are destroyed after the test (those of :func:`make_node` and
    :func:`start_node`)."""
    nodes = []
    yield nodes
    for node in nodes:
        node.destroy_node()


@pytest.fixture
def make_node(ros_context, nodes_to_destroy):
    """``make_node(name, **node_kwargs)`` -> a Node in this module's context, destroyed
    after the test."""
    from rclpy.node import Node

    def make(name, **kwargs):
        nodes_to_destroy.append(Node(name, context=ros_context, **kwargs))
        return nodes_to_destroy[-1]

    return make


@pytest.fixture
def start_node(ros_context, nodes_to_destroy):
    """``start_node(cls, **parameters)`` -> a node of ``cls`` in this module's context with
    those parameter overrides, destroyed after the test."""
    from rclpy.parameter import Parameter

    def start(cls, **parameters):
        nodes_to_destroy.append(cls(context=ros_context, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()]))
        return nodes_to_destroy[-1]

    return start


@pytest.fixture
def spin_until(ros_context):
    """``spin_until(predicate, *nodes, timeout=5.0) -> bool``: spin the nodes until
    ``predicate()`` holds (True) or ``timeout`` seconds pass (False)."""
    from rclpy.executors import SingleThreadedExecutor

    def spin(predicate, *nodes, timeout=5.0):
        executor = SingleThreadedExecutor(context=ros_context)
        for node in nodes:
            executor.add_node(node)
        deadline = time.monotonic() + timeout
        try:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                executor.spin_once(timeout_sec=min(0.05, remaining))
            return True
        finally:
            for node in nodes:
                executor.remove_node(node)
            executor.shutdown()

    return spin


@pytest.fixture(scope="module")
def live_view():
    """A Foxglove client of a run's live view (``--view``) on a free loopback port, watching
    from before the run starts: (client, port); it stops at the module's end."""
    import socket

    from graph_helpers import RUN_LIMIT

    from tests.core.view.foxglove_client import watch_in_thread

    with socket.socket() as probe_socket:  # a free port on loopback
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    client, done, thread = watch_in_thread(port)
    yield client, port
    done.set()
    thread.join(RUN_LIMIT)
