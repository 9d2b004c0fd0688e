"""Fixtures of the bag tests: a survey recorded from the ROS-free simulated AUV."""

from __future__ import annotations

import pytest

from poam_ros.bags.sim_survey import write_survey
from poam_ros.setup.mission_setup import MissionSetup


def small_setup() -> MissionSetup:
    setup = MissionSetup()
    setup.mission = setup.mission.replace(seed=2)
    setup.mapping = setup.mapping.replace(num_inducing=30, train_steps=2, device="cpu")
    setup.pilot = setup.pilot.replace(num_waypoints=4)
    return setup


@pytest.fixture(scope="session")
def make_small_setup():
    """:func:`small_setup`, for a test that changes its own copy."""
    return small_setup


@pytest.fixture(scope="session")
def survey_bag(tmp_path_factory):
    setup = small_setup()
    return setup, write_survey(tmp_path_factory.mktemp("survey") / "survey", setup,
                               chunk_size=4096)
