"""The /diagnostics schema: each record reads back what it wrote, the wire is the one the
nodes have always published (recorded bags still read), and no module but the schema spells
a key."""

import ast
import math
from dataclasses import fields
from pathlib import Path

import pytest

from poam_ros import diagnostics as d

PACKAGE = Path(__file__).resolve().parents[2] / "poam_ros"
SCHEMA = PACKAGE / "diagnostics.py"

MAPPER = d.MapperStatus(
    samples=80, inducing_points=12, method="poam", device="cpu", updates=2, paused=False,
    buffered_batches=0, buffered_samples=0, queries_answered=3, failures=1,
    last_failure="K_uu failed", update_time=0.25, inducing_time=0.01,
    variational_time=0.125, training_time=0.1, new_samples=40, loss=-12.5,
    training_failure="", figures={"noise_std": 0.0625, "memory_size": 7, "kind": "dual"},
    map_predict_time=0.03, latency=0.5, queue_wait=0.001, node_overhead=math.nan,
    median_latency=0.4, map_stamp=9_000_000_000, journal="off: no directory", autosaves=1,
    autosave_time=0.002, channels=("depth", "temperature"), target_mean=-20.125,
    target_std=1.5, channel_target_means={"temperature": 12.25},
    channel_target_stds={"temperature": 0.75}, rejected={"duplicate": 3})
INGEST = d.IngestStatus(
    samples_accepted=120, samples_published=100, batches_published=5, batch_size=20,
    pending_readings=2, poses_kept=50, latest_pose_time=12.5, plan_waypoints_reached=1,
    plan_waypoints=4, flushes_on_grace=1, stamps_held=0, fixes_applied=2,
    last_fix_correction=0.25, dropped={d.LOST_IN_TRANSPORT: 0, "late": 2},
    clock_resets={"odom": 0, "range": 1}, channel_received={"temperature": 9},
    channel_placed={"temperature": 8}, channel_dropped={"temperature": 1})
PLANNER = d.PlannerStatus(
    state="driving", mode="lockstep", planner="poam", goals_issued=1, plan_waypoints=3,
    goal=(1.0, -2.5), position=None, maps_received=2, failures=0, clock_resets=1,
    last_failure="", last_plan_time=0.0625, dropped={"wrong_frame": 1},
    mission_state="adaptive", mission_reason="pilot survey flown")
MISSION = d.MissionStatus(
    reason="samples budget spent: 5012 of 5000; holding", samples_used=5012,
    samples_limit=5000, time_s_used=3600.5, time_s_limit=0.0, distance_m_used=7200.25,
    distance_m_limit=0.0, std_m_used=None, std_m_limit=0.0, ended_by="samples")
SIMULATOR = d.SimulatorStatus(
    sim_time=12.5, mode="lockstep", x=1.25, y=-3.5, yaw=0.5, waypoints_reached=1,
    waypoints=4, holding=True, plans_refused=0, pings_off_terrain=2)
RECORDER = d.RecorderStatus(messages=10, queued=0, lost=1, topics=2,
                            count={"/odom": 7, "/plan": 3}, lost_per_topic={"/odom": 1},
                            refused={"/x": "no type"})
BRIDGE = d.BridgeStatus(state="active", reason="flying to plan pose 1", link_up=True,
                        heartbeat_age=0.25, mode=4, armed=None, goal=(1, 3),
                        origin_offset=None, clock_offset=12.5, dropped={"reboot": 1},
                        bad_data={"bad_crc": 2}, refused={"above_surface": 1},
                        sent={"HEARTBEAT": 9}, events={"aborts": 1})
SCORES = d.ScoreStatus(epoch=3, samples=712, smse=0.0421, msll=-1.25)
FLEET_LINK = d.FleetLinkStatus(vehicle_id=3, waiting=120, soundings_sent=260,
                               soundings_received=91, packets_sent=20, bytes_sent=1940,
                               peak_window_bytes=97, pool_dropped=0,
                               refused={"xy_out_of_range": 2},
                               dropped={"bad_crc": 1, "duplicate": 0})
EXAMPLES = (MAPPER, INGEST, PLANNER, SIMULATOR, RECORDER, MISSION, BRIDGE, SCORES, FLEET_LINK)


