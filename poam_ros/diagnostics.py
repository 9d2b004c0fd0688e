"""The ``/diagnostics`` schema: what each node reports, typed, and the one codec both sides use.

A node's ``diagnostic_msgs/DiagnosticStatus`` carries its state as ``KeyValue`` strings; the
monitor of ``poam-ros sim``, the latency benchmark, the ingest benchmark and the offline
remap read them back. Every key, its type and its text form are declared here, once, as a
frozen, keyword-only dataclass per status (:class:`MapperStatus`, :class:`IngestStatus`,
:class:`PlannerStatus`, :class:`SimulatorStatus`, :class:`RecorderStatus`,
:class:`BridgeStatus`, :class:`ScoreStatus`, and the planner's ``mission/state``
:class:`MissionStatus`); writers
build a record and :func:`encode` it, readers :func:`decode` (or :func:`read`) it and use its
attributes. No key is spelled anywhere else (``tests/core/test_diagnostics.py`` scans the
package), so a renamed key fails in a unit test, not in a graph run.

The wire (kept as the nodes have always written it, so that recorded bags still read):

* a scalar field is one key: ``str()`` of the value (a float's repr, which reads back
  exactly; ``True``/``False``), or ``format(value, spec)`` where the field names a spec
  (``sim_time`` ``.3f``);
* an optional field (``X | None``) is left out when None, or written as its ``none`` text
  where it has one (``latest_pose_time: none``);
* a tuple field is its items joined by its separator (``goal: 1.000, 2.000``);
* a dict field (counters per reason, per topic, per channel) is one key per entry, named by
  its template: ``dropped.{}`` -> ``dropped.late``, ``channel.{}.placed`` ->
  ``channel.temperature.placed``. A dict with an ``index`` key also writes its entries'
  names, comma-separated, under that key (``method_figures``), and reads only those back.

Reading: a missing key of a required field raises :class:`DiagnosticsError` (a status from
another version of the stack), a missing optional key reads as its default, and keys the
record does not declare are ignored, so that a newer writer does not break an older reader.
A value that does not parse as its type raises :class:`DiagnosticsError` (a ``ValueError``).

A status is named ``<node name>: <kind>``; each record class holds its kind (``KIND``), and
:func:`read` picks the class by it. The managed nodes' records (mapper, ingest, planner) carry
the node's lifecycle state (``inactive`` or ``active``: they report while configured); a
status without it (a recording of an older stack) reads as None.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from functools import cache, cached_property
from typing import ClassVar, Iterable, Union

#: the drop reason the ingest node counts beside its core's (``IngestStatus.dropped``):
#: readings DDS lost between the sensor and the node, told by a gap in their sequence
LOST_IN_TRANSPORT = "lost_in_transport"

Figure = Union[int, float, str]  # a method's own figure: read back as a number where it is


class DiagnosticsError(ValueError):
    """A status that does not read as its record: a missing key or an unparsable value."""


# ------------------------------------------------------------------ field declarations

def key(name: str, *, spec: str = "", none: str | None = None, sep: str = ", ",
        default=...):
    """A field written under the key ``name``: ``format(value, spec)`` (``str()`` without a
    spec); None as ``none`` (left out when ``none`` is None); tuple items joined by ``sep``.
    A field with a ``default`` is optional: a status without the key reads as the default."""
    metadata = {"key": name, "spec": spec, "none": none, "sep": sep}
    if default is ...:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def keyed(template: str, *, index: str | None = None):
    """A dict field written one key per entry, ``template.format(entry name)``; with
    ``index``, the entries' names also go, comma-separated, under that key."""
    return field(default_factory=dict, metadata={"template": template, "index": index})


# ------------------------------------------------------------------------- records

