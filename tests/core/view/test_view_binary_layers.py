"""The live view colours a seabed class on its fixed scales (probability 0 … 1, entropy
0 … ln 2), whatever the first map holds, and the depth as before."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("foxglove", exc_type=ModuleNotFoundError)

from poam_ros.view import frames  # noqa: E402
from poam_ros.view.config import ViewConfig  # noqa: E402
from poam_ros.view.server import LiveView  # noqa: E402

LAYERS = ("mean", "std", "seabed_class/mean", "seabed_class/std")


def test_a_class_map_is_coloured_on_its_fixed_scales():
    grid = np.full((2, 2), 0.3)
    view_map = frames.MapView(np.zeros(2), 1.0, {
        "mean": np.full((2, 2), -100.0), "std": np.ones((2, 2)),
        "seabed_class/mean": grid, "seabed_class/std": grid / 10})
    with LiveView(ViewConfig(port=0), std_scale_max=20.0, layers=LAYERS) as view:
        view.show(frames.ViewFrame(stamp=1.0, pose=(0.0, 0.0, 0.0, 0.0), map=view_map))
        deadline = time.monotonic() + 10.0  # the frame is logged on the view's own thread
        while len(view.ranges) < len(LAYERS) and time.monotonic() < deadline:
            time.sleep(0.01)
        ranges = dict(view.ranges)
    assert ranges["/map/seabed_class/mean"] == (0.0, 1.0)
    assert ranges["/map/seabed_class/std"] == (0.0, math.log(2.0))
    assert ranges["/map/std"] == (0.0, 20.0)