def _same(a, b) -> bool:
    """Field by field, NaN equal to NaN."""
    return all(getattr(a, f.name) == getattr(b, f.name) or (
        isinstance(getattr(a, f.name), float) and math.isnan(getattr(a, f.name))
        and math.isnan(getattr(b, f.name))) for f in fields(a))


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: type(r).__name__)
def test_every_record_reads_back_what_it_wrote(record):
    pairs = d.encode(record)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in pairs)
    assert len({k for k, _ in pairs}) == len(pairs)  # one key per value
    assert _same(d.decode(type(record), pairs), record)
    assert _same(d.read(d.status_name("node", type(record)), pairs), record)


def test_every_record_type_has_an_example_and_its_own_kind():
    assert {type(r) for r in EXAMPLES} == set(d.RECORDS)
    assert len({cls.KIND for cls in d.RECORDS}) == len(d.RECORDS)


def test_the_wire_is_the_one_recorded_bags_hold():
    """Keys and value texts as the nodes wrote them before the schema (str(), a float's
    repr, fixed decimals where the node formatted them)."""
    sim = dict(d.encode(SIMULATOR))
    assert sim == {"sim_time": "12.500", "mode": "lockstep", "x": "1.250", "y": "-3.500",
                   "yaw": "0.5000", "waypoints_reached": "1", "waypoints": "4",
                   "holding": "True", "plans_refused": "0", "pings_off_terrain": "2",
                   "clock_held_for_consumers": "0.0"}
    ingest = dict(d.encode(INGEST))
    assert (ingest["latest_pose_time"], ingest["last_fix_correction"]) == ("12.500000", "0.250")
    assert (ingest["dropped.late"], ingest["dropped.lost_in_transport"]) == ("2", "0")
    assert (ingest["clock_resets.range"], ingest["channel.temperature.dropped"]) == ("1", "1")
    planner = dict(d.encode(PLANNER))
    assert (planner["goal"], planner["position"]) == ("1.000, -2.500", "unknown")
    assert planner["last_plan_time"] == "0.0625" and planner["dropped.wrong_frame"] == "1"
    mapper = dict(d.encode(MAPPER))
    assert mapper["method_figures"] == "noise_std,memory_size,kind"
    assert (mapper["last_noise_std"], mapper["last_memory_size"]) == ("0.0625", "7")
    assert (mapper["channels"], mapper["target_mean_temperature"]) == ("depth, temperature",
                                                                      "12.25")
    assert (mapper["last_update_time"], mapper["last_node_overhead"]) == ("0.25", "nan")
    assert (mapper["rejected_duplicate"], mapper["map_stamp"]) == ("3", "9000000000")
    recorder = dict(d.encode(RECORDER))
    assert (recorder["count./odom"], recorder["lost./odom"]) == ("7", "1")
    assert recorder["refused./x"] == "no type"


def test_a_mapper_before_its_first_update_leaves_the_update_out():
    first = d.MapperStatus(**{**{f.name: getattr(MAPPER, f.name) for f in fields(MAPPER)},
                              "update_time": None, "figures": {}, "channels": None,
                              "channel_target_means": {}, "channel_target_stds": {}})
    pairs = dict(d.encode(first))
    assert "last_update_time" not in pairs and "channels" not in pairs
    assert d.decode(d.MapperStatus, pairs.items()).update_time is None


def test_missing_required_keys_raise_unknown_ones_are_ignored():
    pairs = d.encode(SIMULATOR)
    assert _same(d.decode(d.SimulatorStatus, [*pairs, ("added_later", "1")]), SIMULATOR)
    with pytest.raises(d.DiagnosticsError, match="sim_time"):
        d.decode(d.SimulatorStatus, pairs[1:])
    with pytest.raises(d.DiagnosticsError, match="holding"):
        d.decode(d.SimulatorStatus, [(k, "yes" if k == "holding" else v) for k, v in pairs])
    listed = [(k, v) for k, v in d.encode(MAPPER) if k != "last_memory_size"]
    with pytest.raises(d.DiagnosticsError, match="figures"):
        d.decode(d.MapperStatus, listed)


def test_a_template_without_an_index_claims_no_other_key_of_its_record():
    """A dict read back by its template takes every key the template matches, so none of
    the record's other keys (nor another template's) may match it."""
    for cls in d.RECORDS:
        specs = d._specs(cls)
        for spec in specs:
            if isinstance(spec, d._Keyed) and spec.index is None:
                others = [s for s in specs if s is not spec]
                keys = [s.key if isinstance(s, d._Scalar) else s.template.format("x")
                        for s in others]
                keys += [s.index for s in others if isinstance(s, d._Keyed) and s.index]
                assert not [k for k in keys if spec.pattern.fullmatch(k)], (cls, spec.template)


