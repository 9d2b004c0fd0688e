"""``poam-ros bench fleet``'s table: a run whose ingests' timing decided part of it is marked,
since it depends on the machine's load where a lockstep run should not."""

from poam_ros.benchmark.fleet import Outcome, Setting, print_table


def outcome(setting, timing=None, time_to_single=None):
    return Outcome(setting, ["poam-ros", "sim"], 0, samples=2027, smse=0.1039, msll=-1.119,
                   rmse=20.8, mission_time=760.0, time_to_single=time_to_single,
                   wall_time=70.0, timing_dependent=timing)


def test_a_run_that_lost_readings_is_marked_and_explained(capsys):
    single = outcome(Setting(1), time_to_single=760.0)
    lossy = outcome(Setting(2, True), {"auv0/sensor_ingest: samples":
                                       {"dropped lost_in_transport": 6004}}, 380.0)
    print_table([single, lossy], single)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("1 vehicle ") and "*" not in lines[1]
    assert lines[2].startswith(f"{Setting(2, True).label} *") and " 0.50 " in lines[2]
    assert lines[3].startswith("* the ingests' timing decided part of the run")


def test_a_table_of_clean_runs_has_no_footnote(capsys):
    single = outcome(Setting(1), time_to_single=760.0)
    print_table([single], single)
    assert "*" not in capsys.readouterr().out
