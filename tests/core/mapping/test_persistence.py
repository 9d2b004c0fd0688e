"""The mapper's persistence without ROS: a start resumes what a killed process journaled (its
autosave and the tail after it, or the journal alone), a reset and samples set aside leave
the journal, autosaves come on schedule, and one process at a time holds a journal."""

import logging

import numpy as np
import pytest
from journal_data import SMALL, Clock, batch

from poam_ros.mapping.journal import JournalConfig
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.persistence import MapPersistence
from poam_ros.models import NumericalError, StateFileError
from poam_ros.models.poam import POAM


def persistence(tmp_path, clock=None, channels=(), **journal):
    config = JournalConfig(**{"path": str(tmp_path / "j"), "autosave_period": 0.0, **journal})
    return MapPersistence(config, str(tmp_path / "map.pt"), channels,
                          **({} if clock is None else {"clock": clock}))


def crash(persistence):
    """The process dies: the journal is left as it is, its lock released."""
    persistence.journal.close()


def mapped(persistence, loop, xy, z, stamp):
    """A batch as the node maps it: journaled, then one update."""
    persistence.append(xy, z, stamp)
    checkpoint = persistence.checkpoint()
    step = loop.step([(xy, z)])
    persistence.updated()
    return step, checkpoint


def test_a_start_resumes_the_autosave_and_replays_the_tail_after_it(tmp_path):
    first = persistence(tmp_path, autosave_updates=1)
    opened = first.open(SMALL)
    assert not opened.loaded and opened.replay is None and opened.model.num_samples == 0
    assert first.state == str(tmp_path / "j")
    loop = MappingLoop(opened.model)
    _, checkpoint = mapped(first, loop, *batch(0), stamp=1)
    assert checkpoint is not None and first.autosave(loop.model, checkpoint) is not None
    tail = batch(1)
    first.append(*tail, stamp=2)
    crash(first)

    opened = persistence(tmp_path).open(SMALL)
    assert opened.loaded and opened.model.num_samples == 50  # the autosave
    xy, z, stamp = opened.replay  # then the tail, as one batch for the first update
    np.testing.assert_array_equal(xy, tail[0])
    np.testing.assert_array_equal(z, tail[1])
    assert stamp == opened.stamp == 2


def test_a_journal_without_autosave_is_replayed_whole_and_wins_over_state_file(tmp_path,
                                                                                caplog):
    first = persistence(tmp_path)
    first.open(SMALL)
    batches = [batch(seed) for seed in range(3)]
    for stamp, (xy, z) in enumerate(batches, start=1):
        first.append(xy, z, stamp)
    crash(first)

    second = persistence(tmp_path)
    with caplog.at_level(logging.INFO, "poam_ros.mapping.persistence"):
        opened = second.open(SMALL, state_file=str(tmp_path / "absent.pt"))
    assert not opened.loaded and opened.model.num_samples == 0
    np.testing.assert_array_equal(opened.replay[0], np.concatenate([b[0] for b in batches]))
    assert opened.stamp == 3
    assert "state_file" in caplog.text and "restoring the map" in caplog.text
    assert second.checkpoint() is not None  # an autosave is due after the replay


def test_a_state_file_becomes_the_journal_s_first_autosave(tmp_path):
    model = MappingLoop(MapPersistence(JournalConfig(enabled=False), "").open(SMALL).model)
    model.step([batch(0)])
    model.model.save(tmp_path / "saved.pt")
    first = persistence(tmp_path)
    opened = first.open(SMALL, state_file=str(tmp_path / "saved.pt"))
    assert opened.loaded and opened.replay is None and opened.model.num_samples == 50
    crash(first)
    assert persistence(tmp_path).open(SMALL).model.num_samples == 50

    wrong = persistence(tmp_path / "other", channels=("temperature",))
    with pytest.raises(StateFileError, match="channel"):
        wrong.open(SMALL, state_file=str(tmp_path / "saved.pt"))
    assert not (tmp_path / "other" / "j").exists()  # the journal it began is removed


