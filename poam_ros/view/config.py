"""Where the live view listens and how it colours the map (no Foxglove needed to read it)."""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.params import ConfigError, Params, param


@dataclass
class ViewConfig(Params):
    """Where the live view listens and how it colours the map."""

    host: str = param("127.0.0.1", "the address the view's WebSocket binds: loopback by "
                                   "default; another interface (0.0.0.0: all) exposes the "
                                   "mission's map to that network")
    port: int = param(8765, "the view's WebSocket port (0: any free port)", low=0, high=65535)
    backlog: int = param(64, "messages kept per client before a slow client's oldest are "
                             "dropped", low=1)
    mean_range: list = param([], "low, high of the mean layers' colour range; empty: the first "
                                 "map's range widened by margin", unit="m")
    margin: float = param(0.1, "the first map's mean range is widened by this share of its "
                               "span on each side", low=0.0)

    def validate(self) -> None:
        if self.mean_range and (len(self.mean_range) != 2
                                or not self.mean_range[0] < self.mean_range[1]):
            raise ConfigError(f"ViewConfig.mean_range must be empty or low < high, got "
                              f"{self.mean_range!r}")
