"""Fixtures shared by every test tier."""

import pytest
import yaml

from poam_ros.setup.mission_setup import default_parameter_file


@pytest.fixture(scope="session")
def small_parameter_file(tmp_path_factory):
    """``small_parameter_file(**sections) -> path``: the package's parameter file with a
    small mission (a 5-waypoint pilot survey, M = 20, one training step, few candidates,
    a 10 × 10 evaluation grid, the mapper on one CPU thread), updated per node section with
    ``sections`` (``mapper={"mapping": {"num_inducing": 40}}``: the ``/**/mapper`` section),
    in a new folder."""

    def write(**sections):
        tree = yaml.safe_load(default_parameter_file().read_text())
        small = {"mapper": {"mapping": {"num_inducing": 20, "train_steps": 1, "device": "cpu"},
                            "torch_threads": 1, "journal": {"enabled": False},
                            "evaluation_grid": 10},
                 "planner": {"pilot": {"num_waypoints": 5},
                             "max_entropy": {"num_candidates": 50}},
                 "mission": {"mission": {"eval_grid": 10}}}
        for changes in (small, sections):
            for node, values in changes.items():
                _update(tree[f"/**/{node}"]["ros__parameters"], values)
        path = tmp_path_factory.mktemp("params") / "small.yaml"
        path.write_text(yaml.safe_dump(tree))
        return path

    return write


def _update(tree: dict, changes: dict) -> None:
    for key, value in changes.items():
        if isinstance(value, dict):
            _update(tree.setdefault(key, {}), value)
        else:
            tree[key] = value