@dataclass(frozen=True, kw_only=True)
class MapperStatus:
    """The mapper's model, its last update (None before the first), its latency from a
    batch's arrival to its map (s), its journal, and the MSLL baseline of the samples it
    holds: the depth's, and with channels each further channel's."""

    KIND: ClassVar[str] = "mapping"

    samples: int = key("samples")
    inducing_points: int = key("inducing_points")
    method: str = key("method")
    device: str = key("device")
    updates: int = key("updates")
    paused: bool = key("paused")
    buffered_batches: int = key("buffered_batches")
    buffered_samples: int = key("buffered_samples")
    queries_answered: int = key("queries_answered")
    failures: int = key("failures")
    last_failure: str = key("last_failure")
    update_time: float | None = key("last_update_time", default=None)
    inducing_time: float | None = key("last_inducing_time", default=None)
    variational_time: float | None = key("last_variational_time", default=None)
    training_time: float | None = key("last_training_time", default=None)
    new_samples: int | None = key("last_new_samples", default=None)
    loss: float | None = key("last_loss", default=None)
    training_failure: str | None = key("last_training_failure", default=None)
    # the method's own figures (UpdateReport.extra): inducing inputs added, bound gap, ...
    figures: dict[str, Figure] = keyed("last_{}", index="method_figures")
    map_predict_time: float = key("last_map_predict_time")
    latency: float = key("last_latency")
    queue_wait: float = key("last_queue_wait")
    node_overhead: float = key("last_node_overhead")
    median_latency: float = key("median_latency")
    map_stamp: int = key("map_stamp")  # ns, the header stamp of the last map published
    # ns, the newest samples stamp that map holds (its stamp, unless it added only unstamped
    # samples: then the map's is 1 ns past the map before it); 0 when none was stamped
    data_stamp: int = key("data_stamp", default=0)
    journal: str = key("journal")
    autosaves: int = key("autosaves")
    autosave_time: float = key("last_autosave_time")
    channels: tuple[str, ...] | None = key("channels", default=None)  # with channels only
    target_mean: float | None = key("target_mean", default=None)  # the depth's
    target_std: float | None = key("target_std", default=None)
    channel_target_means: dict[str, float] = keyed("target_mean_{}")  # further channels'
    channel_target_stds: dict[str, float] = keyed("target_std_{}")
    rejected: dict[str, int] = keyed("rejected_{}")  # samples refused, per reason
    lifecycle_state: str | None = key("lifecycle_state", default=None)  # managed nodes


@dataclass(frozen=True, kw_only=True)
class IngestStatus:
    """The ingest's counts: samples, batches, drops per reason, clock resets per stream,
    and each channel's readings received, placed and dropped."""

    KIND: ClassVar[str] = "samples"

    samples_accepted: int = key("samples_accepted")
    samples_published: int = key("samples_published")
    batches_published: int = key("batches_published")
    batch_size: int = key("batch_size")
    pending_readings: int = key("pending_readings")
    poses_kept: int = key("poses_kept")
    latest_pose_time: float | None = key("latest_pose_time", spec=".6f", none="none")  # s
    plan_waypoints_reached: int = key("plan_waypoints_reached")
    plan_waypoints: int = key("plan_waypoints")
    flushes_on_grace: int = key("flushes_on_grace")
    stamps_held: int = key("stamps_held")
    fixes_applied: int = key("fixes_applied")
    last_fix_correction: float = key("last_fix_correction", spec=".3f")  # m
    dropped: dict[str, int] = keyed("dropped.{}")
    clock_resets: dict[str, int] = keyed("clock_resets.{}")
    channel_received: dict[str, int] = keyed("channel.{}.received")
    channel_placed: dict[str, int] = keyed("channel.{}.placed")
    channel_dropped: dict[str, int] = keyed("channel.{}.dropped")
    lifecycle_state: str | None = key("lifecycle_state", default=None)  # managed nodes


@dataclass(frozen=True, kw_only=True)
class PlannerStatus:
    """The planner's state, its goals, the vehicle's position (m; None before odometry),
    its failures and its inputs dropped per reason."""

    KIND: ClassVar[str] = "planning"

    state: str = key("state")
    mode: str = key("mode")
    planner: str = key("planner")
    goals_issued: int = key("goals_issued")
    plan_waypoints: int = key("plan_waypoints")
    goal: tuple[float, float] = key("goal", spec=".3f")
    position: tuple[float, float] | None = key("position", spec=".3f", none="unknown")
    maps_received: int = key("maps_received")
    failures: int = key("failures")
    clock_resets: int = key("clock_resets")
    last_failure: str = key("last_failure")
    last_plan_time: float = key("last_plan_time")  # s
    dropped: dict[str, int] = keyed("dropped.{}")
    lifecycle_state: str | None = key("lifecycle_state", default=None)  # managed nodes
    mission_state: str = key("mission_state", default="")  # MissionStatus's state
    mission_reason: str = key("mission_reason", default="")


