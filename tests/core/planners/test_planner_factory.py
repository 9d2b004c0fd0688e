import numpy as np
import pytest

from poam_ros.params import ConfigError
from poam_ros.planners import (
    PLANNERS,
    LawnmowerConfig,
    LawnmowerPlanner,
    MaxEntropyConfig,
    MaxEntropyPlanner,
    Planner,
    RandomPlanner,
    make_planner,
)
from poam_ros.workspace import Workspace


@pytest.fixture
def workspace():
    return Workspace.from_extent(0.0, 10.0, 0.0, 10.0)


@pytest.mark.parametrize("name, planner_class", [
    ("max_entropy", MaxEntropyPlanner), ("random", RandomPlanner),
    ("lawnmower", LawnmowerPlanner)])
def test_every_name_builds_a_planner_that_plans_inside(workspace, name, planner_class):
    planner = make_planner(name, workspace, np.random.default_rng(0))
    assert isinstance(planner, planner_class) and isinstance(planner, Planner)
    waypoints = planner.plan(np.array([5.0, 5.0]), lambda xy: np.ones(len(xy)))
    assert waypoints.ndim == 2 and waypoints.shape[1] == 2
    workspace.check(waypoints, f"{name} waypoints")
    planner.reset()


def test_config_is_passed_through(workspace):
    planner = make_planner("max_entropy", workspace, np.random.default_rng(0),
                           MaxEntropyConfig(num_candidates=10))
    assert planner.config.num_candidates == 10
    lawnmower = make_planner("lawnmower", workspace, np.random.default_rng(0),
                             LawnmowerConfig(spacing=5.0))
    assert len(lawnmower.pattern()) == 4


def test_registry_names():
    assert set(PLANNERS) == {"max_entropy", "random", "lawnmower"}


def test_unknown_name_and_wrong_config_raise(workspace):
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="unknown planner 'greedy'; known: lawnmower"):
        make_planner("greedy", workspace, rng)
    with pytest.raises(ConfigError, match="needs a LawnmowerConfig"):
        make_planner("lawnmower", workspace, rng, MaxEntropyConfig())
    with pytest.raises(ConfigError, match="takes no config"):
        make_planner("random", workspace, rng, MaxEntropyConfig())
