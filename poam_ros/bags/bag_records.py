"""What reading a bag yields: its messages, its topics, the report of what could not be read,
and the error of a bag that cannot be read at all (:mod:`poam_ros.bags.bag_reader`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple


class BagError(ValueError):
    """A bag that cannot be read at all; the message says why."""


class BagMessage(NamedTuple):
    """One stored message: ``log_time`` is the receive time in ns, ``publish_time`` the
    publisher's send time where the storage keeps it (MCAP), else the receive time."""

    topic: str
    msgtype: str
    log_time: int
    data: bytes
    publish_time: int = 0


@dataclass
class TopicInfo:
    """A topic as the bag describes it; ``count`` from metadata.yaml or the file index
    (None where neither says)."""

    name: str
    msgtype: str
    definition: str = ""
    type_hash: str = ""
    offered_qos: list = field(default_factory=list)
    count: int | None = None


@dataclass
class ReadReport:
    """What could not be read: problems (one line each) and messages lost per topic
    (``unknown_loss``: some loss could not be counted, e.g. after a truncation)."""

    problems: list[str] = field(default_factory=list)
    lost: Counter = field(default_factory=Counter)
    unknown_loss: bool = False

    @property
    def damaged(self) -> bool:
        return bool(self.problems)

    def summary(self) -> str:
        if not self.problems:
            return "the bag read completely"
        counted = sum(self.lost.values())
        if counted:
            lost = f"{counted} message(s) lost" + (" at least" if self.unknown_loss else "")
        else:
            lost = "an unknown number of messages lost" if self.unknown_loss else "no loss"
        per_topic = ", ".join(f"{topic}: {n}" for topic, n in sorted(self.lost.items()))
        return (f"{lost}{f' ({per_topic})' if per_topic else ''}; "
                + "; ".join(self.problems))