@dataclass(frozen=True, kw_only=True)
class MissionStatus:
    """The planner's mission (``mission/state``: the status's message is the state name,
    :mod:`poam_ros.planners.mission_control`): the reason for its last change and, per
    budget, what is used and its limit (0: no such budget). ``std_m_used`` is None before a
    map gave it."""

    KIND: ClassVar[str] = "mission"

    reason: str = key("reason")
    samples_used: int = key("samples_used")
    samples_limit: int = key("samples_limit")
    # the samples of the map that was counted (samples_used is its own ones with
    # samples_counted: own): the map a monitor must score before the mission is over
    samples_mapped: int | None = key("samples_mapped", default=None)
    time_s_used: float = key("time_s_used")  # s
    time_s_limit: float = key("time_s_limit")
    distance_m_used: float = key("distance_m_used")  # m
    distance_m_limit: float = key("distance_m_limit")
    std_m_used: float | None = key("std_m_used", none="unknown")  # m
    std_m_limit: float = key("std_m_limit")
    ended_by: str | None = key("ended_by", none="none")  # the budget that ended it


@dataclass(frozen=True, kw_only=True)
class SimulatorStatus:
    """The simulated vehicle: simulation time (s), pose (m, rad), plan progress, and the wall
    time (s) lockstep's clock stood for consumers to catch up (:mod:`poam_ros.sim.pacing`)."""

    KIND: ClassVar[str] = "vehicle"

    sim_time: float = key("sim_time", spec=".3f")
    mode: str = key("mode")
    x: float = key("x", spec=".3f")
    y: float = key("y", spec=".3f")
    yaw: float = key("yaw", spec=".4f")
    waypoints_reached: int = key("waypoints_reached")
    waypoints: int = key("waypoints")
    holding: bool = key("holding")
    plans_refused: int = key("plans_refused")
    pings_off_terrain: int = key("pings_off_terrain")
    clock_held_for_consumers: float = key("clock_held_for_consumers", spec=".1f", default=0.0)


@dataclass(frozen=True, kw_only=True)
class ScoreStatus:
    """A simulated mission's score of its newest map against the ground truth (``poam-ros
    sim``'s monitor): the decision epoch, the map's sample count, SMSE and MSLL."""

    KIND: ClassVar[str] = "scores"

    epoch: int = key("epoch")
    samples: int = key("samples")
    smse: float = key("smse")
    msll: float = key("msll")


@dataclass(frozen=True, kw_only=True)
class RecorderStatus:
    """The recorder's bag: messages written in all and per topic, queued, lost before the
    recorder per topic, and the topics it refused (why)."""

    KIND: ClassVar[str] = "bag"

    messages: int = key("messages")
    queued: int = key("queued")
    lost: int = key("lost")
    topics: int = key("topics")
    count: dict[str, int] = keyed("count.{}")
    lost_per_topic: dict[str, int] = keyed("lost.{}")
    refused: dict[str, str] = keyed("refused.{}")


