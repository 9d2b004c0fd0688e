"""Two planners asking one central mapper: both ask at one held stamp (a lockstep clock that
stands), both hear every answer, and each takes the answer about its own points."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", exc_type=ModuleNotFoundError)

from rclpy.lifecycle import LifecycleNode  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from poam_ros.ros import conversions as cv  # noqa: E402
from poam_ros.ros.uncertainty_queries import UncertaintyQueries  # noqa: E402


def test_answers_at_one_stamp_go_to_the_planner_that_asked_about_those_points(
        ros_context, nodes_to_destroy):
    held = [Parameter("use_sim_time", value=True)]  # no /clock: the clock stands at 0
    planners = []
    for namespace in ("auv0", "auv1"):
        node = LifecycleNode("planner", namespace=namespace, context=ros_context,
                             parameter_overrides=held)
        nodes_to_destroy.append(node)
        planners.append(UncertaintyQueries(node))
    points = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[-5.0, 6.0]])]
    answers: dict[int, np.ndarray] = {}

    def ask(k: int) -> None:
        answers[k] = planners[k].ask(points[k], timeout=30.0, frame="map")

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30.0
    while any(queries._query is None for queries in planners) and time.monotonic() < deadline:
        time.sleep(0.01)
    stamps = {queries._query.stamp for queries in planners}
    assert len(stamps) == 1  # the same stamp: only the points tell the questions apart
    header = Header(stamp=cv.nanoseconds_to_time(stamps.pop()), frame_id="map")
    responses = [cv.response_to_cloud(header, xy, np.full(len(xy), 0.5 + k))
                 for k, xy in enumerate(points)]
    # Every planner hears every answer: the other's first, then (after time enough for a
    # planner that took it to give up) its own.
    for k, queries in enumerate(planners):
        assert queries.on_response(responses[1 - k]) is None
    time.sleep(0.5)
    for k, queries in enumerate(planners):
        assert queries.on_response(responses[k]) is None
    for thread in threads:
        thread.join(30.0)
    np.testing.assert_array_equal(answers[0], [0.5, 0.5])
    np.testing.assert_array_equal(answers[1], [1.5])
