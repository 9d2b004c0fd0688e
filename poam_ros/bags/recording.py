"""What a bag recorded, read for the offline remap (:mod:`poam_ros.bags.remap`, whose
docstring specifies the pipeline): the sensor messages and plans to feed the ingest, each
with its place in data-time order, and what the live graph recorded of itself (its maps,
its batches, its ``/diagnostics``).

A sensor message is ordered by its header stamp, through the ingest's clock rule; a plan
after the data the graph had acted on when it was sent (:meth:`Recording.place_plans`).
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from poam_ros import messages as msg
from poam_ros.bags.bag_reader import BagReader
from poam_ros.bags.message_types import MessageTypes
from poam_ros.bags.remap_config import RemapConfig, sensor_inputs, sensor_streams
from poam_ros.diagnostics import (
    DiagnosticsError,
    IngestStatus,
    SimulatorStatus,
    record_type,
)
from poam_ros.ingest import Ingest, SampleBatch
from poam_ros.ingest.clock_jumps import ClockJumps, Verdict
from poam_ros.ingest.reasons import timing_dependent

log = logging.getLogger(__name__)


@dataclass
class Recording:
    """What the first pass read off a bag: the sensor messages and plans to feed the ingest
    (``(order key ns, kind rank, sequence, topic, message, receive ns)``), and what the live
    graph recorded of itself."""

    sensors: list[tuple] = field(default_factory=list)
    plans: list[tuple] = field(default_factory=list)  # (send ns, sequence, message, receive)
    acted: list[tuple[int, int]] = field(default_factory=list)  # (send ns, data stamp ns)
    newest: dict[str, int] = field(default_factory=dict)  # per topic, newest order key
    clocks: dict[str, ClockJumps] = field(default_factory=dict)  # per topic, the ingest's rule
    periods: dict[str, float] = field(default_factory=dict)  # per topic, its stream's [s]
    offsets: Counter = field(default_factory=Counter)  # per topic, order key - stamp [ns]
    behind: Counter = field(default_factory=Counter)  # stamps behind their topic's newest
    undecodable: Counter = field(default_factory=Counter)
    live_maps: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    recorded: dict[int, np.ndarray] = field(default_factory=dict)  # live batches by stamp
    live_issues: Counter = field(default_factory=Counter)  # timing-dependent decisions
    batches: list[SampleBatch] = field(default_factory=list)  # source samples: the live ones
    sim_bag: bool = False

    @classmethod
    def read(cls, reader: BagReader, types: MessageTypes, ingest: Ingest, config: RemapConfig,
             notes: list[str]) -> Recording:
        """Pass 1: decode every wanted message; keep the sensor messages and plans for pass
        2 and what the live graph recorded of itself. A recorded batch's precision
        reconfigures ``ingest`` (the live mapper got what the live ingest sent)."""
        recording = cls()
        inputs = sensor_inputs(ingest.config, config)
        recording.periods = {topic: ingest.streams.period_of(stream) for topic, stream in
                             sensor_streams(ingest.config, config).items()}
        wanted = {config.odom_topic, config.range_topic, config.swath_topic,
                  config.plan_topic, config.map_topic, config.diagnostics_topic,
                  config.samples_topic, config.fix_topic, *inputs}
        for sequence, message in enumerate(reader.messages(wanted)):
            try:
                decoded = types.deserialize(message.data, message.msgtype)
            except Exception as error:  # noqa: BLE001 - damaged bytes: count, go on
                recording.undecodable[message.topic] += 1
                log.debug("undecodable %s message: %s", message.topic, error)
                continue
            topic, sent = message.topic, message.publish_time or message.log_time
            if topic in (config.odom_topic, config.range_topic, config.swath_topic,
                         config.fix_topic) or topic in inputs:
                recording._sensor(config, ingest, sequence, message, sent, decoded)
            elif topic == config.plan_topic:
                recording.plans.append((sent, sequence, decoded, message.log_time))
            elif topic == config.map_topic:
                recording._map(sent, decoded, notes)
            elif topic == config.diagnostics_topic:
                recording._diagnostics(decoded)
            elif topic == config.samples_topic:
                recording._samples(ingest, config, sent, decoded, notes)
        return recording

    def _sensor(self, config: RemapConfig, ingest: Ingest, sequence: int, message, sent: int,
                decoded) -> None:
        """Order a sensor message by its stamp, where the live ingest would meet it.

        The topic's stamps go through the ingest's clock rule (:class:`ClockJumps`, its
        threshold and run length, the receive time standing for the node's wall clock): a
        suspect stamp (a glitch, or the start of a clock change) keeps its place after the
        topic's newest message instead of moving every later one behind it; after a reset
        the new clock's stamps continue from the old clock's newest order key, so that a bag
        looped backwards stays in recorded order."""
        topic = message.topic
        stamp = msg.time_to_nanoseconds(decoded.header.stamp)
        clock = self.clocks.setdefault(topic, ClockJumps())
        verdict, _, _ = clock.judge(stamp / 1e9, None, ingest.config.stamp_jump_threshold,
                                    ingest.config.stamp_reset_count, message.log_time / 1e9,
                                    self.periods.get(topic, 0.0))
        newest = self.newest.get(topic)
        if verdict is Verdict.HELD:
            key = stamp if newest is None else newest
        else:
            if verdict is Verdict.RESET and newest is not None:
                self.offsets[topic] = newest - stamp
            key = stamp + self.offsets[topic]
            if newest is not None and key < newest:
                # Behind its topic's newest: it goes where the live ingest met it (just
                # after that one) and is dropped there as out of order, as live.
                self.behind[topic] += 1
                key = newest
        self.newest[topic] = key
        if topic == config.odom_topic:
            self.acted.append((sent, key))
        self.sensors.append((key, 0 if topic == config.odom_topic else 1, sequence, topic,
                             decoded, message.log_time))

    def _map(self, sent: int, decoded, notes: list[str]) -> None:
        stamp = msg.time_to_nanoseconds(decoded.header.stamp)
        if decoded.width * decoded.height:
            self.acted.append((sent, stamp))
            try:
                fields = msg.cloud_to_fields(decoded, required=("mean", "std"))
                self.live_maps[stamp] = (fields["mean"], fields["std"])
            except ValueError as error:
                notes.append(f"a live map could not be read: {error}")

    def _diagnostics(self, decoded) -> None:
        for status in decoded.status:
            if record_type(status.name) not in (SimulatorStatus, IngestStatus):
                continue  # the mapper's, planner's, recorder's: nothing here reads them
            try:
                record = msg.status_record(status)
            except DiagnosticsError:  # another version's status: its counts are not known
                continue
            self.sim_bag = self.sim_bag or isinstance(record, SimulatorStatus)
            if isinstance(record, IngestStatus):
                for reason, count in timing_dependent(record).items():
                    self.live_issues[reason] = max(self.live_issues[reason], count)

    def _samples(self, ingest: Ingest, config: RemapConfig, sent: int, decoded,
                 notes: list[str]) -> None:
        stamp = msg.time_to_nanoseconds(decoded.header.stamp)
        self.acted.append((sent, stamp))
        try:
            points = msg.cloud_to_points(decoded, ingest.config.channels)
        except ValueError as error:
            notes.append(f"a recorded samples batch could not be read: {error}")
            return
        self.recorded[stamp] = points
        wire64 = msg.cloud_is_float64(decoded)
        if wire64 != ingest.config.float64_samples:
            # The live mapper got what the live ingest sent: its precision, not the file's.
            ingest.configure(ingest.config.replace(float64_samples=wire64))
            notes.append(f"the live ingest sent {'float64' if wire64 else 'float32'} "
                         f"samples: so does the remap (float64_samples: "
                         f"{str(wire64).lower()})")
        if config.source == "samples":
            self.batches.append(SampleBatch(stamp / 1e9, points, "recorded"))

    def place_plans(self, plan_topic: str) -> None:
        """A plan acts after the data the graph had acted on when it was sent (by the send
        times, one machine's clock): in lockstep, the arrival it answers. Receive times
        would not do: a latched plan reaches a recorder that subscribes late long after it
        was sent."""
        acted = sorted(self.acted)
        sent_times = [sent for sent, _ in acted]
        newest_acted = list(itertools.accumulate((stamp for _, stamp in acted), max))
        for sent, sequence, decoded, received in self.plans:
            index = bisect.bisect_right(sent_times, sent)
            floor = newest_acted[index - 1] if index else -1
            self.sensors.append((floor, 2, sequence, plan_topic, decoded, received))