@dataclass(frozen=True, kw_only=True)
class BridgeStatus:
    """The vehicle bridge (:mod:`poam_ros.vehicle.bridge`): its state and why it is not
    commanding, the link (heartbeat age s, None before one), the autopilot's mode and
    armed flag, the plan pose flown, the EKF origin's distance from the map origin (m), the
    autopilot's boot on the stack's clock (s) and the counts: telemetry dropped, bad data,
    refusals, messages sent, events."""

    KIND: ClassVar[str] = "vehicle link"

    state: str = key("state")
    reason: str = key("reason")
    link_up: bool = key("link_up")
    heartbeat_age: float | None = key("heartbeat_age", spec=".3f", none="never")
    mode: int | None = key("mode", none="unknown")
    armed: bool | None = key("armed", none="unknown")
    goal: tuple[int, int] = key("goal")
    origin_offset: float | None = key("origin_offset", spec=".3f", none="unknown")
    clock_offset: float | None = key("clock_offset", none="unknown")  # s, boot on stack time
    dropped: dict[str, int] = keyed("dropped.{}")
    bad_data: dict[str, int] = keyed("bad_data.{}")
    refused: dict[str, int] = keyed("refused.{}")
    sent: dict[str, int] = keyed("sent.{}")
    events: dict[str, int] = keyed("events.{}")
    lifecycle_state: str | None = key("lifecycle_state", default=None)  # the node's


@dataclass(frozen=True, kw_only=True)
class FleetLinkStatus:
    """A vehicle's end of the fleet link (:mod:`poam_ros.fleet.relay`): soundings waiting,
    sent and received, packets and bytes sent, the most bytes in any 1-s window, soundings
    refused by the encoding and dropped over the pool, packets dropped per reason."""

    KIND: ClassVar[str] = "fleet link"

    vehicle_id: int = key("vehicle_id")
    waiting: int = key("waiting")
    soundings_sent: int = key("soundings_sent")
    soundings_received: int = key("soundings_received")
    packets_sent: int = key("packets_sent")
    bytes_sent: int = key("bytes_sent")
    peak_window_bytes: int = key("peak_window_bytes")
    pool_dropped: int = key("pool_dropped")
    refused: dict[str, int] = keyed("refused.{}")
    dropped: dict[str, int] = keyed("dropped.{}")


RECORDS = (MapperStatus, IngestStatus, PlannerStatus, SimulatorStatus, RecorderStatus,
           MissionStatus, BridgeStatus, ScoreStatus, FleetLinkStatus)
Record = Union[MapperStatus, IngestStatus, PlannerStatus, SimulatorStatus, RecorderStatus,
               MissionStatus, BridgeStatus, ScoreStatus, FleetLinkStatus]


def status_name(node_name: str, record_type: type) -> str:
    """``<node name>: <kind>``, the name of a node's status."""
    return f"{node_name}: {record_type.KIND}"


def record_type(name: str) -> type | None:
    """The record class of the status called ``name``, None for a status of no node here."""
    return next((cls for cls in RECORDS if name.endswith(f": {cls.KIND}")), None)


# --------------------------------------------------------------------------- codec

def encode(record) -> list[tuple[str, str]]:
    """The record as (key, value text) pairs, in field order."""
    pairs = []
    for spec, value in zip(_specs(type(record)), (getattr(record, f.name)
                                                 for f in fields(record))):
        pairs.extend(spec.encode(value))
    return pairs


def decode(record_type: type, pairs: Iterable[tuple[str, str]]):
    """The record of ``record_type`` that (key, value text) ``pairs`` hold; see the module
    docstring for missing and unknown keys."""
    values = dict(pairs)
    read = {}
    for spec in _specs(record_type):
        try:
            read.update(spec.decode(values))
        except (KeyError, ValueError) as error:  # a listed entry without its key, a bad text
            raise DiagnosticsError(f"{record_type.__name__}.{spec.name}: {error}") from None
    return record_type(**read)


def read(name: str, pairs: Iterable[tuple[str, str]]):
    """The record of the status called ``name`` (by its kind), None for another status."""
    cls = record_type(name)
    return None if cls is None else decode(cls, pairs)


def schema_keys() -> frozenset[str]:
    """Every key and every literal part of a template (``dropped.``, ``.placed``): the strings
    no module but this one may spell."""
    words = set()
    for cls in RECORDS:
        for spec in _specs(cls):
            words.update(spec.words)
    return frozenset(words)


# ----------------------------------------------------------------- field codecs

