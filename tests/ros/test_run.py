"""Stop signals: SIGINT and SIGTERM become a request the spin loop sees between callbacks
(never an exception raised inside rclpy), and a second one interrupts at once."""

import os
import signal
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import Int32  # noqa: E402

from poam_ros.ros.run import StopSignals, spin_until_stopped  # noqa: E402


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_first_signal_is_a_request_the_second_interrupts(signum):
    before = signal.getsignal(signum)
    with StopSignals() as stop:
        os.kill(os.getpid(), signum)
        time.sleep(0.01)  # Python runs the handler at the next bytecode of this thread
        assert stop.requested.is_set()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signum)
            time.sleep(0.01)
    assert signal.getsignal(signum) is before


def test_a_signal_during_a_callback_lets_it_finish_and_ends_the_spin(make_node):
    """The signal comes while a subscription callback runs: the callback completes, every
    message published before it is taken, and the spin returns."""
    node = make_node("stop_signal_probe")
    received = []

    def on_message(message):
        if message.data == 5:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here, not as an exception in rclpy
        received.append(message.data)

    node.create_subscription(Int32, "stop_signal_numbers", on_message, 100)
    publisher = node.create_publisher(Int32, "stop_signal_numbers", 100)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    with StopSignals() as stop:
        deadline = time.monotonic() + 10.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        for number in range(10):
            publisher.publish(Int32(data=number))
        spinner = threading.Timer(10.0, stop.requested.set)  # bounded even if it failed
        spinner.start()
        try:
            spin_until_stopped(executor, stop.requested)
        finally:
            spinner.cancel()
            executor.shutdown()
    assert 5 in received and received == sorted(received)
    assert received[-1] == 5  # the loop saw the request right after that callback