def test_a_reset_begins_a_new_map(tmp_path):
    first = persistence(tmp_path)
    loop = MappingLoop(first.open(SMALL).model)
    mapped(first, loop, *batch(0), stamp=1)
    first.new_map()
    later = batch(1)
    first.append(*later, stamp=5)
    crash(first)

    opened = persistence(tmp_path).open(SMALL)
    assert not opened.loaded and len(opened.replay[0]) == 50 and opened.stamp == 5
    np.testing.assert_array_equal(opened.replay[0], later[0])


@pytest.mark.parametrize("first_update", [True, False])
def test_samples_set_aside_leave_the_journal(tmp_path, monkeypatch, first_update):
    """After a failed update the journal's base moves past the samples set aside; the batch
    that came during the update is journaled again after it."""
    journal = persistence(tmp_path)
    loop = MappingLoop(journal.open(SMALL).model)
    if not first_update:
        mapped(journal, loop, *batch(0), stamp=1)

    def fail(*_):
        raise NumericalError("Cholesky of K_uu failed (test)")

    monkeypatch.setattr(POAM, "_update_posterior", fail)
    poison, later = batch(1), batch(2)
    journal.append(*poison, stamp=2)
    journal.append(*later, stamp=3)  # arrives during the update
    step = loop.step([poison])
    monkeypatch.undo()
    assert step.set_aside == 50
    checkpoint = journal.rebase(loop.model, 2, [(*later, 3)])
    assert (checkpoint is None) == first_update  # no model yet: a new map
    if checkpoint is not None:
        assert journal.autosave(loop.model, checkpoint) is not None
    crash(journal)

    opened = persistence(tmp_path).open(SMALL)
    assert opened.model.num_samples == (0 if first_update else 50)
    np.testing.assert_array_equal(opened.replay[0], later[0])


def test_autosaves_come_by_period_and_by_update_count(tmp_path):
    clock = Clock()
    timed = persistence(tmp_path / "a", clock=clock, autosave_period=10.0)
    loop = MappingLoop(timed.open(SMALL).model)
    assert mapped(timed, loop, *batch(0), stamp=1)[1] is None
    clock.now = 10.0
    _, checkpoint = mapped(timed, loop, *batch(1), stamp=2)
    assert checkpoint is not None and timed.autosave(loop.model, checkpoint) is not None
    clock.now = 19.0
    assert timed.checkpoint() is None  # the period counts from the autosave
    clock.now = 20.0
    assert timed.checkpoint() is not None

    counted = persistence(tmp_path / "b", autosave_updates=2)
    loop = MappingLoop(counted.open(SMALL).model)
    assert mapped(counted, loop, *batch(0), stamp=1)[1] is None
    _, checkpoint = mapped(counted, loop, *batch(1), stamp=2)
    assert checkpoint is not None and counted.autosave(loop.model, checkpoint) is not None
    assert mapped(counted, loop, *batch(2), stamp=3)[1] is None  # counted from the autosave


def test_one_writer_at_a_time_and_an_orderly_close_removes_the_journal(tmp_path, caplog):
    holder = persistence(tmp_path)
    holder.open(SMALL)
    second = persistence(tmp_path)
    opened = second.open(SMALL)  # maps on, without a journal
    assert second.journal is None and second.state.startswith("off:")
    assert "in use by another process" in second.state and opened.model.num_samples == 0
    second.append(*batch(0), stamp=1)  # nothing to journal into
    holder.close()
    assert not (tmp_path / "j").exists()
    holder.close()  # idempotent


