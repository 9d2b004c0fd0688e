"""The Foxglove layout of the live view (and of a recorded bag): one definition in code.

Four panels: a 3D panel following ``base_link`` with the map's mean and std grids (their
colour ranges fixed, as the view states them), the soundings, inducing inputs, trail and
plan; a Map panel with the vehicle's fix and the workspace outline; a plot of SMSE, MSLL and
the mean std over time; and the mission's status. The same layout opens a bag recorded by
``poam-ros record`` or ``sim --record``: its 3D panel also lists the ROS topics that carry
the same content there (``/map`` as a cloud, ``/map/std`` as an occupancy grid, ``/plan``,
``/odom``). ``config/foxglove_layout.json`` is :func:`layout` at the default ranges; the view
writes one with the ranges of its run.
"""

from __future__ import annotations

import json
from pathlib import Path

from poam_ros.view import topics

#: the bag's topics that the layout also shows (ROS types: the recorder's names)
BAG_TOPICS = ("/map", "/map/std", "/map/inducing", "/plan", "/odom", "/samples")
DEFAULT_RANGES = {topics.MEAN: (-4000.0, 0.0), topics.STD: (0.0, 50.0)}  # m, embedded survey
PLOTTED = ("smse", "msll", "mean_std")


def layout(ranges: dict[str, tuple[float, float]] | None = None) -> dict:
    """The layout, the grids coloured over ``ranges`` (topic -> (low, high)) where given,
    else :data:`DEFAULT_RANGES`."""
    ranges = {**DEFAULT_RANGES, **(ranges or {})}
    grids = {topic: {"visible": topic != topics.STD, "colorField": "value",
                     "colorMode": "colormap", "colorMap": "turbo",
                     "minValue": low, "maxValue": high}
             for topic, (low, high) in ranges.items()}
    clouds = {topic: {"visible": True, "pointSize": size, "colorMode": "flat",
                      "flatColor": color}
              for topic, size, color in ((topics.SOUNDINGS, 3, "#000000ff"),
                                         (topics.INDUCING, 5, "#ff2020ff"),
                                         (topics.MEMORY, 4, "#20a0ffff"))}
    view = {**grids, **clouds, topics.SCENE: {"visible": True}, topics.POSE: {"visible": True}}
    # the bag's own topics, off until a bag is open (a name both have keeps the view's)
    bag = {topic: {"visible": False} for topic in BAG_TOPICS if topic not in view}
    return {
        "configById": {
            "3D!map": {"followTf": topics.BASE_FRAME, "followMode": "follow-position",
                       "scene": {}, "transforms": {},
                       "topics": {**view, **bag}},
            "map!world": {"layer": "map", "zoomLevel": 12,
                          "topicColors": {topics.FIX: "#ff8c00", topics.WORKSPACE: "#00a0ff"},
                          "disabledTopics": []},
            "Plot!scores": {"paths": [{"value": f"{topics.STATUS}.{key}", "enabled": True,
                                       "timestampMethod": "receiveTime"} for key in PLOTTED],
                            "showLegend": True},
            "RawMessages!status": {"topicPath": topics.STATUS, "diffEnabled": False,
                                   "expansion": "all"},
        },
        "globalVariables": {}, "userNodes": {}, "playbackConfig": {"speed": 1.0},
        "layout": {"direction": "row", "splitPercentage": 60, "first": "3D!map",
                   "second": {"direction": "column", "first": "map!world",
                              "second": {"direction": "column", "first": "Plot!scores",
                                         "second": "RawMessages!status"}}},
    }


def layout_topics(document: dict) -> set[str]:
    """Every topic a layout ``document`` names (its panels' topics, paths and colours)."""
    named = set()
    for config in document["configById"].values():
        named |= set(config.get("topics", {})) | set(config.get("topicColors", {}))
        named |= {path["value"].split(".")[0] for path in config.get("paths", [])}
        if "topicPath" in config:
            named.add(config["topicPath"])
    return named


def write_layout(path: Path, ranges: dict[str, tuple[float, float]] | None = None) -> Path:
    path.write_text(json.dumps(layout(ranges), indent=2) + "\n")
    return path
