"""The link model: never more than B bytes in any 1-s window (counted over a bounded run),
only inside the sender's TDMA slot, latency and loss applied (seeded, statistically)."""

import numpy as np
import pytest

from poam_ros.fleet.link import (
    OVERSIZE,
    QUEUE_FULL,
    SECOND,
    LinkChannel,
    LinkConfig,
    LinkSchedule,
    nanoseconds,
)
from poam_ros.params import ConfigError


def run(config, seed=0, vehicles=("a", "b", "c"), duration=120.0, step=0.05, size=40):
    """Every vehicle tries to send a ``size``-byte packet every ``step`` s for ``duration``
    s, then the channel drains; returns the channel and every delivery."""
    channel = LinkChannel(config, vehicles, seed=seed)
    deliveries = []
    for k in range(int(duration / step)):
        now = k * step
        for name in vehicles:
            channel.send(name, now, bytes([k % 256]) * size)
            deliveries += channel.advance(now)
    deliveries += channel.advance(duration + 1000.0)
    return channel, deliveries


def departures(channel, deliveries, sender, latency):
    """(time [s], size) of each of ``sender``'s packets that left, from its deliveries to
    one receiver (no loss)."""
    receiver = next(name for name in channel.vehicles if name != sender)
    return [(d.time - latency, len(d.packet)) for d in deliveries
            if d.sender == sender and d.receiver == receiver]


def peak_window(events) -> int:
    """The most bytes that left in any half-open window (t - 1, t], counted here."""
    times = np.array([t for t, _ in events])
    sizes = np.array([s for _, s in events])
    return max(int(sizes[(times > t - 1 + 1e-12) & (times <= t + 1e-12)].sum()) for t in times)


@pytest.mark.parametrize("bandwidth", [100.0, 1000.0, 250.0])
def test_never_more_than_the_budget_in_any_second(bandwidth):
    config = LinkConfig(bandwidth=bandwidth, max_packet_bytes=100, queue_packets=10_000)
    channel, deliveries = run(config, duration=30.0, size=100)  # 2,000 B/s offered
    for sender in channel.vehicles:
        events = departures(channel, deliveries, sender, 0.0)
        assert len(events) == channel.sent[sender] > 0
        assert peak_window(events) <= bandwidth
        assert channel.schedules[sender].peak_window_bytes <= bandwidth
        # and the budget is used: the link is saturated, so it carries as many whole packets
        # a second as fit in B
        span = events[-1][0] - events[0][0]
        assert sum(size for _, size in events) >= 0.95 * (bandwidth // 100) * 100 * span


def test_unlimited_bandwidth_sends_at_once():
    channel, deliveries = run(LinkConfig(queue_packets=10_000), duration=5.0)
    assert all(channel.queued(name) == 0 for name in channel.vehicles)
    assert channel.sent["a"] == 100
    assert channel.schedules["a"].peak_window_bytes == 20 * 40


def test_a_sender_speaks_only_in_its_slot():
    config = LinkConfig(bandwidth=1000.0, slot_length=2.0, slots=4, queue_packets=10_000)
    channel, deliveries = run(config, vehicles=("a", "b", "c"), duration=40.0)
    for k, sender in enumerate(channel.vehicles):
        times = np.array([t for t, _ in departures(channel, deliveries, sender, 0.0)])
        phase = np.mod(times, 8.0)
        assert len(times) and ((phase >= 2.0 * k) & (phase < 2.0 * (k + 1))).all(), sender


def test_latency_delays_every_packet_and_nothing_arrives_early():
    config = LinkConfig(latency=3.5, queue_packets=10_000)
    channel = LinkChannel(config, ["a", "b"])
    channel.send("a", 10.0, b"x" * 20)
    assert channel.advance(13.49) == []
    (delivery,) = channel.advance(13.5)
    assert (delivery.time, delivery.sender, delivery.receiver) == (13.5, "a", "b")


def test_loss_is_independent_per_receiver_at_the_stated_rate_and_seeded():
    config = LinkConfig(loss_probability=0.3, queue_packets=10_000)
    channel, deliveries = run(config, seed=5, duration=50.0)
    chances = sum(channel.sent.values()) * 2  # two receivers each
    lost = sum(channel.lost.values())
    assert lost + len(deliveries) == chances == 6000
    assert abs(lost / chances - 0.3) < 4 * np.sqrt(0.3 * 0.7 / chances)
    again, repeated = run(config, seed=5, duration=50.0)
    assert [d.time for d in repeated] == [d.time for d in deliveries]
    _, other = run(config, seed=6, duration=50.0)
    assert [d.time for d in other] != [d.time for d in deliveries]


def test_a_full_queue_and_an_oversize_packet_are_dropped_and_counted():
    config = LinkConfig(bandwidth=100.0, max_packet_bytes=200, queue_packets=3)
    channel = LinkChannel(config, ["a", "b"])
    assert not channel.send("a", 0.0, b"x" * 101)  # over one second's budget
    for _ in range(5):
        channel.send("a", 0.0, b"x" * 60)
        channel.advance(0.0)
    assert channel.dropped == {OVERSIZE: 1, QUEUE_FULL: 1}  # one left at once, three wait


def test_the_schedule_says_when_a_packet_may_leave():
    schedule = LinkSchedule(LinkConfig(bandwidth=100.0, slot_length=1.0, slots=2, slot=1))
    assert schedule.capacity(SECOND // 2) == 0  # slot 0's time
    assert schedule.capacity(SECOND) == 100
    schedule.record(SECOND, 70)
    assert schedule.capacity(3 * SECOND // 2) == 30
    # 2 s frees the bytes, but 2-3 s is slot 0's
    assert schedule.earliest(3 * SECOND // 2, 50) == 3 * SECOND
    assert schedule.earliest(3 * SECOND // 2, 30) == 3 * SECOND // 2


def test_window_edges_are_exact_at_the_epoch_s_seconds():
    """At ROS time since 1970 (1.8e9 s, where a float of seconds resolves 0.2 µs) a packet
    that waits for the budget leaves exactly one second after the one that filled it."""
    epoch = 1_800_000_000.123456789
    channel = LinkChannel(LinkConfig(bandwidth=100.0, queue_packets=100), ["a", "b"])
    for _ in range(20):
        channel.send("a", epoch, b"x" * 60)
    deliveries = channel.advance(epoch + 30.0)
    assert len(deliveries) == 20
    assert channel.schedules["a"].peak_window_bytes == 60
    gaps = np.diff([nanoseconds(d.time) for d in deliveries])
    assert (np.abs(gaps - SECOND) < 1000).all()


def test_the_configuration_is_checked():
    with pytest.raises(ConfigError, match="slot"):
        LinkConfig(slots=2, slot=2)
    with pytest.raises(ConfigError, match="unlimited"):
        LinkConfig(bandwidth=0.5)
    assert LinkConfig(bandwidth=100.0, max_packet_bytes=256).packet_limit == 100
    with pytest.raises(ConfigError, match="twice"):
        LinkChannel(LinkConfig(), ["a", "a"])
