"""The method registry is the one list of methods: a method of the tests' own, registered with
one line, is a choice of ``mapping.method`` and runs through ``poam-ros mission`` and a quick
``bench sweep``; a method the registry does not hold is refused everywhere."""

import json

import pytest
from toy_method import ToyPoam

from poam_ros.benchmark import sweep
from poam_ros.cli.mission import mission
from poam_ros.models import MappingConfig, make_model
from poam_ros.models.registry import METHODS
from poam_ros.params import ConfigError


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(METHODS, ToyPoam.method, ToyPoam)  # the registry line
    return ToyPoam.method


def test_every_method_is_a_choice_of_mapping_method_and_no_other():
    [method] = [spec for spec in MappingConfig.specs() if spec.name == "method"]
    assert method.choices == tuple(METHODS)
    with pytest.raises(ConfigError, match="MappingConfig.method must be one of"):
        MappingConfig(method=ToyPoam.method)


def test_a_registered_method_is_a_choice_and_is_made_by_name(toy):
    [method] = [spec for spec in MappingConfig.specs() if spec.name == "method"]
    assert toy in method.choices
    model = make_model(MappingConfig(method=toy, device="cpu"))
    assert type(model) is ToyPoam and model.method == toy


def test_a_registered_method_flies_a_mission(toy, tmp_path, small_parameter_file):
    out = tmp_path / "out"
    assert mission(["--params", str(small_parameter_file()), "--method", toy,
                    "--max-samples", "500", "--out", str(out)]) == 0
    summary = json.loads((out / "mission.json").read_text())
    assert summary["setup"]["mapping"]["method"] == toy
    assert summary["final"]["num_samples"] >= 500


def test_a_registered_method_runs_in_a_quick_sweep(toy, tmp_path, small_parameter_file):
    out = tmp_path / "out"
    assert sweep.main(["--maps", "params", "--params", str(small_parameter_file()),
                       "--methods", toy, "--seeds", "0", "--quick", "--no-progress",
                       "--figure-seeds", "", "--out", str(out)]) == 0
    status = json.loads((out / "runs" / f"params_{toy}_attentive_0.json").read_text())
    assert status["status"] == "done" and status["samples"] >= 700
    assert f"| params | {toy} | attentive | 1 |" in (out / "summary.md").read_text()
