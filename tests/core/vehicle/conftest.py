"""A bridge and a simulated autopilot on loopback UDP, stepped together in explicit time."""

import socket

import numpy as np
import pytest

from poam_ros.geo import GeoReference
from poam_ros.sim import SurveySimulator, VehicleConfig, default_terrain
from poam_ros.vehicle import SimulatedAutopilot, VehicleBridge, VehicleBridgeConfig
from poam_ros.workspace import Workspace

ANCHOR = GeoReference.local(47.0, 8.0)
WORKSPACE = Workspace.from_extent(-30.0, 30.0, -30.0, 30.0)
DEPTH = 30.0  # m: the simulated AUV's depth (the terrain's top lies at -61 m)
STEP = 0.05  # s of explicit time per loop turn


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Pair:
    """A bridge listening on ``port`` and an autopilot sending to it; ``run`` steps both."""

    def __init__(self, bridge: VehicleBridge, autopilot: SimulatedAutopilot, port: int):
        self.bridge, self.autopilot, self.port = bridge, autopilot, port
        self.t = 0.0
        self.records = []

    def run(self, seconds: float, until=None) -> bool:
        """Step for ``seconds`` at most (bounded), stopping early once ``until()`` holds."""
        for _ in range(int(round(seconds / STEP))):
            self.autopilot.step(self.t)
            self.records += self.bridge.tick(self.t)
            self.t += STEP
            if until is not None and until():
                return True
        return until is None

    def drain(self) -> None:
        """Let the autopilot take what the bridge sent at the last step (no time passes)."""
        self.autopilot.step(self.t - STEP)

    def ready(self) -> None:
        """Heartbeats and the origin exchanged; the operator in GUIDED and armed."""
        assert self.run(5.0, lambda: self.bridge.origin is not None)
        self.autopilot.operator_mode("GUIDED")
        self.autopilot.operator_arm()
        self.run(1.0)


@pytest.fixture
def make_pair():
    """``make_pair(vertical_mode="depth", **bridge_config) -> Pair``; closed at teardown."""
    pairs = []

    def make(vertical_mode: str = "depth", origin_offset=(0.0, 0.0), **config) -> Pair:
        port = free_udp_port()
        terrain = default_terrain((-31.0, 31.0, -31.0, 31.0))
        simulator = SurveySimulator(terrain, VehicleConfig(vertical_mode=vertical_mode,
                                                           depth=DEPTH),
                                    start_pose=(20.0, -20.0, np.pi))
        options = {"vertical": "depth" if vertical_mode == "depth" else "surface",
                   "max_depth": 100.0, "min_altitude": 1.0}
        options.update(config)
        bridge = VehicleBridge(VehicleBridgeConfig(connection=f"udpin:127.0.0.1:{port}",
                                                   **options), ANCHOR, WORKSPACE)
        autopilot = SimulatedAutopilot(simulator, ANCHOR, f"udpout:127.0.0.1:{port}",
                                       origin_offset=origin_offset)
        pairs.append(Pair(bridge, autopilot, port))
        return pairs[-1]

    yield make
    for pair in pairs:
        pair.bridge.close()
        pair.autopilot.link.close()