def test_an_io_error_stops_the_journal_not_the_mapping(tmp_path, monkeypatch):
    journal = persistence(tmp_path, autosave_updates=1)
    journal.open(SMALL)

    def broken(*_args, **_kwargs):
        raise OSError("disk full (test)")

    monkeypatch.setattr(journal.journal, "append", broken)
    journal.append(*batch(0), stamp=1)
    assert journal.state == "failed: cannot append to the journal: disk full (test)"
    assert journal.checkpoint() is None  # journaling stopped; the journal stays until close
    assert (tmp_path / "j").exists()


def autosaved_then_killed(tmp_path, channels=()):
    """A mapper that autosaved after its first batch and journaled a second, then died:
    (its journal's directory, the batches it had accepted)."""
    first = persistence(tmp_path, channels=channels, autosave_updates=1)
    loop = MappingLoop(first.open(SMALL.replace(method="poam-mt") if channels else SMALL).model)
    batches = [batch(0), batch(1)]
    if channels:
        batches = [(xy, np.column_stack([z, z + 4.0])) for xy, z in batches]
    _, checkpoint = mapped(first, loop, *batches[0], stamp=1)
    assert first.autosave(loop.model, checkpoint) is not None
    first.append(*batches[1], stamp=2)
    crash(first)
    return tmp_path / "j", batches


def kept_directory(tmp_path):
    kept = sorted(tmp_path.glob("j.*.kept"))
    assert len(kept) == 1
    return kept[0]


def test_records_without_their_autosave_restart_as_a_map_of_their_own(tmp_path, caplog):
    directory, batches = autosaved_then_killed(tmp_path)
    (directory / "autosave-00000001.pt").unlink()  # and segment 0 went with the autosave
    second = persistence(tmp_path)
    with caplog.at_level(logging.WARNING, "poam_ros.mapping.persistence"):
        opened = second.open(SMALL)
    assert not opened.loaded and opened.model.num_samples == 0
    np.testing.assert_array_equal(opened.replay[0], batches[1][0])  # never deleted
    assert "samples before it are lost" in caplog.text and "a map of its own" in caplog.text
    assert second.state == f"{directory}; resumed without the samples before segment 1"
    assert second.checkpoint() is not None  # autosaved at once: a whole map again
    second.close()  # an orderly stop still ends the map
    assert not directory.exists()


def test_an_autosave_that_does_not_load_is_kept_and_its_records_replayed(tmp_path, caplog):
    directory, batches = autosaved_then_killed(tmp_path)
    autosave = directory / "autosave-00000001.pt"
    damaged = bytearray(autosave.read_bytes())
    damaged[-5] ^= 0xFF
    autosave.write_bytes(bytes(damaged))
    second = persistence(tmp_path)
    with caplog.at_level(logging.WARNING, "poam_ros.mapping.persistence"):
        opened = second.open(SMALL)
    kept = kept_directory(tmp_path)
    assert (kept / autosave.name).read_bytes() == bytes(damaged)  # as it was
    assert "autosave-00000001.pt cannot go into this map" in caplog.text
    np.testing.assert_array_equal(opened.replay[0], batches[1][0])
    assert second.state == (f"{directory}; files it cannot use kept in {kept}; resumed "
                            f"without the samples before segment 1")


def test_a_journal_of_another_channel_count_is_kept_whole(tmp_path, caplog):
    directory, _ = autosaved_then_killed(tmp_path, channels=("temperature",))
    names = sorted(p.name for p in directory.glob("*-*"))
    sizes = {name: (directory / name).stat().st_size for name in names}
    second = persistence(tmp_path)  # the depth alone now
    with caplog.at_level(logging.WARNING, "poam_ros.mapping.persistence"):
        opened = second.open(SMALL)
    assert opened.replay is None and opened.model.num_samples == 0  # a new map
    kept = kept_directory(tmp_path)
    assert {p.name: p.stat().st_size for p in kept.iterdir()} == sizes
    assert "2 targets per sample, this journal's 1" in caplog.text
    assert "kept in" in second.state
    second.close()
    assert not directory.exists() and sorted(p.name for p in kept.iterdir()) == names
