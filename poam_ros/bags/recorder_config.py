"""Configuration of the recorder (``poam-ros record`` and the ``recorder`` node), ROS-free."""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.bags.bag_writer import STORAGES
from poam_ros.bags.message_types import STACK_TOPICS
from poam_ros.params import ConfigError, Params, param


@dataclass
class RecorderConfig(Params):
    """What the recorder writes, and where."""

    output: str = param("", "bag directory to create (must not exist); empty: "
                            "bags/poam_<date>-<time> under the working directory")
    topics: list[str] = param(list(STACK_TOPICS), "topics to record; relative names resolve "
                                                  "in the recorder's namespace")
    all_topics: bool = param(False, "record every topic on the graph instead of 'topics'")
    storage: str = param("mcap", "storage format", choices=STORAGES)
    compression: str = param("zstd", "MCAP chunk compression (sqlite3 stores uncompressed)",
                             choices=("zstd", "none"))
    max_bag_size: int = param(0, "start a new file once the current one holds this many "
                                 "bytes; 0: never", unit="B", low=0)
    max_bag_duration: float = param(0.0, "start a new file once the current one spans this "
                                         "much receive time; 0: never", unit="s", low=0.0)
    discovery_period: float = param(0.5, "how often the graph is searched for new topics",
                                    unit="s", low=0.01, high=60.0)
    queue_depth: int = param(10000, "subscription queue depth per topic (keep-last): the "
                                    "burst a topic may send while the intake thread waits",
                             low=1, high=1_000_000)
    flush_period: float = param(0.02, "how often received messages are written", unit="s",
                                low=0.001, high=5.0)

    def validate(self) -> None:
        if not self.all_topics and not self.topics:
            raise ConfigError("RecorderConfig.topics is empty and all_topics is false: "
                              "nothing to record")
