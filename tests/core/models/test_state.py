"""Saving and loading the whole model state; every bad file gives one clear error."""

import numpy as np
import pytest
import torch

from poam_ros.models import POAM, StateFileError, load_model, state_io


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
    with pytest.raises(StateFileError, match="not a readable model state file"):
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


def tampered(model, path, change) -> None:
    """Save ``model`` to ``path``, then rewrite the file's payload with ``change(payload)``."""
    model.save(path)
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


def test_version_and_method_mismatch(trained, tmp_path):
    path = tmp_path / "map.pt"
    tampered(trained, path, lambda payload: payload.update(version=state_io.VERSION + 1))
    with pytest.raises(StateFileError, match="format version"):
        POAM.load(path)
    tampered(trained, path, lambda payload: payload.update(method="ovc"))
    with pytest.raises(StateFileError, match="holds a 'ovc' model"):
        POAM.load(path)


def test_inconsistent_payload_is_refused_whole(trained, tmp_path):
    path = tmp_path / "map.pt"

    def truncate_buffer(payload):
        payload["state"]["buffer_x"] = payload["state"]["buffer_x"][:5]

    tampered(trained, path, truncate_buffer)
    with pytest.raises(StateFileError, match="inconsistent contents"):
        POAM.load(path)


def test_saving_before_any_update_is_refused(small_config):
    from poam_ros.models import ModelNotReadyError
    with pytest.raises(ModelNotReadyError):
        POAM(small_config).state_dict()
