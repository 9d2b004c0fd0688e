"""``poam-ros record`` as a process: stopped by SIGINT, SIGTERM or ``--duration`` it leaves a
complete bag (metadata.yaml with every message it received); bad options are one clear
line."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Range  # noqa: E402

from poam_ros.bags import BagReader  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def start_recorder(bag: Path, *options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "poam_ros", "record", "-o", str(bag),
                             *options], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_leaves_a_complete_bag(ros_domain_id, make_node, spin_until, tmp_path,
                                        signum):
    bag = tmp_path / "bag"
    process = start_recorder(bag, "sonar/range")
    try:
        node = make_node("sounder")
        publisher = node.create_publisher(Range, "sonar/range", QoSProfile(
            depth=100, reliability=ReliabilityPolicy.RELIABLE))
        # Wait until the recorder has subscribed (the publisher sees it).
        assert spin_until(lambda: publisher.get_subscription_count() > 0, node,
                          timeout=60.0), "the recorder never subscribed"
        for k in range(50):
            publisher.publish(Range(range=float(k)))
            time.sleep(0.002)
        spin_until(lambda: False, node, timeout=1.0)
        process.send_signal(signum)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["message_count"] == 50, output
    reader = BagReader(bag)
    assert [m.topic for m in reader.messages()] == ["/sonar/range"] * 50
    assert not reader.report.damaged
    assert "/sonar/range" in output and "50" in output


def test_duration_stops_it_by_itself_with_a_complete_bag(ros_domain_id, tmp_path):
    bag = tmp_path / "bag"
    started = time.monotonic()
    process = start_recorder(bag, "--duration", "2", "sonar/range")
    try:
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert time.monotonic() - started >= 2.0
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["message_count"] == 0 and f"{bag}: 0 message(s)" in output


def test_an_existing_bag_is_one_clear_line(tmp_path):
    (tmp_path / "bag").mkdir()
    result = subprocess.run([sys.executable, "-m", "poam_ros", "record", "-o",
                             str(tmp_path / "bag")], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2  # refused before anything starts, as every bad option
    assert result.stderr.strip().splitlines()[-1] == \
        f"poam-ros record: {tmp_path / 'bag'} exists already; a bag is never overwritten"
