"""The mission loop (Algorithm 1) end to end on the embedded terrain, small and seeded."""

import numpy as np
import pytest

from poam_ros.mapping.loop import MAX_SPLITS
from poam_ros.mission import Mission
from poam_ros.models import NumericalError
from poam_ros.setup.mission_setup import MissionError, MissionSetup, mission_seeds
from poam_ros.workspace import WorkspaceConfig


def small_setup() -> MissionSetup:
    """A small seeded mission on the embedded terrain: 750 samples, M = 60, 2 steps."""
    s = MissionSetup()
    s.mission = s.mission.replace(eval_grid=12, seed=3)
    s.mission_control = s.mission_control.replace(max_samples=750)
    s.mapping = s.mapping.replace(num_inducing=60, train_steps=2, device="cpu")
    return s


@pytest.fixture
def setup():
    return small_setup()


def test_mission_runs_to_its_budget_and_learns(setup):
    result = Mission(setup).run()
    records = result.records
    assert records[0].epoch == 0 and records[-1].num_samples >= 750
    assert [r.num_samples for r in records] == sorted(r.num_samples for r in records)
    assert len(result.samples_y) == records[-1].num_samples
    assert records[-1].smse < records[0].smse  # informative sampling improves the map
    assert all(np.isfinite([r.smse, r.msll, r.nlpd]).all() for r in records)
    # Every sample lies inside the workspace; the path starts at the lower-right corner.
    assert result.workspace.contains(result.samples_x).all()
    assert np.allclose(result.path[0, :2], [30.0, -30.0])


def failing_calls(mission, failing):
    """Make the model's update raise an injected NumericalError on the calls in ``failing``
    (counted from 1, retries of the mapping loop included)."""
    update, calls = mission.model.update, []

    def patched(max_new=None):
        calls.append(max_new)
        if len(calls) in failing:
            raise NumericalError("I + A: Cholesky failed (injected)")
        return update(max_new)
    mission.model.update = patched
    return calls


def test_a_transient_failure_maps_the_oldest_half_and_loses_nothing(setup):
    mission = Mission(setup)
    calls = failing_calls(mission, {2})
    records = mission.run().records
    assert not any(r.update_failure for r in records)
    assert calls[1] is None and calls[2] > 0  # the retry took the oldest half
    assert mission.model.num_samples == records[-1].num_samples
    assert mission.model.num_pending == 0 and not mission.model.rejections


def test_a_persistent_failure_keeps_the_previous_map_and_the_mission_goes_on(setup):
    mission = Mission(setup)
    failing_calls(mission, set(range(2, 3 + MAX_SPLITS)))  # epoch 1: the update and retries
    records = mission.run().records
    failed = [r for r in records if r.update_failure]
    assert [r.epoch for r in failed] == [1] and "injected" in failed[0].update_failure
    assert failed[0].smse == records[0].smse  # the pilot survey's map, scored again
    assert records[-1].num_samples >= 750 and records[2].training_time > 0
    # The failed epoch's samples were set aside; later epochs were mapped.
    set_aside = mission.model.rejections["update_failed"]
    assert set_aside > 0 and mission.model.num_pending == 0
    assert records[1].num_samples == records[0].num_samples  # the model holds none of them


def test_a_failed_first_update_ends_the_mission(setup):
    mission = Mission(setup)

    def failing(max_new=None):
        raise NumericalError("injected")
    mission.model.update = failing
    with pytest.raises(MissionError, match="the first update failed: injected"):
        mission.run()


def test_same_seed_same_mission(setup):
    first = [r.smse for r in Mission(setup).run().records]
    second = [r.smse for r in Mission(setup).run().records]
    assert first == second


def test_seeds_are_independent_streams():
    seeds = mission_seeds(0)
    assert len(set(seeds.values())) == 3 and mission_seeds(0) == seeds != mission_seeds(1)


def test_budget_smaller_than_pilot_survey(setup):
    setup.mission_control = setup.mission_control.replace(max_samples=100)
    with pytest.raises(MissionError, match=r"sample budget \(100\) is smaller than the pilot"):
        Mission(setup).run()


class _PilotFlown(Exception):
    pass


def _stop_after_the_pilot(record):
    raise _PilotFlown(record)


def test_a_slow_sonar_s_soundings_all_reach_the_map(setup):
    """A sounding every 20 s, twice the ingest's stamp-jump threshold: each is as far on
    as the time between them, so none is taken for a clock glitch."""
    setup.sonar = setup.sonar.replace(rate=0.05)
    setup.ingest = setup.ingest.replace(sonar_rate=0.05)
    mission = Mission(setup)
    with pytest.raises(_PilotFlown) as flown:
        mission.run(on_epoch=_stop_after_the_pilot)
    pilot, = flown.value.args
    assert pilot.num_samples == 10 and sum(mission.ingest.drops.counts.values()) == 0


