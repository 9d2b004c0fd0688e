"""The ``poam-ros`` dispatcher and the checks every command makes before it starts anything:
one line on stderr, status 2; a stop signal is a KeyboardInterrupt, status 130."""

from __future__ import annotations

import signal
import sys
from types import ModuleType

import pytest

import poam_ros.cli as cli
from poam_ros.cli.bags import record
from poam_ros.cli.common import interruptible
from poam_ros.cli.sim import sim
from poam_ros.models import METHODS
from poam_ros.models.config import METHOD_NAMES


def exit_status(command, argv) -> int:
    """``command(argv)``'s status, argparse's where it exits."""
    try:
        return command(argv)
    except SystemExit as error:
        return error.code


@pytest.mark.parametrize("name", ["core", "sweep", "remap", "recorder", "ingest", "latency"])
def test_every_benchmark_runs_as_bench_name(name, capsys):
    assert exit_status(cli.main, ["bench", name, "--help"]) == 0
    assert "--help" in capsys.readouterr().out


def test_the_bench_usage_lists_every_benchmark(capsys):
    assert cli.main(["bench"]) == 2
    assert capsys.readouterr().out == ("usage: poam-ros bench {core,sweep,remap,recorder,ingest,"
                                       "latency} [options]   (--help for each)\n")


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


def test_every_method_is_a_choice_of_the_mapping_config():
    assert sorted(METHOD_NAMES) == sorted(METHODS)


@pytest.fixture
def graph(monkeypatch):
    """``poam_ros.ros.graph`` whose run_graph fails at once (no rclpy needed), recording that
    the command got as far as starting the graph."""
    module = ModuleType("poam_ros.ros.graph")
    module.CLOCK_SOURCE, module.started = "simulated_auv", []

    class GraphError(RuntimeError):
        pass

    def run_graph(*args):
        module.started.append(args)
        raise GraphError("the graph was started")

    module.GraphError, module.run_graph = GraphError, run_graph
    module.GraphOptions = lambda **options: options
    monkeypatch.setitem(sys.modules, "poam_ros.ros.graph", module)
    return module


@pytest.mark.parametrize("args, message", [
    (["--method", "typo"], "MappingConfig.method must be one of ['poam', "),
    (["--map", "missing.npz"], "missing.npz: terrain file not found"),
    (["--max-samples", "0"], "MissionConfig.max_samples must be >= 1, got 0"),
    (["--time-scale", "-1"], "SimulatedAuvConfig.time_scale must be >= 0"),
    (["--torch-threads", "-2"], "MapperSettings.torch_threads must be >= 0, got -2"),
    (["--stall-timeout", "0"], "--stall-timeout must be > 0 s, got 0.0"),
    (["--record", "."], ". exists already; a bag is never overwritten"),
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


def test_sim_starts_the_graph_with_good_options(tmp_path, small_parameter_file, graph, capsys):
    assert sim(["--params", str(small_parameter_file()), "--mode", "realtime", "--time-scale",
                "0", "--torch-threads", "1", "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == "poam-ros sim: the graph was started\n"
    [(setup, params, options, *_)] = graph.started
    assert options == {"mode": "realtime", "time_scale": 0.0, "torch_threads": 1,
                       "stall_timeout": 600.0, "record": None}


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
