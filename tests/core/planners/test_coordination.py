"""A fleet's planners without ROS: the split pilot, teammates' plans and their timeout,
separation between two planners sharing one model."""

import numpy as np
import pytest
import yaml

from poam_ros.mapping.loop import MappingLoop
from poam_ros.models import MappingConfig, make_model
from poam_ros.params import ConfigError
from poam_ros.planners import (
    MaxEntropyConfig,
    MaxEntropyPlanner,
    PilotSurveyConfig,
    RandomPlanner,
    pilot_survey,
)
from poam_ros.planners.coordination import (
    CoordinationConfig,
    Coordinator,
    FleetMemberConfig,
    TeammatePlans,
    path_length,
    pilot_share,
)
from poam_ros.setup.mission_setup import MissionSetup
from poam_ros.workspace import Workspace

SIDE = 100.0  # m, the workspace is [0, SIDE]²
UNCERTAIN = 70.0  # no samples where x > UNCERTAIN and y > UNCERTAIN


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_pilot_split_covers_the_pilot_once(count):
    workspace = Workspace.from_extent(0.0, SIDE, 0.0, SIDE)
    pilot = pilot_survey(workspace, np.random.default_rng(0), PilotSurveyConfig(num_waypoints=30))
    shares = [pilot_share(pilot, k, count) for k in range(count)]
    length = path_length(pilot)
    np.testing.assert_allclose([path_length(share) for share in shares], length / count,
                               rtol=1e-12)
    for first, second in zip(shares, shares[1:]):  # they meet at their cut points only
        np.testing.assert_array_equal(first[-1], second[0])
    joined = np.vstack([shares[0]] + [share[1:] for share in shares[1:]])
    # Together they are the pilot: its waypoints in order, with the cut points between.
    is_waypoint = (np.linalg.norm(joined[:, None] - pilot[None], axis=2) < 1e-9).any(1)
    np.testing.assert_array_equal(joined[is_waypoint], pilot)
    assert is_waypoint.sum() == len(pilot)
    assert len(joined) - len(pilot) <= count - 1
    assert path_length(joined) == pytest.approx(length, rel=1e-12)


def test_a_stale_plan_stops_counting_after_the_timeout():
    plans = TeammatePlans(timeout=10.0)
    plans.update("/auv1/fleet/plan", [0.0, 0.0], [[20.0, 0.0]], stamp=100.0)
    assert not plans.update("/auv1/fleet/plan", [5.0, 0.0], [[20.0, 0.0]], stamp=99.0)
    points = plans.sample_points(105.0, spacing=1.0, max_points=500)
    np.testing.assert_allclose(points[:, 0], np.arange(21.0))
    np.testing.assert_array_equal(plans.keep_out(110.0), [[0.0, 0.0], [20.0, 0.0]])
    assert plans.current(110.001) == {}
    assert len(plans.sample_points(110.001, 1.0, 500)) == 0
    assert len(plans.keep_out(110.001)) == 0
    plans.update("/auv1/fleet/plan", [5.0, 0.0], [[20.0, 0.0]], stamp=111.0)  # heard again
    np.testing.assert_array_equal(plans.keep_out(111.0), [[5.0, 0.0], [20.0, 0.0]])


def test_many_future_samples_are_spread_wider():
    plans = TeammatePlans(timeout=10.0)
    plans.update("a", [0.0, 0.0], [[1000.0, 0.0]], stamp=0.0)
    plans.update("b", [0.0, 50.0], [[0.0, 1050.0]], stamp=0.0)
    points = plans.sample_points(0.0, spacing=0.5, max_points=100)
    assert 100 <= len(points) <= 102
    assert np.diff(points[points[:, 1] == 0.0, 0]).max() == pytest.approx(20.0)


@pytest.fixture(scope="module")
def shared_loop():
    """One model of a field sampled everywhere but the north-east corner: the one clearly
    uncertain region."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, SIDE, (600, 2))
    x = x[~((x[:, 0] > UNCERTAIN) & (x[:, 1] > UNCERTAIN))][:250]
    y = np.sin(x[:, 0] / 15.0) + np.cos(x[:, 1] / 20.0) + rng.normal(0.0, 0.05, len(x))
    model = make_model(MappingConfig(method="exact", kernel="rbf", train_steps=5,
                                     device="cpu", dtype="float64"))
    model.add_data(x, y)
    model.update()
    return MappingLoop(model)


def fleet(enabled, separation=30.0):
    """Two vehicles' coordinators over max-entropy planners with their own streams."""
    workspace = Workspace.from_extent(0.0, SIDE, 0.0, SIDE)
    config = CoordinationConfig(enabled=enabled, separation=separation, plan_timeout=50.0,
                                sample_spacing=2.0)
    return [Coordinator(config, FleetMemberConfig(vehicle_index=k, vehicles=2),
                        MaxEntropyPlanner(workspace, np.random.default_rng(10 + k),
                                          MaxEntropyConfig(num_candidates=300,
                                                           distance_weight=0.1)))
            for k in range(2)]


