"""The shipped Foxglove layout: the code's, naming only topics the view or a bag has."""

import json
from pathlib import Path

from poam_ros.bags.message_types import STACK_TOPICS
from poam_ros.view import topics
from poam_ros.view.layout import layout, layout_topics

SHIPPED = Path(__file__).resolve().parents[3] / "config" / "foxglove_layout.json"


def test_the_shipped_layout_is_the_code_s_at_the_default_ranges():
    assert json.loads(SHIPPED.read_text()) == json.loads(json.dumps(layout()))


def test_the_layout_names_only_topics_the_view_or_a_bag_has():
    bag = {topic if topic.startswith("/") else f"/{topic}" for topic in STACK_TOPICS}
    named = layout_topics(layout())
    assert named <= set(topics.TOPICS) | bag
    assert {topics.MEAN, topics.STD, topics.FIX, topics.STATUS, "/map", "/plan"} <= named


def test_a_run_s_layout_colours_its_grids_over_its_ranges():
    shown = layout({topics.MEAN: (-120.0, -80.0)})["configById"]["3D!map"]["topics"]
    assert (shown[topics.MEAN]["minValue"], shown[topics.MEAN]["maxValue"]) == (-120.0, -80.0)
    assert (shown[topics.STD]["minValue"], shown[topics.STD]["maxValue"]) == (0.0, 50.0)