def test_a_status_is_read_by_its_name():
    assert d.read("somewhere: unknown kind", []) is None
    assert isinstance(d.read("/ns/sensor_ingest: samples", d.encode(INGEST)), d.IngestStatus)
    assert d.record_type("mapper: mapping") is d.MapperStatus


# ----------------------------------------------------------------------- the scan

# Strings that equal a compound key (one with "_" or ".") but name something else.
COMPOUND_ELSEWHERE = {
    ("cli/mission.py", "sim_time"): "an EpochRecord field of the summary's final record",
    ("models/vips_bound.py", "target_mean"): "a running moment in the VIPS bound's state",
    ("benchmark/fleet.py", "sim_time"): "an epoch record's field, read back from epochs.jsonl",
    ("benchmark/fleet.py", "bytes_sent"): "sim.json's per-vehicle link summary, read back",
    ("cli/sim.py", "soundings_sent"): "sim.json's per-vehicle link summary, printed",
    ("cli/sim.py", "bytes_sent"): "sim.json's per-vehicle link summary, printed",
    ("cli/sim.py", "packets_sent"): "sim.json's per-vehicle link summary, printed",
    ("setup/fleet_launch.py", "vehicle_id"): "the fleet_link node's parameter",
}
# Plain-word keys are common words; in the modules that handle /diagnostics they may still
# index these (topic names, point fields, seed and column names), never a key-value map.
PLAIN_ELSEWHERE = {
    "x": "a PointCloud2 field", "y": "a PointCloud2 field",
    "samples": "the samples topic, a benchmark column",
    "goal": "the goal topic", "planner": "a mission seed's name",
    "device": "a benchmark column", "mode": "a node parameter's name",
    "messages": "the summary's description of a recorded bag",
    "channels": "a node parameter's name (the samples' channels)",
    "state": "the live view's status field (the mission's state)",
    "epoch": "the live view's status field", "smse": "the live view's status field",
    "msll": "the live view's status field",
    "reason": "sim.json's per-vehicle summary of a fleet (the mission's reason)",
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != SCHEMA:
            yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _handles_diagnostics(tree) -> bool:
    """Whether a module writes or reads /diagnostics (its names say so)."""
    names = {"DiagnosticStatus", "DiagnosticArray", "KeyValue", "status_record",
             "diagnostic_status", "diagnostics"}
    return any(isinstance(node, ast.Name) and node.id in names
               or isinstance(node, ast.Attribute) and node.attr in names
               or isinstance(node, ast.ImportFrom) and node.module == "poam_ros.diagnostics"
               for node in ast.walk(tree))


def _used_as_keys(tree):
    """String constants used as mapping keys: subscripts, dict-literal keys, ``.get()``'s,
    ``.pop()``'s and ``.setdefault()``'s first argument, the left side of ``in``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            yield node.slice
        elif isinstance(node, ast.Dict):
            yield from (k for k in node.keys if k is not None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop", "setdefault") and node.args:
            yield node.args[0]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            yield node.left


def _strings(nodes) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in nodes
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_module_but_the_schema_spells_a_key():
    words = d.schema_keys()
    compound = {w for w in words if "_" in w or "." in w}
    plain = words - compound
    found = []
    for name, tree in _modules():
        for line, text in _strings(ast.walk(tree)):  # f-strings' literal parts too
            if text in compound and (name, text) not in COMPOUND_ELSEWHERE:
                found.append(f"{name}:{line}: {text!r}")
        if _handles_diagnostics(tree):
            found += [f"{name}:{line}: {text!r} as a key"
                      for line, text in _strings(_used_as_keys(tree))
                      if text in plain and text not in PLAIN_ELSEWHERE]
    assert not found, "diagnostics keys outside poam_ros/diagnostics.py:\n" + "\n".join(found)


def test_the_scan_catches_a_key_spelled_in_a_reader():
    tree = ast.parse('values["last_update_time"]; f"dropped.{r}"; {"updates": 1}[k]')
    spelled = {text for _, text in _strings(ast.walk(tree))}
    assert {"last_update_time", "dropped.", "updates"} <= spelled
    assert {text for _, text in _strings(_used_as_keys(tree))} >= {"updates"}
    assert {"last_update_time", "dropped.", "updates"} <= d.schema_keys()
