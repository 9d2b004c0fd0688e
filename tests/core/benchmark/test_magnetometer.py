"""The magnetometer loader on a small file in the format of ``invensense.npz``."""

import numpy as np
import pytest

from poam_ros.benchmark import magnetometer
from poam_ros.benchmark.magnetometer import (
    DEFAULT_FILE,
    field_magnitude,
    held_out,
    load_path,
    streaming_batches,
)


@pytest.fixture
def survey(tmp_path):
    """Nine paths of 7 + i samples; path 2's rows are stored out of time order."""
    rng = np.random.default_rng(0)
    arrays = {}
    for i in range(1, 10):
        n = 7 + i
        arrays[f"path{i}_xy"] = rng.uniform(0, 6, (n, 2))
        arrays[f"path{i}_field"] = rng.normal(0, 30, (n, 3))
        arrays[f"path{i}_t"] = 20.0 + 0.02 * np.arange(n)
    arrays["path2_t"] = arrays["path2_t"][::-1].copy()
    file = tmp_path / "invensense.npz"
    np.savez(file, **arrays)
    return file, arrays


def test_field_magnitude_is_the_norm_of_the_axes():
    field = np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0], [0.0, 0.0, -5.0]])
    assert np.array_equal(field_magnitude(field), [5.0, 3.0, 5.0])


def test_a_path_in_time_order(survey):
    file, arrays = survey
    path = load_path(2, file)
    assert len(path) == 9 and path.index == 2
    assert np.all(np.diff(path.time) > 0)
    assert np.array_equal(path.xy, arrays["path2_xy"][::-1])
    assert np.array_equal(path.magnitude, field_magnitude(arrays["path2_field"][::-1]))
    same = load_path(3, file)
    assert np.array_equal(same.xy, arrays["path3_xy"])
    with pytest.raises(ValueError, match="no magnetometer path 10"):
        load_path(10, file)


def test_batches_split_the_path_in_time_order(survey):
    file, arrays = survey
    path = load_path(3, file)  # 10 samples
    batches = streaming_batches(path, 3)
    assert [len(x) for x, _ in batches] == [4, 3, 3]
    assert np.array_equal(np.concatenate([x for x, _ in batches]), path.xy)
    assert np.array_equal(np.concatenate([y for _, y in batches]), path.magnitude)
    with pytest.raises(ValueError, match="cannot split 10 samples into 11"):
        streaming_batches(path, 11)


def test_held_out_paths_are_concatenated(survey):
    file, arrays = survey
    x, y = held_out((1, 4), file)
    assert np.array_equal(x, np.concatenate([arrays["path1_xy"], arrays["path4_xy"]]))
    assert np.array_equal(y, field_magnitude(np.concatenate([arrays["path1_field"],
                                                             arrays["path4_field"]])))


@pytest.mark.skipif(not DEFAULT_FILE.exists(), reason=f"no shared data at {DEFAULT_FILE}")
def test_the_shared_file_holds_the_readmes_paths():
    sizes = [len(load_path(i)) for i in magnetometer.PATH_INDICES]
    assert sizes == [8875, 9105, 9404, 7332, 8313, 7119, 8394, 8928, 8557]
    assert 40 < load_path(3).magnitude.mean() < 60  # µT: the Earth's field and the building's
