"""One vehicle's end of the link: only as much leaves as the link allows, the most novel
first, and a teammate's packet is taken once, an echo of its own never."""

import numpy as np
import pytest

from poam_ros.fleet.encoding import Plan, Soundings
from poam_ros.fleet.link import LinkChannel
from poam_ros.fleet.relay import DUPLICATE, OWN_ECHO, FleetLink, FleetLinkConfig
from poam_ros.params import ConfigError


def fleet_link(vehicle_id, **link):
    return FleetLink(FleetLinkConfig.from_dict({"vehicle_id": vehicle_id, "link": link}))


def test_two_vehicles_share_soundings_within_the_budget_each_once():
    """A sends 2,000 soundings over a 100 B/s link in slot 0 of 2; B takes each packet
    once, within the budget, and never sends A's soundings back."""
    link = {"bandwidth": 100.0, "slot_length": 1.0, "slots": 2, "latency": 0.5}
    a, b = fleet_link(1, **link), fleet_link(2, **link, slot=1)
    channel = LinkChannel(a.config.link, ["a", "b"])
    rng = np.random.default_rng(0)
    xy = rng.uniform(-500, 500, (2000, 2))
    a.offer(xy, -50.0 - xy[:, :1] / 100, stamp=1.0)
    received = []
    for k in range(600):  # 60 s in steps of 0.1 s
        now = k * 0.1
        for name, end in (("a", a), ("b", b)):
            if (packet := end.outgoing(now)) is not None:
                channel.send(name, now, packet)
        for delivery in channel.advance(now):
            end = b if delivery.receiver == "b" else a
            if (taken := end.receive(delivery.packet)) is not None:
                received.append((delivery.receiver, taken))
    assert all(receiver == "b" for receiver, _ in received)
    assert b.outgoing(1000.0) is None  # nothing of A's is offered again
    soundings = np.vstack([packet.xy for _, packet in received])
    assert len(soundings) == b.soundings_received == a.soundings_sent > 0
    assert len(np.unique(soundings, axis=0)) == len(soundings)  # none twice
    assert a.schedule.peak_window_bytes <= 100
    assert channel.schedules["a"].peak_window_bytes <= 100
    # 30 slots of 1 s, each one 100-byte packet of (100 - 19) // 6 = 13 soundings
    assert len(soundings) == 13 * len(received) and 28 <= len(received) <= 30
    # the first soundings spread over the area rather than follow the order measured
    first = soundings[:13]
    assert np.ptp(first[:, 0]) > 600 and np.ptp(first[:, 1]) > 600


def test_an_echo_and_a_repeat_are_dropped_and_counted():
    a, b = fleet_link(1), fleet_link(2)
    a.offer([[0.0, 0.0], [10.0, 0.0]], [[-10.0], [-11.0]], stamp=3.0)
    packet = a.outgoing(0.0)
    taken = b.receive(packet)
    assert isinstance(taken, Soundings) and len(taken.xy) == 2
    assert b.receive(packet) is None and a.receive(packet) is None
    assert b.rejected == {DUPLICATE: 1} and a.rejected == {OWN_ECHO: 1}
    assert b.receive(packet[:-1]) is None and sum(b.codec.dropped.values()) == 1
    status = b.status()
    assert (status.vehicle_id, status.soundings_received, status.packets_sent) == (2, 2, 0)
    assert status.dropped[DUPLICATE] == 1 and status.dropped["truncated"] == 1
    assert sum(status.dropped.values()) == 2 and not any(status.refused.values())
    assert (a.status().soundings_sent, a.status().bytes_sent) == (2, len(packet))


def test_a_plan_travels_as_far_as_a_packet_holds():
    a, b = fleet_link(1, bandwidth=100.0), fleet_link(2, bandwidth=100.0)
    waypoints = np.column_stack([np.arange(40.0), np.zeros(40)])
    plan = b.receive(a.plan_packet(5.0, waypoints))
    assert isinstance(plan, Plan) and plan.time == 5.0
    assert np.array_equal(plan.waypoints, waypoints[:20])  # (100 - 19) // 4 waypoints
    assert a.plan_packet(5.5, waypoints) is None  # the second's budget is spent


def test_plans_take_at_most_every_other_packet_while_soundings_wait():
    """A plan waiting at every chance to send (announcements faster than the link's chances)
    leaves every other packet; the soundings leave in between."""
    link, teammate = fleet_link(0, bandwidth=100.0), fleet_link(1, bandwidth=100.0)
    link.offer(np.column_stack([np.arange(500.0), np.zeros(500)]), np.ones(500), 1.0)
    waypoints = np.column_stack([np.arange(20.0), np.ones(20)])
    kinds = [type(teammate.receive(link.plan_packet(2.0 + tick, waypoints)
                                   or link.outgoing(2.0 + tick))).__name__
             for tick in range(6)]  # a second apart: the budget lets one packet leave each
    assert kinds == ["Plan", "Soundings"] * 3
    link.pool.take(len(link.pool))  # none wait: plans follow plans
    assert link.plan_packet(9.0, waypoints) is not None and link.plan_packet(10.0, waypoints)


def test_a_packet_limit_that_holds_no_sounding_is_refused():
    with pytest.raises(ConfigError, match="cannot hold a sounding"):
        fleet_link(0, max_packet_bytes=24)
