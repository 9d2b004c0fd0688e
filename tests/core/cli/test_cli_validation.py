"""The ``poam-ros`` dispatcher and the checks every command makes before it starts anything:
one line on stderr, status 2; a stop signal is a KeyboardInterrupt, status 130."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from types import ModuleType

import numpy as np
import pytest
import torch

import poam_ros.cli as cli
from poam_ros.cli.bags import record
from poam_ros.cli.common import interruptible
from poam_ros.cli.sim import sim
from poam_ros.models import MappingConfig, make_model


def exit_status(command, argv) -> int:
    """``command(argv)``'s status, argparse's where it exits."""
    try:
        return command(argv)
    except SystemExit as error:
        return error.code


@pytest.mark.parametrize("name", ["core", "sweep", "remap", "recorder", "ingest", "latency",
                                  "journal", "real-scale", "export", "bridge", "fleet-link"])
def test_every_benchmark_runs_as_bench_name(name, capsys):
    assert exit_status(cli.main, ["bench", name, "--help"]) == 0
    assert "--help" in capsys.readouterr().out


def test_the_bench_usage_lists_every_benchmark(capsys):
    assert cli.main(["bench"]) == 2
    assert capsys.readouterr().out == ("usage: poam-ros bench {core,sweep,remap,recorder,ingest,"
                                       "latency,journal,vips-paper,oips-paper,dual-gp-paper,"
                                       "cmogp-paper,"
                                       "real-scale,export,view,fleet-link,fleet,bridge,"
                                       "seabed-class} "
                                       "[options]   "
                                       "(--help for each)\n")


def test_a_benchmark_config_error_is_one_line(capsys):
    assert cli.main(["bench", "core", "--num-inducing", "0", "--sizes", "1000"]) == 2
    assert capsys.readouterr().err == ("poam-ros bench core: MappingConfig.num_inducing must "
                                       "be >= 1, got 0\n")


@pytest.mark.parametrize("argv", [["core", "--sizes", "abc"], ["core", "--sizes", "0,10"],
                                  ["latency", "--legs", "x"], ["ingest", "--beams", "x"],
                                  ["remap", "--samples", "x"], ["recorder", "--rates", "x"]])
def test_a_benchmark_option_of_the_wrong_kind_is_one_line(argv, capsys):
    assert exit_status(cli.main, ["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"poam-ros bench {argv[0]}: argument {argv[1]}") and \
        err.count("\n") == 1 and "Traceback" not in err


def test_an_interrupted_command_says_so_and_exits_130(monkeypatch, capsys):
    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "fetch", interrupted)
    assert cli.main(["fetch-tile", "N47W124", "http://mirror"]) == 130
    assert capsys.readouterr().err == "poam-ros fetch-tile: interrupted\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_interrupts_once_then_lets_the_command_keep_its_results(signum):
    before = signal.getsignal(signum)
    with interruptible():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signum)
        signal.raise_signal(signum)  # a second one, while the command writes what it has
    assert signal.getsignal(signum) is before


@pytest.fixture
def graph(monkeypatch):
    """``poam_ros.ros.graph`` whose run_graph fails at once (no rclpy needed), recording that
    the command got as far as starting the graph."""
    module = ModuleType("poam_ros.ros.graph")
    module.CLOCK_SOURCES, module.started = ("simulated_auv", "fleet_sim"), []

    class GraphError(RuntimeError):
        pass

    def run_graph(*args):
        module.started.append(args)
        raise GraphError("the graph was started")

    module.GraphError, module.run_graph = GraphError, run_graph
    module.GraphOptions = lambda **options: options
    module.write_graph_file = lambda setup, params, options, logs, terrain=None: params
    monkeypatch.setitem(sys.modules, "poam_ros.ros.graph", module)
    return module


@pytest.mark.parametrize("args, message", [
    (["--method", "typo"], "MappingConfig.method must be one of ['poam', "),
    (["--map", "missing.npz"], "missing.npz: terrain file not found"),
    (["--max-samples", "-1"], "MissionControlConfig.max_samples must be >= 0, got -1"),
    (["--time-scale", "-1"], "SimulatedAuvConfig.time_scale must be >= 0"),
    (["--torch-threads", "-2"], "MapperSettings.torch_threads must be >= 0, got -2"),
    (["--stall-timeout", "0"], "--stall-timeout must be > 0 s, got 0.0"),
    (["--record", "."], ". exists already; a bag is never overwritten"),
    (["--robots", "0"], "--robots must be >= 1, got 0"),
    (["--robots", "2", "--fleet-map", "distributed", "--link-bandwidth", "0.5"],
     "LinkConfig.bandwidth must be 0 (unlimited) or at least 1 B/s, got 0.5"),
    (["--robots", "2", "--fleet-map", "distributed", "--link-loss", "2"],
     "LinkConfig.loss_probability must be <= 1"),
    (["--robots", "2", "--compare"], "--compare: with --robots there is no ROS-free fleet "
                                     "mission to compare with"),
    (["--robots", "2", "--vehicle", "mavlink"], "--vehicle mavlink: with --robots the "
                                                "fleet_sim node flies every vehicle"),
])
def test_sim_checks_everything_before_a_node_starts(tmp_path, small_parameter_file, graph,
                                                    capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert exit_status(sim, ["--params", str(small_parameter_file()), *args, "--out",
                             str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("poam-ros sim: ") and message in err
    assert not graph.started and not out.exists()


def test_sim_refuses_a_workspace_off_the_terrain_before_a_node_starts(
        tmp_path, small_parameter_file, graph, capsys):
    params = small_parameter_file(planner={"workspace": {"vertices": [
        -30.0, -30.0, 300.0, -30.0, 300.0, 30.0, -30.0, 30.0]}})
    assert sim(["--params", str(params), "--out", str(tmp_path / "out")]) == 2
    assert "reach outside the terrain extent" in capsys.readouterr().err
    assert not graph.started


@pytest.mark.parametrize("vertices", [[], [0.0, 0.0, 10.0, 10.0, 10.0, 0.0, 0.0, 10.0]],
                         ids=["empty", "self-intersecting"])
def test_sim_refuses_an_empty_or_degenerate_workspace_before_a_node_starts(
        tmp_path, small_parameter_file, graph, capsys, vertices):
    params = small_parameter_file(planner={"workspace": {"vertices": vertices}})
    assert sim(["--params", str(params), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "poam-ros sim: " in err and \
        "WorkspaceConfig.vertices" in err
    assert not graph.started


def test_sim_starts_the_graph_with_good_options(tmp_path, small_parameter_file, graph, capsys):
    assert sim(["--params", str(small_parameter_file()), "--mode", "realtime", "--time-scale",
                "0", "--torch-threads", "1", "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == "poam-ros sim: the graph was started\n"
    [(setup, _terrain, params, options, *_)] = graph.started
    fleet = options.pop("fleet")
    assert options == {"mode": "realtime", "time_scale": 0.0, "torch_threads": 1,
                       "stall_timeout": 600.0, "record": None, "view": None, "robots": 1,
                       "vehicle": "simulated", "mavlink_port": 14550}
    assert fleet.central and fleet.coordination  # the max_entropy planner's default


def test_sim_coordinates_only_the_max_entropy_planner(tmp_path, small_parameter_file, graph,
                                                     capsys):
    params = small_parameter_file(planner={"planning": {"planner": "lawnmower"}})
    assert exit_status(sim, ["--params", str(params), "--robots", "2", "--coordination", "on",
                             "--out", str(tmp_path / "out")]) == 2
    assert "--coordination on needs the max_entropy planner, not lawnmower" in \
        capsys.readouterr().err
    assert sim(["--params", str(params), "--robots", "2", "--out", str(tmp_path / "o")]) == 1
    assert not graph.started[0][3]["fleet"].coordination  # off by default for lawnmower


def test_sim_records_and_views_a_fleet(tmp_path, small_parameter_file, graph, capsys):
    assert sim(["--params", str(small_parameter_file()), "--robots", "2", "--record",
                str(tmp_path / "bag"), "--view", "--out", str(tmp_path / "out")]) == 1
    [(_setup, _terrain, _params, options, *_)] = graph.started
    assert options["record"] == tmp_path / "bag" and options["view"]["view.port"] == 8765
    launch = next(line for line in capsys.readouterr().out.splitlines()
                  if "ros2 launch poam_ros fleet.launch.xml sim:=true" in line)
    assert launch.endswith(" record:=true view:=true")


def test_sim_flies_a_distributed_fleet_over_the_given_links(tmp_path, small_parameter_file,
                                                            graph):
    assert sim(["--params", str(small_parameter_file()), "--robots", "2", "--fleet-map",
                "distributed", "--coordination", "off", "--link-bandwidth", "100",
                "--link-latency", "2", "--link-loss", "0.1", "--out", str(tmp_path)]) == 1
    [(_setup, _terrain, _params, options, *_)] = graph.started
    fleet = options["fleet"]
    assert not fleet.central and not fleet.coordination and options["robots"] == 2
    assert fleet.link == {"bandwidth": 100.0, "latency": 2.0, "loss_probability": 0.1,
                          "slot_length": 1.0}


@pytest.mark.parametrize("args, message", [
    (["-o", "."], ". exists already; a bag is never overwritten"),
    (["--max-bag-size", "-1"], "RecorderConfig.max_bag_size must be >= 0, got -1"),
    (["--duration", "-1"], "--duration must be >= 0 s, got -1.0"),
    (["--storage", "tape"], "argument -s/--storage: invalid choice: 'tape'"),
])
def test_record_checks_its_options_before_the_recorder_starts(tmp_path, monkeypatch, capsys,
                                                              args, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "rclpy", None)  # the recorder would need it to start
    assert exit_status(record, args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("poam-ros record: ") and message in err


@pytest.fixture(scope="module")
def saved_state(tmp_path_factory) -> bytes:
    """The bytes of a small model's state file, as the mapper's ``~/save`` writes it."""
    model = make_model(MappingConfig(num_inducing=10, train_steps=1, device="cpu"))
    xy = np.random.default_rng(0).uniform(-10.0, 10.0, (50, 2))
    model.add_data(xy, np.sin(xy[:, 0]))
    model.update()
    path = tmp_path_factory.mktemp("state") / "map_state.pt"
    model.save(path)
    return path.read_bytes()


def _flip_a_byte(data: bytes) -> bytes:
    middle = len(data) // 2  # in the payload, past the header line
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]


def _foreign(data: bytes) -> bytes:
    buffer = io.BytesIO()
    torch.save({"weights": torch.zeros(3)}, buffer)  # a torch file, but not a model state
    return buffer.getvalue()


@pytest.mark.parametrize("damage, problem", [
    (lambda data: b"", "the file is empty"),
    (lambda data: data[:len(data) // 2], "the file is truncated or damaged"),
    (_flip_a_byte, "the SHA-256 checksum does not match the payload: the file is corrupt"),
    (_foreign, "not a poam_ros model state file"),
], ids=["empty", "truncated", "corrupt", "foreign"])
def test_sim_refuses_a_bad_state_file_in_one_line_before_a_node_starts(
        tmp_path, small_parameter_file, saved_state, damage, problem):
    """The mapper's ``state_file`` is loaded before the graph starts: one line naming the
    file and the problem, status 2, no node started (their logs would be in ``--out``)."""
    state = tmp_path / "map_state.pt"
    state.write_bytes(damage(saved_state))
    out = tmp_path / "out"
    # Should a node start after all, it stays on this host and off the default domain.
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
           "ROS_DOMAIN_ID": str(1 + os.getpid() % 101)}
    result = subprocess.run(
        [sys.executable, "-m", "poam_ros", "sim", "--params",
         str(small_parameter_file(mapper={"state_file": str(state)})), "--out", str(out)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"poam-ros sim: cannot load model state from {state}: ")
    assert len(result.stderr.splitlines()) == 1 and problem in result.stderr
    assert result.stdout == "" and not out.exists()
