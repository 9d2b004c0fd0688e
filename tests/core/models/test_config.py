"""MappingConfig: the shared settings and each method family's options (``mapping.<family>.*``);
the families' former flat names are refused with the new ones, but read from a saved model."""

import pytest

from poam_ros.models import MappingConfig
from poam_ros.models.config import DualOptions, VipsOptions
from poam_ros.params import ConfigError


def test_each_family_s_options_are_a_group_of_their_own():
    groups = MappingConfig.groups()
    assert set(groups) == {"ssgp", "kmeans", "vips", "cv", "oips", "dual", "cmogp", "exact"}
    names = {spec.name for spec in MappingConfig.specs()}
    assert {"vips.delta", "oips.rho", "dual.objective", "exact.max_samples"} <= names
    assert not any(name.startswith(f"{family}_") for family in groups for name in names)


@pytest.mark.parametrize("old, new", sorted(MappingConfig.RENAMED.items()))
def test_a_former_flat_name_is_refused_with_its_new_one(old, new):
    assert new in {spec.name for spec in MappingConfig.specs()}
    with pytest.raises(ConfigError, match=rf"{old} \(now {new}\)"):
        MappingConfig.from_dict({old: MappingConfig().to_parameters()[new]})


def test_a_saved_flat_config_is_read_with_the_new_names():
    """A state file written before the groups holds the family options flat."""
    saved = {"method": "dual-gp", "vips_delta": 0.005, "dual_memory_per_batch": 7,
             "dual_objective": "all-data", "num_inducing": 40}
    config = MappingConfig.from_saved(saved)
    assert config.vips == VipsOptions(delta=0.005)
    assert config.dual == DualOptions(memory_per_batch=7, objective="all-data")
    assert config.num_inducing == 40
    assert MappingConfig.from_saved(config.to_dict()) == config