def fly(coordinators, loop, rounds):
    """Each vehicle in turn plans from its position, announces and 'reaches' its goal;
    returns every goal with the other's position and goal when it was chosen."""
    positions = [np.array([10.0, 10.0]), np.array([90.0, 10.0])]
    goals = [None, None]
    chosen, now = [], 0.0
    for _ in range(rounds):
        for k, coordinator in enumerate(coordinators):
            now += 1.0
            goal = coordinator.plan(positions[k], loop.uncertainty, None, coordinator.view(now))[0]
            other = 1 - k
            chosen.append((goal, positions[other], goals[other]))
            coordinators[other].teammates.update(f"auv{k}", positions[k], goal[None], now)
            positions[k], goals[k] = goal, goal
    return chosen


def test_uncoordinated_planners_crowd_the_uncertain_corner(shared_loop):
    chosen = fly(fleet(enabled=False), shared_loop, rounds=1)
    (first, *_), (second, *_) = chosen
    assert (first > UNCERTAIN).all() and (second > UNCERTAIN).all()
    assert np.linalg.norm(first - second) < 30.0


def test_coordinated_planners_never_choose_goals_within_the_separation(shared_loop):
    chosen = fly(fleet(enabled=True), shared_loop, rounds=3)
    assert (chosen[0][0] > UNCERTAIN).all()  # the first goes to the uncertain corner
    for goal, position, other_goal in chosen:
        assert np.linalg.norm(goal - position) >= 30.0
        if other_goal is not None:
            assert np.linalg.norm(goal - other_goal) >= 30.0


def test_the_score_is_conditioned_on_the_teammates_path(shared_loop):
    """A teammate about to sweep the uncertain corner makes it no more informative than the
    rest: the vehicle goes elsewhere even with no separation."""
    alone, with_teammate = fleet(enabled=True, separation=0.0)
    corner = alone.plan(np.array([50.0, 50.0]), shared_loop.uncertainty, None,
                        alone.view(0.0))[0]
    assert (corner > UNCERTAIN).all()
    lines = np.arange(UNCERTAIN + 2.0, SIDE, 6.0)  # a lawnmower over the corner
    sweep = np.array([(x, y) for i, x in enumerate(lines)
                      for y in ((UNCERTAIN, SIDE) if i % 2 == 0 else (SIDE, UNCERTAIN))])
    with_teammate.teammates.update("auv0", sweep[0], sweep[1:], 0.0)
    goal = with_teammate.plan(np.array([50.0, 50.0]), shared_loop.uncertainty, None,
                              with_teammate.view(0.0))[0]
    assert not (goal > UNCERTAIN).all()


def test_coordination_needs_the_max_entropy_planner():
    workspace = Workspace.from_extent(0.0, SIDE, 0.0, SIDE)
    with pytest.raises(ConfigError, match="max_entropy"):
        Coordinator(CoordinationConfig(enabled=True), FleetMemberConfig(),
                    RandomPlanner(workspace, np.random.default_rng(0)))
    with pytest.raises(ConfigError, match="vehicle_index 2"):
        FleetMemberConfig(vehicle_index=2, vehicles=2)


def test_a_parameter_file_may_configure_the_planner_s_fleet(tmp_path):
    path = tmp_path / "auv1.yaml"
    path.write_text(yaml.safe_dump({"/**/planner": {"ros__parameters": {
        "fleet": {"vehicle_index": 1, "vehicles": 2, "teammates": ["/auv0/fleet/plan"]},
        "coordination": {"enabled": True, "separation": 25.0}}}}))
    MissionSetup.from_file(path)  # checked against the planner's declared classes
    path.write_text(yaml.safe_dump({"/**/planner": {"ros__parameters": {
        "coordination": {"separaton": 25.0}}}}))
    with pytest.raises(ConfigError, match="separaton"):
        MissionSetup.from_file(path)
