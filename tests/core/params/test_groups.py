"""Nested configs (:func:`poam_ros.params.group`): one part's options as ``<group>.<name>``
parameters beside the shared ones, on the one path dataclass -> parameter file -> config;
a renamed field is refused with its new name. No ROS needed."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

import pytest

from poam_ros.params import ConfigError, Params, group, param
from poam_ros.params.files import config_from_parameters, load_configs
from poam_ros.params.kinds import parameter_kind


@dataclass
class SonarOptions(Params):
    gain: float = param(1.0, "sonar gain", low=0.0)
    beams: list[int] = param([], "beams in use")


@dataclass
class SurveyConfig(Params):
    RENAMED: ClassVar[dict[str, str]] = {"sonar_gain": "sonar.gain"}

    speed: float = param(1.0, "cruise speed", unit="m/s", low=0.1)
    sonar: SonarOptions = group(SonarOptions)


def test_a_group_s_fields_are_dotted_parameters():
    specs = {spec.name: spec for spec in SurveyConfig.specs()}
    assert list(specs) == ["speed", "sonar.gain", "sonar.beams"]
    assert specs["sonar.gain"].low == 0.0
    assert parameter_kind(SurveyConfig, specs["sonar.beams"]) == "integer_array"
    assert SurveyConfig.groups() == {"sonar": SonarOptions}
    config = SurveyConfig(sonar=SonarOptions(gain=2.0))
    assert config.to_dict() == {"speed": 1.0, "sonar": {"gain": 2.0, "beams": []}}
    assert config.to_parameters() == {"speed": 1.0, "sonar.gain": 2.0, "sonar.beams": []}


def test_a_group_is_given_as_a_mapping_a_config_or_dotted_names():
    expected = SurveyConfig(speed=2.0, sonar=SonarOptions(gain=3.0))
    assert SurveyConfig.from_dict({"speed": 2.0, "sonar": {"gain": 3.0}}) == expected
    assert SurveyConfig.from_dict({"speed": 2.0, "sonar.gain": 3.0}) == expected
    assert SurveyConfig.from_dict(speed=2.0, sonar=SonarOptions(gain=3.0)) == expected
    assert SurveyConfig.from_dict(expected.to_dict()) == expected


def test_replace_changes_only_the_named_fields_of_a_group():
    config = SurveyConfig(sonar=SonarOptions(gain=3.0, beams=[1, 2]))
    assert config.replace(sonar={"gain": 4.0}).sonar == SonarOptions(4.0, [1, 2])
    assert config.replace(**{"sonar.gain": 4.0}).sonar == SonarOptions(4.0, [1, 2])
    assert config.replace(sonar=SonarOptions()).sonar == SonarOptions()
    assert config.sonar.gain == 3.0  # copies


@pytest.mark.parametrize("values, message", [
    ({"sonar": {"gian": 1.0}}, r"unknown parameter\(s\) sonar.gian"),
    ({"sonar.gian": 1.0}, r"unknown parameter\(s\) sonar.gian"),
    ({"sonar_gain": 1.0}, r"unknown parameter\(s\) sonar_gain \(now sonar.gain\)"),
    ({"sonar": {"gain": -1.0}}, "SonarOptions.gain must be >= 0.0"),
    ({"sonar": 5}, "SurveyConfig.sonar must be a SonarOptions, got 5"),
])
def test_bad_group_values_are_refused(values, message):
    with pytest.raises(ConfigError, match=message):
        SurveyConfig.from_dict(values)


def test_replace_refuses_a_renamed_field_with_its_new_name():
    with pytest.raises(ConfigError, match=r"sonar_gain \(now sonar.gain\)"):
        SurveyConfig().replace(sonar_gain=2.0)


def write(tmp_path, text):
    path = tmp_path / "params.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_parameter_file_nests_a_group_under_its_config(tmp_path):
    path = write(tmp_path, """
        robot:
          ros__parameters:
            survey:
              speed: 2.0
              sonar:
                gain: 3.0
                beams: [1, 2]
    """)
    loaded = load_configs(path, "robot", {"survey": SurveyConfig})
    assert loaded["survey"] == SurveyConfig(2.0, SonarOptions(3.0, [1, 2]))


@pytest.mark.parametrize("section, message", [
    ("sonar_gain: 3.0", r"unknown parameter\(s\) survey.sonar_gain \(now survey.sonar.gain\)"),
    ("sonar: {gian: 3.0}", r"unknown parameter\(s\) survey.sonar.gian$"),
    ("sonar: {gain: 3}", "write 1.0"),
])
def test_a_parameter_file_s_bad_group_keys_are_refused(tmp_path, section, message):
    path = write(tmp_path, f"""
        robot:
          ros__parameters:
            survey:
              {section}
    """)
    with pytest.raises(ConfigError, match=message):
        load_configs(path, "robot", {"survey": SurveyConfig})


def test_config_from_parameters_takes_the_groups_and_refuses_renamed_names():
    parameters = {"survey.speed": 2.0, "survey.sonar.gain": 3.0, "survey.other.x": 1}
    assert config_from_parameters(parameters, SurveyConfig, "survey") == SurveyConfig(
        2.0, SonarOptions(3.0))
    with pytest.raises(ConfigError, match=r"survey.sonar_gain \(now survey.sonar.gain\)"):
        config_from_parameters({"survey.sonar_gain": 3.0}, SurveyConfig, "survey")