def test_workspace_outside_the_terrain(setup):
    setup.workspace = WorkspaceConfig(vertices=[-40.0, -30.0, 30.0, -30.0, 30.0, 30.0])
    with pytest.raises(MissionError, match="reach outside the terrain extent"):
        Mission(setup)


def test_a_map_given_on_the_command_line_is_read_as_the_file_says(tmp_path):
    """``--map`` (mission, sim, remap, bench sweep) replaces the terrain file alone: its
    placement and preprocessing stay the parameter file's."""
    path = tmp_path / "params.yaml"
    path.write_text("simulated_auv:\n  ros__parameters:\n    terrain:\n      path: a.npz\n"
                    "      first_row: south\n      resize_rows: 40\n      resize_cols: 40\n")
    setup = MissionSetup.from_file(path)
    moved = setup.over_map(tmp_path / "b.npz")
    assert moved.terrain == setup.terrain.replace(path=str(tmp_path / "b.npz"))
    assert (moved.terrain.first_row, moved.terrain.resize_rows) == ("south", 40)
    assert setup.terrain.path == "a.npz" and moved.mission == setup.mission


def test_parameter_file_round_trip(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      num_inducing: 77\n")
    assert MissionSetup.from_file(path).mapping.num_inducing == 77
    path.write_text("mapper:\n  ros__parameters:\n    mapping:\n      num_inducng: 77\n")
    with pytest.raises(ValueError, match="num_inducng"):
        MissionSetup.from_file(path)


def test_no_go_zone_keeps_samples_and_goals_out(setup):
    setup.workspace = WorkspaceConfig(no_go_vertices=[-10.0, -10.0, 10.0, -10.0, 10.0, 10.0,
                                                      -10.0, 10.0], no_go_vertex_counts=[4])
    mission = Mission(setup)
    result = mission.run()
    in_zone = (np.abs(result.samples_x) < 10.0).all(axis=1)
    assert not in_zone.any()
    assert mission.outside_workspace > 0  # the pilot survey's straight legs cross the zone


def test_soundings_beyond_the_terrain_return_nothing_and_the_mission_goes_on(setup):
    """A workspace up to the terrain's edge and a robot that turns on the move (the authors'
    code's): it swings beyond the edge, where the sonar returns nothing; those soundings are
    counted and dropped, and the mission runs to its budget."""
    setup.workspace = WorkspaceConfig(vertices=[-31.0, -31.0, 31.0, -31.0, 31.0, 31.0,
                                                -31.0, 31.0])
    setup.vehicle = setup.vehicle.replace(reverse=True, max_yaw_rate=np.pi)
    setup.mission = setup.mission.replace(seed=0)
    setup.mission_control = setup.mission_control.replace(max_samples=1000)
    mission = Mission(setup)
    result = mission.run()
    assert mission.no_return > 0 and mission.outside_workspace == 0
    assert result.records[-1].num_samples >= 1000
    assert np.isfinite(result.samples_y).all()
    assert mission.terrain.contains(result.samples_x).all()


def test_the_default_file_keeps_the_paper_s_plane_and_its_soundings():
    """Every real-scale option is off in the default file: the vehicle flies the paper's
    plane with no turning radius or roll, the terrain is stretched over its extent, and the
    pilot survey's samples are exactly follow()'s soundings at plane_z - range."""
    from poam_ros.planners import pilot_survey
    from poam_ros.setup.mission_setup import default_parameter_file
    from poam_ros.sim import SurveySimulator, lower_right_start

    setup = MissionSetup.from_file(default_parameter_file())
    vehicle = setup.vehicle
    assert (vehicle.vertical_mode, vehicle.turning_radius, vehicle.roll_amplitude,
            vehicle.pitch_amplitude) == ("plane", 0.0, 0.0, 0.0)
    assert setup.terrain.placement == "extent" and setup.max_entropy.turning_radius == 0.0
    assert setup.ingest.sonar_mount_xyz == [0.0] * 3 == setup.ingest.sonar_mount_rpy
    mission = Mission(setup)
    waypoints = pilot_survey(mission.workspace, mission.rng, setup.pilot)
    points = np.concatenate([batch.points for batch in mission._survey(waypoints)])
    reference = SurveySimulator(mission.terrain, vehicle, setup.sonar,
                                seed=mission_seeds(setup.mission.seed)["simulator"],
                                start_pose=lower_right_start(mission.workspace.bounds)
                                ).follow(waypoints)
    kept = np.isfinite(reference.ranges) & mission.workspace.contains(reference.positions)
    # The ingest interpolates the pose its own way: positions agree to rounding.
    np.testing.assert_allclose(points[:, :2], reference.positions[kept], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(points[:, 2], vehicle.plane_z - reference.ranges[kept])
    np.testing.assert_array_equal(reference.heights, vehicle.plane_z)


@pytest.fixture
def two_channels(setup):
    """The fixture's mission with the temperature sensor and a joint map of both channels."""
    setup.temperature = setup.temperature.replace(enabled=True)
    setup.ingest = setup.ingest.replace(channels=["temperature"], channel_rates=[0.5])
    setup.mapping = setup.mapping.replace(method="poam-mt", num_inducing=40)
    return setup


def test_the_default_file_maps_one_channel():
    """Channels are opt-in: the default file measures and maps the depth alone, so the
    records carry no per-channel figures and the samples are (N,) elevations."""
    from poam_ros.setup.mission_setup import default_parameter_file

    setup = MissionSetup.from_file(default_parameter_file())
    assert not setup.temperature.enabled and setup.ingest.channels == []
    mission = Mission(setup)
    assert list(mission.fields) == ["depth"] and mission.auv.sensors == []
    assert mission.truth.shape == (len(mission.eval_points),)
    assert mission.loop.scoring.names == ()


def test_a_second_channel_leaves_the_soundings_as_they_were(setup, two_channels):
    """The temperature sensor draws its own noise: the pilot survey's soundings are those of
    the mission without it, bit for bit, and its readings are extra rows, NaN in depth."""
    from poam_ros.planners import pilot_survey

    def pilot(s):
        mission = Mission(s)
        waypoints = pilot_survey(mission.workspace, mission.rng, s.pilot)
        return np.concatenate([batch.points for batch in mission._survey(waypoints)])

    plain = pilot(MissionSetup(mission=setup.mission, mapping=setup.mapping))
    joint = pilot(two_channels)
    depth = np.isfinite(joint[:, 2])
    np.testing.assert_array_equal(joint[depth, :3], plain)
    assert np.isnan(joint[depth, 3]).all() and np.isfinite(joint[~depth, 3]).all()
    assert len(plain) / (~depth).sum() == pytest.approx(6.0, rel=0.05)  # 3 Hz against 0.5 Hz


def test_a_mission_with_a_second_channel_scores_both(two_channels):
    result = Mission(two_channels).run()
    final = result.final
    assert result.truth.shape == (len(result.eval_points), 2)
    assert result.samples_y.shape == (final.num_samples, 2)
    for name in ("depth", "temperature"):
        assert all(np.isfinite(r.extra[f"smse_{name}"]) and np.isfinite(r.extra[f"msll_{name}"])
                   for r in result.records)
    assert (final.smse, final.msll) == (final.extra["smse_depth"], final.extra["msll_depth"])
    # The temperature map explains most of the field's variance.
    assert final.extra["smse_temperature"] < 0.5


@pytest.mark.parametrize("change, message", [
    (dict(mapping={"method": "poam"}), "maps one channel"),
    (dict(ingest={"channels": [], "channel_rates": []}), "exactly the channels"),
    (dict(temperature={"enabled": False}), "exactly the channels"),
])
def test_channels_need_a_sensor_and_a_multi_channel_method(two_channels, change, message):
    for section, values in change.items():
        setattr(two_channels, section, getattr(two_channels, section).replace(**values))
    with pytest.raises(MissionError, match=message):
        Mission(two_channels)


def test_a_spent_budget_sends_the_mission_home_as_its_last_epoch(setup):
    setup.mission_control = setup.mission_control.replace(max_samples=700, on_budget="home",
                                                          home=[-10.0, 5.0])
    mission = Mission(setup)
    result = mission.run()
    assert mission.control.state == "done"
    assert mission.control.reason.startswith("home reached; samples budget spent: ")
    assert np.hypot(*(result.path[-1, :2] - [-10.0, 5.0])) <= setup.vehicle.goal_radius
    assert result.records[-2].num_samples >= 700  # the leg home is mapped too


def test_a_time_budget_ends_the_mission_at_the_next_decision(setup):
    setup.mission_control = setup.mission_control.replace(max_samples=0, max_time=200.0)
    mission = Mission(setup)
    result = mission.run()
    assert mission.control.ended_by == "time_s"
    assert mission.control.time_s >= 200.0 and result.records[-2].sim_time < 200.0


def test_a_mission_without_any_budget_is_refused(setup):
    setup.mission_control = setup.mission_control.replace(max_samples=0)
    with pytest.raises(MissionError, match="the mission has no budget"):
        Mission(setup).run()
