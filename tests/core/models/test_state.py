"""Saving and loading the whole model state; every bad file gives one clear error."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from poam_ros.models import StateFileError, load_model, state_io
from poam_ros.models.poam import POAM


@pytest.fixture
def trained(stream, small_config):
    model = POAM(small_config)
    for x, y in stream(3, 70):
        model.add_data(x, y)
        model.update()
    return model


QUERY = np.array([[0.0, 0.0], [12.5, -3.0], [-29.0, 29.0]])


def test_round_trip_predicts_identically(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    loaded = load_model(path)
    for a, b in zip(trained.predict(QUERY), loaded.predict(QUERY)):
        assert np.array_equal(a, b)
    assert np.array_equal(trained.inducing_inputs, loaded.inducing_inputs)
    assert loaded.num_samples == trained.num_samples
    assert loaded.rejections == trained.rejections


def test_loaded_model_continues_exactly(trained, stream, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    loaded = POAM.load(path)
    for x, y in stream(2, 50):
        for model in (trained, loaded):
            model.add_data(x, y)
            model.update()
    assert np.array_equal(trained.predict(QUERY)[0], loaded.predict(QUERY)[0])


def test_save_is_atomic_and_leaves_no_temporary(trained, tmp_path):
    path = tmp_path / "sub" / "map.pt"
    trained.save(path)
    trained.save(path)  # overwriting an existing file
    assert [p.name for p in path.parent.iterdir()] == ["map.pt"]


def test_missing_file(tmp_path):
    with pytest.raises(StateFileError, match=r"nope\.pt: no such file"):
        POAM.load(tmp_path / "nope.pt")


def test_truncated_file(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StateFileError, match=r"map\.pt: .* the file is truncated"):
        POAM.load(path)
    path.write_bytes(data[:30])  # within the header line
    with pytest.raises(StateFileError, match=r"map\.pt: the header line is damaged"):
        POAM.load(path)


def test_foreign_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(StateFileError, match="not a readable"):
        POAM.load(text)
    other = tmp_path / "weights.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(StateFileError, match="not a poam_ros model state file"):
        POAM.load(other)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(StateFileError, match=r"empty\.pt: the file is empty"):
        POAM.load(path)


def flipped(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x10]) + data[offset + 1:]


def test_a_flipped_byte_anywhere_in_the_payload_is_refused(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    data = path.read_bytes()
    # Offsets spread over the payload, and inside the Cholesky factor's own bytes (a flip
    # there changes one value of the map and leaves a readable archive).
    factor = trained.state_dict()["posterior"]["sqrt"].numpy().tobytes()
    start = data.find(factor)
    assert start > 0
    payload = data.index(b"\n") + 1
    offsets = [start, start + len(factor) // 2, start + len(factor) - 1,
               *np.linspace(payload, len(data) - 1, 17).astype(int)]
    for offset in offsets:
        path.write_bytes(flipped(data, offset))
        with pytest.raises(StateFileError, match=r"map\.pt: .*checksum does not match"):
            POAM.load(path)
    path.write_bytes(data)  # intact again: it loads
    assert np.array_equal(POAM.load(path).predict(QUERY)[0], trained.predict(QUERY)[0])


def test_a_flipped_byte_in_the_header_is_refused(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    data = path.read_bytes()
    for offset in range(data.index(b"\n") + 1):
        path.write_bytes(flipped(data, offset))
        with pytest.raises(StateFileError, match=r"map\.pt: "):
            POAM.load(path)


def test_a_file_of_the_previous_version_is_refused(trained, tmp_path):
    """Version 1: the state and its header fields in one torch archive, no checksum."""
    path = tmp_path / "old.pt"
    torch.save({"format": state_io.FORMAT, "version": 1, "method": "poam",
                "state": trained.state_dict()}, path)
    with pytest.raises(StateFileError, match=r"old\.pt: format version 1 is not the "
                                             r"supported version 2"):
        POAM.load(path)


def test_version_and_method_mismatch(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    current = f"{state_io.FORMAT} {state_io.VERSION} ".encode()
    newer = f"{state_io.FORMAT} {state_io.VERSION + 1} ".encode()
    path.write_bytes(path.read_bytes().replace(current, newer, 1))
    with pytest.raises(StateFileError, match=f"format version {state_io.VERSION + 1} is not "
                                             f"the supported version {state_io.VERSION}"):
        POAM.load(path)
    state_io.write_state(path, "ovc", trained.state_dict())
    with pytest.raises(StateFileError, match="holds a 'ovc' model"):
        POAM.load(path)


def test_inconsistent_payload_is_refused_whole(trained, tmp_path):
    path = tmp_path / "map.pt"
    state = trained.state_dict()
    state["buffer_x"] = state["buffer_x"][:5]
    state_io.write_state(path, "poam", state)
    with pytest.raises(StateFileError, match="inconsistent contents"):
        POAM.load(path)


KILLED_SAVE = """
import os, signal, sys
from poam_ros.models import state_io
state_io.os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
state_io.write_state(sys.argv[1], "poam", {"x": 1})
"""


def test_stale_temporaries_of_a_killed_save_are_removed_and_nothing_else(trained, tmp_path):
    path = tmp_path / "map.pt"
    trained.save(path)
    killed = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(path)], timeout=120)
    assert killed.returncode == -9
    [stale] = [p for p in tmp_path.iterdir() if p.name != "map.pt"]
    assert stale.name.startswith(".map.pt.") and stale.name.endswith(".tmp")
    others = [".map.pt.tmp", ".map.pt.x.abcd1234.tmp", ".map.pt2.abcd1234.tmp",
              ".other.pt.abcd1234.tmp", ".map.pt.abcd1234.tmp.keep", "map.pt.abcd1234.tmp",
              ".map.pt.abcd123.tmp", "notes.txt"]
    for name in others:
        (tmp_path / name).write_text("keep me")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / stale.name).write_text("another folder's file")

    assert state_io.remove_stale_temporaries(path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*others, "map.pt", "sub"])
    assert (tmp_path / "sub" / stale.name).exists()
    POAM.load(path)  # the state itself is untouched
    assert state_io.remove_stale_temporaries(tmp_path / "absent" / "map.pt") == []


def test_saving_before_any_update_is_refused(small_config):
    from poam_ros.models import ModelNotReadyError
    with pytest.raises(ModelNotReadyError):
        POAM(small_config).state_dict()


def test_a_state_of_an_unknown_method_is_refused_naming_it(tmp_path):
    path = state_io.write_state(tmp_path / "future.pt", "dual-gp-v9", {"config": {}})
    with pytest.raises(StateFileError, match=r"future\.pt.*'dual-gp-v9', unknown"):
        load_model(path)


def test_a_file_with_the_family_options_flat_still_loads(trained, tmp_path):
    """Files written before the family options were grouped (``vips_delta`` beside the shared
    settings) load with their values under the new names: a saved map is not lost."""
    state = trained.state_dict()
    config = state["config"]
    for old, new in trained.config.RENAMED.items():
        family, name = new.split(".")
        config[old] = config[family][name]
    for family in trained.config.groups():
        del config[family]
    config["vips_delta"] = 0.005
    path = state_io.write_state(tmp_path / "old.pt", "poam", state)
    loaded = load_model(path)
    assert loaded.config == trained.config.replace(vips={"delta": 0.005})
    for a, b in zip(trained.predict(QUERY), loaded.predict(QUERY)):
        assert np.array_equal(a, b)