@dataclass(frozen=True)
class _Scalar:
    """One key; ``kind`` the field's type without None, ``optional`` whether None is one."""

    name: str
    key: str
    kind: object
    optional: bool
    required: bool
    spec: str
    none: str | None
    sep: str

    @property
    def words(self) -> tuple[str, ...]:
        return (self.key,)

    def encode(self, value) -> list[tuple[str, str]]:
        if value is None:
            return [] if self.none is None else [(self.key, self.none)]
        if typing.get_origin(self.kind) is tuple:
            return [(self.key, self.sep.join(format(item, self.spec) for item in value))]
        return [(self.key, format(value, self.spec) if self.spec else str(value))]

    def decode(self, values: dict[str, str]) -> dict:
        if self.key not in values:
            if self.required:
                raise DiagnosticsError(f"no {self.key!r}")
            return {}
        text = values[self.key]
        if self.optional and self.none is not None and text == self.none:
            return {self.name: None}
        return {self.name: _parse(self.kind, text, self.sep)}


@dataclass(frozen=True)
class _Keyed:
    """One key per dict entry, by ``template``; ``index`` the key listing the names. Without
    an index every key the template matches is an entry: no other key of the record may match
    it (``tests/core/test_diagnostics.py`` holds it)."""

    name: str
    template: str
    kind: object  # the values' type
    index: str | None

    @property
    def words(self) -> tuple[str, ...]:
        parts = tuple(part for part in self.template.split("{}") if part)
        return parts + ((self.index,) if self.index else ())

    @cached_property
    def pattern(self) -> re.Pattern:
        """The template as a regular expression whose group is the entry's name."""
        return re.compile(re.escape(self.template).replace(r"\{\}", "(.+)"))

    def encode(self, value: dict) -> list[tuple[str, str]]:
        pairs = [(self.template.format(entry), str(item)) for entry, item in value.items()]
        return pairs + ([(self.index, ",".join(value))] if self.index else [])

    def decode(self, values: dict[str, str]) -> dict:
        if self.index is not None:
            names = [name for name in values.get(self.index, "").split(",") if name]
            return {self.name: {name: _parse(self.kind, values[self.template.format(name)])
                                for name in names}}
        entries = {}
        for wire_key, text in values.items():
            match = self.pattern.fullmatch(wire_key)
            if match:
                entries[match.group(1)] = _parse(self.kind, text)
        return {self.name: entries}


@cache
def _specs(record_type: type) -> tuple:
    """The field codecs of ``record_type``, in field order."""
    hints = typing.get_type_hints(record_type)
    specs = []
    for f in fields(record_type):
        meta, hint = f.metadata, hints[f.name]
        if "template" in meta:
            specs.append(_Keyed(f.name, meta["template"], typing.get_args(hint)[1],
                                meta["index"]))
            continue
        members = typing.get_args(hint) if _is_union(hint) else ()
        optional = type(None) in members
        kind = next(m for m in members if m is not type(None)) if optional else hint
        required = f.default is MISSING and f.default_factory is MISSING
        specs.append(_Scalar(f.name, meta["key"], kind, optional, required, meta["spec"],
                             meta["none"], meta["sep"]))
    return tuple(specs)


def _is_union(hint) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def _parse(kind, text: str, sep: str = ", "):
    """``text`` as ``kind``: bool (``True``/``False``), int, float, str, a tuple of them
    (split at ``sep``), or the first member of a union it parses as."""
    if kind is bool:
        if text not in ("True", "False"):
            raise ValueError(f"{text!r} is not True or False")
        return text == "True"
    if kind in (int, float, str):
        return kind(text)
    if _is_union(kind):
        for member in typing.get_args(kind):
            try:
                return _parse(member, text, sep)
            except ValueError:
                pass
        raise ValueError(f"{text!r} is none of {kind}")
    if typing.get_origin(kind) is tuple:
        items = typing.get_args(kind)
        parts = text.split(sep) if text else []
        if items[-1] is Ellipsis:
            return tuple(_parse(items[0], part) for part in parts)
        if len(parts) != len(items):
            raise ValueError(f"{text!r} does not hold {len(items)} items")
        return tuple(_parse(item, part) for item, part in zip(items, parts))
    raise TypeError(f"no codec for {kind}")
