"""``poam-ros sim``: the simulated mission over the ROS 2 graph, one process per node, watched
and scored as ``poam-ros mission`` scores the same mission without ROS (needs rclpy)."""

from __future__ import annotations

import functools
import logging
import operator
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from poam_ros.cli.common import INTERRUPTED, ArgumentParser, fail
from poam_ros.cli.mission import (
    EpochLog,
    add_setup_arguments,
    add_view_arguments,
    build_mission,
    describe,
    map_name,
    print_unmapped,
    report,
    setup_errors,
    setup_from_args,
    summarize,
)
from poam_ros.diagnostics import BridgeStatus, IngestStatus, MapperStatus
from poam_ros.ingest.reasons import NO_RETURN, OUTSIDE_WORKSPACE
from poam_ros.setup.sim_launch import VEHICLES


def sim(argv) -> int:
    """The simulated mission as the ROS 2 graph of sim.launch.xml, each node its own process:
    prints every decision epoch's SMSE/MSLL against the simulator's ground truth, stops the
    nodes at the sample budget (or Ctrl-C) and writes a summary, the records and a figure."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from poam_ros.bags import BagWriteError
    from poam_ros.models import StateFileError

    try:  # all of it before any node starts
        setup, params = setup_from_args(args)
        terrain = build_mission(setup).terrain
        _check_graph_options(args, setup, params)
    except (*setup_errors(), BagWriteError, StateFileError) as error:
        return fail("sim", error)
    try:
        from poam_ros.ros.graph import (
            CLOCK_SOURCES,
            GraphError,
            GraphOptions,
            run_graph,
            write_graph_file,
        )
    except ImportError as error:
        return fail("sim", f"needs rclpy ({error}); install the ROS 2 Kilted wheels "
                           f"(scripts/setup.sh), or run the same mission without ROS: "
                           f"poam-ros mission")
    options = GraphOptions(mode=args.mode, time_scale=args.time_scale,
                           torch_threads=args.torch_threads, stall_timeout=args.stall_timeout,
                           record=args.record, view=viewer_parameters(args, setup),
                           robots=args.robots, fleet=fleet_options(args, setup),
                           vehicle=args.vehicle, mavlink_port=args.mavlink_port)
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    effective = write_graph_file(setup, params, options, logs, terrain)
    print(f"sim: {describe(setup)}; node logs in {logs}")
    print_launch(params, effective, args.record is not None, args.view, args.robots,
                 args.vehicle, args.fleet_map == "central")
    with EpochLog(args.out) as log:
        def started(child) -> None:
            print(f"started {child.name} (pid {child.process.pid})", flush=True)
            if child.executable in CLOCK_SOURCES:  # the mission starts with the clock
                print(log.header, flush=True)

        try:
            run = run_graph(setup, terrain, effective, options, logs,
                            epoch_printer(log, args.robots), started, print_state)
        except GraphError as error:
            return fail("sim", error, 1)
    status = 0 if run.outcome == "budget" else INTERRUPTED
    unclean = {name: code for name, code in run.exit_codes.items() if code != 0}
    if unclean:
        print(f"nodes that did not stop cleanly: {unclean} (see {logs})", file=sys.stderr)
    if not run.records:
        print("poam-ros sim: stopped before the first map", file=sys.stderr)
        return status or 1
    figure = plot_final_map(run, args.out / "sim.png", setup)
    extra = mission_outcome(run, args.robots)
    if args.record is not None:
        extra["bag"] = describe_bag(args.record)
    if args.compare:
        extra["ros_free"] = compare(setup, run, args.torch_threads)
    report(summarize(run.records, run.wall_time, setup, **extra), args.out, "sim", figure)
    if args.robots > 1:
        print_vehicles(extra["vehicles"])
    print_node_counts(run.monitor)
    if args.vehicle == "mavlink":
        print_bridge(run.monitor)
    return status


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="poam-ros sim", description=sim.__doc__)
    add_setup_arguments(parser, "results/sim")
    parser.add_argument("--mode", choices=("lockstep", "realtime"),
                        help="lockstep replays the ROS-free mission (default: the file's)")
    parser.add_argument("--time-scale", type=float,
                        help="sim seconds per wall second, 0 as fast as possible (default: "
                             "the file's)")
    parser.add_argument("--torch-threads", type=int, help="the mapper's torch threads "
                                                          "(default: the file's)")
    parser.add_argument("--stall-timeout", type=float, default=600.0,
                        help="give up when no new map comes for this many seconds")
    parser.add_argument("--compare", action="store_true",
                        help="then run the ROS-free mission with the same setup and compare")
    parser.add_argument("--record", type=Path, metavar="BAG",
                        help="record the mission to this bag (a recorder node beside the "
                             "others; its parameters from the file's 'recorder' section)")
    parser.add_argument("--robots", type=int, default=1, metavar="N",
                        help="fly N simulated vehicles (/auv0, ...) on the one terrain and "
                             "clock, from distinct starts (default 1: the single vehicle)")
    parser.add_argument("--fleet-map", choices=FLEET_MAPS, default="central",
                        help="with --robots: central, one mapper (/fleet/mapper) fuses every "
                             "vehicle's samples; distributed, a mapper per vehicle fed over "
                             "the fleet's links")
    parser.add_argument("--vehicle", choices=VEHICLES, default="simulated",
                        help="simulated: the simulated AUV follows the plan; mavlink: the "
                             "vehicle_bridge flies it through the simulated AUV's MAVLink "
                             "endpoint, a simulated autopilot, over UDP on the loopback")
    parser.add_argument("--mavlink-port", type=int, default=14550,
                        help="with --vehicle mavlink, the UDP port the bridge listens on")
    parser.add_argument("--coordination", choices=("on", "off"),
                        help="with --robots: on, each planner conditions on its teammates' "
                             "announced plans, keeps apart from them and flies its share of "
                             "the pilot; off, independent planners (default: on with the "
                             "max_entropy planner, which it needs)")
    link = parser.add_argument_group("the links between vehicles (--fleet-map distributed)")
    link.add_argument("--link-bandwidth", type=float, default=0.0, metavar="B",
                      help="bytes a vehicle's link carries at most in any second (0: "
                           "unlimited)")
    link.add_argument("--link-latency", type=float, default=0.0, metavar="S",
                      help="seconds from a packet leaving to its arrival")
    link.add_argument("--link-loss", type=float, default=0.0, metavar="P",
                      help="the chance that a vehicle misses a packet")
    link.add_argument("--link-slot-length", type=float, default=1.0, metavar="S",
                      help="TDMA: each vehicle sends in its slot of this many seconds, one "
                           "slot per vehicle (0: no schedule)")
    add_view_arguments(parser)
    return parser


FLEET_MAPS = ("central", "distributed")


def fleet_options(args, setup):
    """The fleet's options from the command line (:class:`~poam_ros.setup.fleet_launch.
    FleetOptions`); checked by :func:`_check_fleet_options`."""
    from poam_ros.setup.fleet_launch import FleetOptions

    coordination = (args.coordination == "on" if args.coordination is not None else
                    setup.planning.planner == COORDINATED_PLANNER)
    link = {"bandwidth": args.link_bandwidth, "latency": args.link_latency,
            "loss_probability": args.link_loss, "slot_length": args.link_slot_length}
    return FleetOptions(central=args.fleet_map == "central", coordination=coordination,
                        link=link)


COORDINATED_PLANNER = "max_entropy"  # the only planner that scores candidates


def epoch_printer(log, robots: int):
    """``log`` (an :class:`EpochLog`), and with ``robots`` > 1 after each line the samples of
    each vehicle that the fleet's map holds."""
    if robots == 1:
        return log

    def epoch(record) -> None:
        log(record)
        print(f"{'':{log.width}} " + ", ".join(
            f"{key[len('samples_'):]} {value}" for key, value in record.extra.items()
            if key.startswith("samples_")), flush=True)
    return epoch


def print_state(namespace: str, state: str, reason: str) -> None:
    """A fleet's vehicle changed its mission state."""
    print(f"{namespace}: mission {state}: {reason}", flush=True)


def mission_outcome(run, robots: int) -> dict:
    """Print how the mission ended (the fleet's, with ``robots`` > 1) and what the ingests'
    timing decided; the summary's outcome, mission, goals, diagnostics, the maps not scored
    (their mapper's status was lost), the ingests' timing-dependent decisions and, for a
    fleet, each vehicle's."""
    monitor = run.monitor
    if monitor.mission is not None:
        print(f"{'fleet ' if robots > 1 else ''}mission {monitor.mission_state}: "
              f"{monitor.mission.reason}")
    timing = monitor.timing_dependent()
    if timing:
        print("the ingest's timing, not its data, decided part of this run ("
              + "; ".join(f"{name}: " + ", ".join(f"{reason} {n}" for reason, n in counts.items())
                          for name, counts in timing.items())
              + "): it is not reproducible from its sensor data; in lockstep the ingest fell "
                "behind although the clock waits for it (max_backlog), or readings came late",
              file=sys.stderr)
    extra = {"outcome": run.outcome, "exit_codes": run.exit_codes,
             "mission": monitor.mission and monitor.mission.reason,
             "goals": monitor.goals, "diagnostics": monitor.statuses,
             "unscored_maps": monitor.unscored_maps, "timing_dependent": timing}
    if robots > 1:
        extra["vehicles"] = vehicle_summaries(monitor)
    return extra


def vehicle_summaries(monitor) -> dict[str, dict]:
    """Per vehicle of a fleet: its mission's state and reason, its ingest's sample count
    and its goals; with a distributed map also its own map's final scores (``map``), its
    maps not scored and what its link sent (``link``: soundings, packets, bytes)."""
    summaries = {}
    for namespace in monitor.namespaces:
        mission, ingest = monitor.vehicle_missions[namespace], monitor.vehicle_ingest(namespace)
        summaries[namespace] = {
            "state": monitor.vehicle_states[namespace],
            "reason": mission.reason if mission else None,
            "distance_m": mission.distance_m_used if mission else None,
            "samples": ingest.samples_published if ingest else None,
            "goals": monitor.vehicle_goals[namespace]}
        if monitor.central:
            continue
        records, link = monitor.vehicle_records(namespace), monitor.vehicle_link(namespace)
        summaries[namespace]["map"] = asdict(records[-1]) if records else None
        summaries[namespace]["unscored_maps"] = \
            monitor.vehicle_monitors.get(namespace, monitor).unscored_maps
        summaries[namespace]["link"] = None if link is None else asdict(link)
    return summaries


def print_vehicles(summaries: dict[str, dict]) -> None:
    """One line per vehicle: its samples, goals, distance and mission state; with a
    distributed map, one more: its own map's final scores and what its link sent."""
    for namespace, vehicle in summaries.items():
        distance = "?" if vehicle["distance_m"] is None else f"{vehicle['distance_m']:.0f}"
        print(f"{namespace}: {'?' if vehicle['samples'] is None else vehicle['samples']} "
              f"samples, {len(vehicle['goals'])} goals, {distance} m flown, mission "
              f"{vehicle['state']}: {vehicle['reason']}")
        if "map" not in vehicle:
            continue
        final, link = vehicle["map"], vehicle["link"]
        scores = "no map scored" if final is None else (
            f"its map: {final['num_samples']} samples, SMSE {final['smse']:.4f}, "
            f"MSLL {final['msll']:.3f}, RMSE {final['rmse']:.2f} m")
        sent = "?" if link is None else (f"{link['soundings_sent']} soundings in "
                                         f"{link['bytes_sent']} B ({link['packets_sent']} "
                                         f"packets)")
        print(f"{namespace}: {scores}; its link sent {sent}")


def viewer_parameters(args, setup) -> dict | None:
    """With ``--view``, the viewer node's parameters (sim.launch.xml's ``view:=true``): where
    it listens, and the mapper's std scale, channels, anchor and workspace, so that its
    colours, layers and world map are the map's; else None."""
    from poam_ros.setup.mission_setup import prefixed_parameters

    if not args.view:
        return None
    parameters = {"view.host": args.view_host, "view.port": args.view_port,
                  "std_scale_max": setup.grid.std_scale_max,
                  **prefixed_parameters({"geo": setup.geo, "workspace": setup.workspace})}
    if setup.ingest.channels:  # an empty list is no ROS parameter value
        parameters["channels"] = list(setup.ingest.channels)
    return parameters


def _check_graph_options(args, setup, params: Path) -> None:
    """The command line's settings of the nodes, checked as the nodes would check them, the
    mapper's state file loaded as the mapper will load it, and the bag to record: raises
    ConfigError, StateFileError or BagWriteError."""
    from poam_ros.bags import check_new_bag
    from poam_ros.models import load_model
    from poam_ros.params import ConfigError
    from poam_ros.params.files import load_config
    from poam_ros.setup.sim_launch import mavlink_parameters
    from poam_ros.sim import SimulatedAuvConfig

    vehicle = {"mode": args.mode, "time_scale": args.time_scale}
    load_config(params, "simulated_auv", SimulatedAuvConfig).replace(
        **{name: value for name, value in vehicle.items() if value is not None})
    if args.mode is not None:
        setup.planner_node.replace(mode=args.mode)
    if args.torch_threads is not None:
        setup.mapper_node.replace(torch_threads=args.torch_threads)
    if setup.mapper_node.state_file:  # a bad one is the user's, not a node that failed
        load_model(Path(setup.mapper_node.state_file).expanduser(), device=setup.mapping.device)
    if not args.stall_timeout > 0:
        raise ConfigError(f"--stall-timeout must be > 0 s, got {args.stall_timeout}")
    _check_fleet_options(args, setup)
    if args.vehicle == "mavlink":
        if not 0 < args.mavlink_port < 65536:
            raise ConfigError(f"--mavlink-port must be a UDP port, got {args.mavlink_port}")
        mavlink_parameters(setup, args.mavlink_port)  # the anchor is there
    if args.record is not None:
        check_new_bag(args.record)


def _check_fleet_options(args, setup) -> None:
    """What a fleet (``--robots`` > 1) flies with: coordination with the max_entropy planner
    only, links as the link model takes them; the ROS-free comparison and the MAVLink
    vehicle are the single vehicle's. Raises ConfigError."""
    from poam_ros.params import ConfigError

    if args.robots < 1:
        raise ConfigError(f"--robots must be >= 1, got {args.robots}")
    if args.robots == 1:
        return
    if args.coordination == "on" and setup.planning.planner != COORDINATED_PLANNER:
        raise ConfigError(f"--coordination on needs the {COORDINATED_PLANNER} planner, not "
                          f"{setup.planning.planner}")
    from poam_ros.fleet import LinkConfig

    LinkConfig(bandwidth=args.link_bandwidth, latency=args.link_latency,
               loss_probability=args.link_loss, slot_length=args.link_slot_length)
    if args.compare:
        raise ConfigError("--compare: with --robots there is no ROS-free fleet mission to "
                          "compare with (poam-ros mission flies one vehicle)")
    if args.vehicle != "simulated":
        raise ConfigError(f"--vehicle {args.vehicle}: with --robots the fleet_sim node flies "
                          f"every vehicle on one clock; the MAVLink endpoint and bridge are "
                          f"the single simulated AUV's")


def print_launch(params: Path, effective: Path, record: bool, view: bool = False,
                 robots: int = 1, vehicle: str = "simulated", central: bool = True) -> None:
    """The launch the graph is, and the values the command line sets otherwise than the
    parameter file (which ``ros2 launch`` with that file alone would not get)."""
    from poam_ros.setup.sim_launch import differences

    if robots > 1:
        from poam_ros.setup.fleet_launch import LAUNCH_FILE_ROBOTS

        more = (f" (the file starts {LAUNCH_FILE_ROBOTS}: copy a vehicle's include for more)"
                if robots > LAUNCH_FILE_ROBOTS else "")
        print(f"the graph: ros2 launch poam_ros fleet.launch.xml sim:=true robots:={robots} "
              f"params_file:={effective}" + ("" if central else " central_map:=false")
              + (" record:=true" if record else "") + (" view:=true" if view else "") + more)
        return
    print(f"the graph: ros2 launch poam_ros sim.launch.xml params_file:={effective}"
          + (" record:=true" if record else "") + (" view:=true" if view else "")
          + (f" vehicle:={vehicle}" if vehicle != "simulated" else ""))
    changed = differences(params, effective, record, vehicle)
    if changed:
        print(f"set otherwise than in {params} (by the command line, or missing there): "
              f"{'; '.join(changed)}")


def describe_bag(path: Path) -> dict:
    """Print what the bag holds; returns its path and message count per topic."""
    from poam_ros.bags import BagError, BagReader

    try:
        counts = {name: topic.count for name, topic in BagReader(path).topics.items()}
    except BagError as error:
        print(f"poam-ros sim: the bag cannot be read: {error}", file=sys.stderr)
        return {"path": str(path), "error": str(error)}
    print(f"recorded {sum(counts.values())} message(s) on {len(counts)} topic(s) to {path}")
    return {"path": str(path), "messages": counts}


def plot_final_map(run, path, setup):
    """The last scored map as published, with the ground truth at its cells; with channels
    besides the depth, a figure per further channel at ``figures.channel_figure``."""
    from poam_ros.figures import CHANNEL_QUANTITIES, channel_figure, map_title, plot_map
    from poam_ros.geo import GeoReference

    stamp = run.monitor.record_stamps[-1]
    layers = run.monitor.map_layers(stamp)
    if layers is None:
        return "none (the last map was not received)"
    points, inside = layers["points"], np.isfinite(layers["mean"])
    kept = run.monitor.samples(until=stamp)
    track, final = kept[:, :2], run.records[-1]
    note, georeference = f"over ROS, seed {setup.mission.seed}", GeoReference.from_config(
        setup.geo)
    figure = None
    for d, (name, field) in enumerate(run.monitor.fields.items()):
        truth = np.full(len(points), np.nan)
        truth[inside] = field(points[inside])
        suffix = "" if d == 0 else f"_{name}"
        samples = kept[np.isfinite(kept[:, 2 + d]), :2]
        scores = (final.smse, final.msll) if d == 0 else (final.extra[f"smse_{name}"],
                                                          final.extra[f"msll_{name}"])
        title = map_title(map_name(setup) if d == 0 else f"{map_name(setup)}, {name}",
                          setup.mapping.method,
                          len(samples) if run.monitor.channels else final.num_samples, *scores,
                          note)
        written = plot_map(path if d == 0 else channel_figure(path, name), points,
                           layers[f"mean{suffix}"], layers[f"std{suffix}"],
                           layers["lengthscale"] if d == 0 else None, truth=truth, track=track,
                           samples=samples, inducing=layers["inducing"], title=title,
                           georeference=georeference,
                           quantity=CHANNEL_QUANTITIES.get(name, (name, "", "viridis")))
        figure = figure or written
    return figure


def compare(setup, run, torch_threads: int | None) -> dict:
    """Run the ROS-free mission with ``setup``, print it beside the graph's, and return
    its summary with the comparison."""
    from poam_ros.figures import scored_channels
    from poam_ros.mission import Mission

    setup.mapper_node.use_torch_threads(torch_threads)
    print("\nthe ROS-free mission with the same setup ...", flush=True)
    result = Mission(setup).run()
    ros, free = run.records, result.records
    same = next((i for i, (a, b) in enumerate(zip(ros, free))
                 if a.num_samples != b.num_samples), min(len(ros), len(free)))
    graph = summarize(ros, run.wall_time, setup)
    alone = summarize(free, result.wall_time, setup)
    print(f"{'':24} {'graph':>10} {'ROS-free':>10}")
    rows = [("epochs", "epochs", "d"), ("samples", ("final", "num_samples"), "d"),
            ("final SMSE", ("final", "smse"), ".4f"), ("final MSLL", ("final", "msll"), ".3f"),
            ("SMSE over epochs", ("epoch_averages", "smse"), ".4f"),
            ("MSLL over epochs", ("epoch_averages", "msll"), ".3f"),
            ("median update s", "median_update_time", ".3f"), ("wall time s", "wall_time", ".1f")]
    for channel in scored_channels(graph["final"]["extra"])[1:]:  # each further channel's
        rows += [(f"final SMSE {channel}", ("final", "extra", f"smse_{channel}"), ".4f"),
                 (f"final MSLL {channel}", ("final", "extra", f"msll_{channel}"), ".3f")]
    for label, key, form in rows:
        a, b = (functools.reduce(operator.getitem, key if isinstance(key, tuple) else (key,), s)
                for s in (graph, alone))
        print(f"{label:24} {a:>10{form}} {b:>10{form}}")
    print(f"epochs with the same sample count from the start: {same} of {len(free)}")
    del alone["setup"]
    return {**alone, "same_epochs_from_start": same}


def print_bridge(monitor) -> None:
    """What the vehicle bridge counted: targets and commands sent, plans refused, telemetry
    dropped, bad data."""
    bridge = monitor.status(BridgeStatus)
    if bridge is None:
        print("vehicle bridge: no status received", file=sys.stderr)
        return
    print(f"vehicle bridge: {bridge.state} ({bridge.reason}); sent {bridge.sent}; "
          f"refused: {bridge.refused or 'none'}; dropped: {bridge.dropped or 'none'}; "
          f"bad data: {bridge.bad_data or 'none'}")


def print_node_counts(monitor) -> None:
    """What the ingest (a fleet's ingests together) and the mapper counted: samples,
    inducing points, drops, rejections;
    the soundings not mapped as information, readings lost or late as a warning."""
    ingests = ([monitor.vehicle_ingest(namespace) for namespace in monitor.namespaces]
               if hasattr(monitor, "namespaces") else [monitor.status(IngestStatus)])
    mapper = monitor.status(MapperStatus)
    drops: dict[str, int] = {}
    for ingest in filter(None, ingests):  # a fleet's ingests summed
        for reason, n in ingest.dropped.items():
            if n:
                drops[reason] = drops.get(reason, 0) + n
    unmapped = [drops.pop(reason, 0) for reason in (OUTSIDE_WORKSPACE, NO_RETURN)]
    counted = ("? samples in ? batches" if None in ingests else
               f"{sum(i.samples_published for i in ingests)} samples in "
               f"{sum(i.batches_published for i in ingests)} batches")
    mapped = ("? samples, ? inducing points, ? updates, rejected: none" if mapper is None else
              f"{mapper.samples} samples, {mapper.inducing_points} inducing points, "
              f"{mapper.updates} updates, rejected: {mapper.rejected or 'none'}")
    print(f"ingest: {counted}; mapper: {mapped}")
    print_unmapped(*unmapped)
    if drops:  # lost or late: load, not data
        print(f"warning: the ingest dropped readings ({drops}); lockstep's clock waits for "
              f"it (max_backlog), realtime's does not: a lower --time-scale lets it keep up",
              file=sys.stderr)
