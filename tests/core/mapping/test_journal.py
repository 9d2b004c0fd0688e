"""The crash journal: records read back exactly, fsync batched, damage detected and never
replayed, and a restart at any step of an autosave neither loses nor repeats a sample."""

import os
import zlib

import numpy as np
import pytest
from journal_data import SMALL, Clock, batch

from poam_ros.mapping import journal_format
from poam_ros.mapping.journal import (
    Journal,
    JournalBusy,
    JournalConfig,
    journal_directory,
)
from poam_ros.models import load_model, make_model


def rows(xy, z):
    """Samples as a sorted (N, 3) array, to compare sets with their multiplicity."""
    table = np.column_stack([xy, z])
    return table[np.lexsort(table.T[::-1])]


def segment(directory, number):
    return directory / f"segment-{number:08d}.journal"


def test_batches_are_read_back_exactly_in_order(tmp_path):
    journal = Journal(tmp_path / "j")
    journal.start_new()
    batches = [batch(seed, n) for seed, n in ((0, 5), (1, 0), (2, 7))]
    batches[0][1][2] = np.nan  # kept as given: the model's filter drops it at replay
    for stamp, (xy, z) in enumerate(batches, start=10):
        assert journal.append(xy, z, stamp=stamp) == 24 + 24 * len(z)
    journal.close()

    recovery = Journal(tmp_path / "j").recover()
    assert recovery.resumable and recovery.autosave is None and recovery.base == 0
    assert recovery.records == 3 and recovery.stamp == 12
    assert not (recovery.torn or recovery.corrupt or recovery.unusable or recovery.partial)
    np.testing.assert_array_equal(recovery.xy, np.concatenate([b[0] for b in batches]))
    np.testing.assert_array_equal(recovery.z, np.concatenate([b[1] for b in batches]))


def test_samples_with_channels_are_read_back_exactly(tmp_path):
    """A mapper with channels journals T = 1 + C values per sample, NaN where a channel was
    not measured; a journal of another T reads none of them back, and says so."""
    journal = Journal(tmp_path / "j", targets=2)
    journal.start_new()
    batches = []
    for seed, n in ((3, 6), (4, 0), (5, 4)):
        xy, depth = batch(seed, n)
        values = np.column_stack([depth, np.where(np.arange(n) % 2, np.nan, depth + 4.0)])
        assert journal.append(xy, values, stamp=seed) == 24 + 32 * n
        batches.append((xy, values))
    with pytest.raises(ValueError, match=r"targets \(3, 2\)"):
        journal.append(np.zeros((3, 2)), np.zeros(3))
    journal.close()

    reader = Journal(tmp_path / "j", targets=2)
    recovery = reader.recover()
    reader.close()
    assert recovery.resumable and recovery.records == 3 and not recovery.unusable
    np.testing.assert_array_equal(recovery.xy, np.concatenate([b[0] for b in batches]))
    np.testing.assert_array_equal(recovery.z, np.concatenate([b[1] for b in batches]))
    depth_only = Journal(tmp_path / "j").recover()
    assert not depth_only.resumable and depth_only.z.shape == (0,)
    assert depth_only.unusable == {"segment-00000000.journal": "2 targets per sample, this "
                                                               "journal's 1"}


def test_a_batch_of_another_shape_is_refused(tmp_path):
    journal = Journal(tmp_path)
    journal.start_new()
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        journal.append(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError):
        journal.append(np.zeros((3, 2)), np.zeros(2))


def test_fsync_comes_in_batches_of_sync_period(tmp_path, monkeypatch):
    clock, fsyncs = Clock(), []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    journal = Journal(tmp_path, sync_period=1.0, clock=clock)
    journal.start_new()
    fsyncs.clear()  # the segment's creation
    for now in (0.2, 0.5, 0.9):
        clock.now = now
        journal.append(*batch(0, 3))
    assert journal.syncs == 0 and not fsyncs  # written, not yet forced to disk
    clock.now = 1.1
    journal.append(*batch(1, 3))  # a second after the last fsync: all four go down
    assert journal.syncs == 1 and len(fsyncs) == 1
    clock.now = 1.5
    journal.append(*batch(2, 3))
    assert journal.syncs == 1
    assert journal.sync() and journal.syncs == 2  # the node's timer, when no batch comes
    assert not journal.sync() and journal.syncs == 2  # nothing new

    every = Journal(tmp_path / "every", sync_period=0.0, clock=clock)
    every.start_new()
    for seed in range(4):
        every.append(*batch(seed, 3))
    assert every.syncs == 4


def three_batch_segment(tmp_path):
    """A closed journal of one segment with three batches of 10: (its path, the batches)."""
    journal = Journal(tmp_path)
    journal.start_new()
    batches = [batch(seed, 10) for seed in range(3)]
    for xy, z in batches:
        journal.append(xy, z)
    journal.close()
    return segment(tmp_path, 0), batches


def cut(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    return len(data)


@pytest.mark.parametrize("damage", ["cut in the payload", "cut in the header", "zero fill"])
def test_a_torn_tail_is_ignored_and_the_journal_goes_on(tmp_path, damage):
    path, batches = three_batch_segment(tmp_path)
    size = path.stat().st_size  # 32 + 3 × (24 + 240)
    if damage == "cut in the payload":
        cut(path, size - 100)
    elif damage == "cut in the header":
        cut(path, size - 264 + 10)
    else:  # a crash after the file grew but before its data reached the disk
        cut(path, size - 264)
        with open(path, "ab") as handle:
            handle.write(bytes(264))

    journal = Journal(tmp_path)
    recovery = journal.recover()
    assert recovery.records == 2 and len(recovery.torn) == 1 and not recovery.corrupt
    assert "segment 0" in recovery.torn[0] and "torn tail" in recovery.describe()
    np.testing.assert_array_equal(recovery.z, np.concatenate([b[1] for b in batches[:2]]))
    journal.resume(recovery)  # later batches go to a new segment: the torn one stays as is
    journal.append(*batches[2])
    journal.close()
    again = Journal(tmp_path).recover()
    assert again.records == 3 and again.segments == [0, 1]
    np.testing.assert_array_equal(again.z, np.concatenate([b[1] for b in batches]))


@pytest.mark.parametrize("where", [10, 24 + 100, 24 + 239])  # header, payload, last byte
def test_a_corrupt_record_is_detected_and_skipped_never_misread(tmp_path, where):
    path, batches = three_batch_segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[32 + 264 + where] ^= 0x10  # a bit of the second record (at byte 296)
    path.write_bytes(bytes(data))

    recovery = Journal(tmp_path).recover()
    assert recovery.records == 2 and len(recovery.corrupt) == 1 and not recovery.torn
    assert recovery.corrupt[0] == "segment 0: 264 bytes at byte 296"
    assert "CORRUPT" in recovery.describe()
    kept = [batches[0], batches[2]]
    np.testing.assert_array_equal(recovery.xy, np.concatenate([b[0] for b in kept]))
    np.testing.assert_array_equal(recovery.z, np.concatenate([b[1] for b in kept]))


class Crash(Exception):
    """Stands for the process dying at that point."""


def survey(tmp_path, crash_at, monkeypatch):
    """A mapper's loop over six batches with an autosave after the third, dying at
    ``crash_at``; returns the batches it had journaled."""
    journal = Journal(tmp_path)
    journal.start_new()
    model, batches = make_model(SMALL), [batch(seed) for seed in range(6)]
    for xy, z in batches[:3]:
        journal.append(xy, z)
        model.add_data(xy, z)
        model.update()
    number = journal.checkpoint()
    journal.append(*batches[3])  # arrives while the model is being saved
    if crash_at == "before the autosave":
        journal.close()
        return batches[:4]
    if crash_at == "before the old files are deleted":
        monkeypatch.setattr(Journal, "_remove_older", lambda *_: (_ for _ in ()).throw(Crash))
        with pytest.raises(Crash):
            journal.autosave(model, number)
        monkeypatch.undo()
        journal.close()
        assert segment(tmp_path, 0).exists()
        return batches[:4]
    assert journal.autosave(model, number) is not None
    assert not segment(tmp_path, 0).exists()  # in the autosave now
    for xy, z in batches[4:]:
        journal.append(xy, z)
    journal.close()
    return batches


@pytest.mark.parametrize("crash_at", ["before the autosave", "before the old files are deleted",
                                      "after the autosave"])
def test_a_restart_restores_every_sample_once_whenever_the_crash_came(tmp_path, monkeypatch,
                                                                      crash_at):
    sent = survey(tmp_path, crash_at, monkeypatch)
    recovery = Journal(tmp_path).recover()
    assert not (recovery.torn or recovery.corrupt)
    if recovery.autosave is not None:
        saved = load_model(recovery.autosave)
        xy = np.concatenate([saved.buffer.x, recovery.xy])
        z = np.concatenate([saved.buffer.y, recovery.z])
    else:
        xy, z = recovery.xy, recovery.z
    # Compared as stored, before the model's duplicate filter could hide a sample read twice.
    np.testing.assert_array_equal(rows(xy, z), rows(np.concatenate([b[0] for b in sent]),
                                                    np.concatenate([b[1] for b in sent])))
    assert (recovery.autosave is not None) == (crash_at != "before the autosave")


def test_replayed_as_one_batch_the_model_holds_every_sample(tmp_path, monkeypatch):
    sent = survey(tmp_path, "after the autosave", monkeypatch)
    recovery = Journal(tmp_path).recover()
    model = load_model(recovery.autosave)
    model.add_data(recovery.xy, recovery.z)
    model.update()
    assert model.num_samples == sum(len(z) for _, z in sent) and not model.rejections


def test_a_new_map_supersedes_the_old_one_even_if_the_crash_comes_first(tmp_path,
                                                                        monkeypatch):
    journal = Journal(tmp_path)
    journal.start_new()
    journal.append(*batch(0))
    monkeypatch.setattr(Journal, "_remove_older", lambda *_: (_ for _ in ()).throw(Crash))
    with pytest.raises(Crash):
        journal.start_new()  # ~/reset
    monkeypatch.undo()
    journal.close()
    recovery = Journal(tmp_path).recover()
    assert recovery.resumable and recovery.base == 1 and recovery.records == 0


def test_an_autosave_of_a_map_reset_since_its_checkpoint_is_not_kept(tmp_path):
    journal = Journal(tmp_path)
    journal.start_new()
    model = make_model(SMALL)
    model.add_data(*batch(0))
    model.update()
    number = journal.checkpoint()
    journal.start_new()  # ~/reset while the old model was updating
    assert journal.autosave(model, number) is None
    assert not list(tmp_path.glob("autosave-*"))


def test_a_map_resumed_from_a_state_file_starts_from_it(tmp_path):
    model = make_model(SMALL)
    model.add_data(*batch(0))
    model.update()
    journal = Journal(tmp_path)
    journal.start_new(model, stamp=7)
    journal.append(*batch(1), stamp=9)
    journal.close()
    recovery = Journal(tmp_path).recover()
    assert recovery.autosave == tmp_path / "autosave-00000000.pt" and recovery.stamp == 9
    assert load_model(recovery.autosave).num_samples == 50 and recovery.records == 1


def test_one_process_at_a_time_and_an_orderly_close_removes_it(tmp_path):
    directory = tmp_path / "j"
    journal = Journal(directory)
    with pytest.raises(JournalBusy, match="in use"):
        Journal(directory)
    journal.start_new()
    journal.append(*batch(0))
    journal.close(remove=True)
    assert not directory.exists()
    assert not Journal(directory).recover().resumable  # nothing to resume: a new map


def test_stale_temporaries_are_removed_and_unusable_files_set_aside(tmp_path):
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / ".segment-00000003.journal.abcd1234.tmp").write_bytes(b"half")
    (directory / "segment-00000002.journal").write_bytes(b"")
    journal = Journal(directory)
    assert not (directory / ".segment-00000003.journal.abcd1234.tmp").exists()
    recovery = journal.recover()
    assert not recovery.resumable and recovery.unusable == {
        "segment-00000002.journal": "0 bytes, shorter than a segment header"}
    kept = journal.set_aside(recovery.unusable)
    assert kept.parent == tmp_path and kept.name.startswith("j.") and kept.suffix == ".kept"
    journal.start_new()
    assert sorted(p.name for p in directory.iterdir()) == ["lock", "segment-00000003.journal"]
    assert [p.name for p in kept.iterdir()] == ["segment-00000002.journal"]
    journal.close(remove=True)
    assert not directory.exists() and (kept / "segment-00000002.journal").exists()


def test_records_without_their_autosave_are_a_partial_map(tmp_path, monkeypatch):
    """The autosave is gone and the segments before it with it: the records after it are
    still read, as a map of their own, never dropped."""
    sent = survey(tmp_path, "after the autosave", monkeypatch)
    (tmp_path / "autosave-00000001.pt").unlink()
    recovery = Journal(tmp_path).recover()
    assert recovery.resumable and recovery.partial and recovery.base == 1
    assert recovery.autosave is None and recovery.segments == [1] and recovery.records == 3
    np.testing.assert_array_equal(recovery.z, np.concatenate([b[1] for b in sent[3:]]))
    assert recovery.describe().startswith("no autosave before segment 1 (the samples before "
                                          "it are lost) + 150 samples in 3 records")


def test_a_segment_of_another_format_version_is_never_read_nor_deleted(tmp_path):
    path, _ = three_batch_segment(tmp_path / "j")
    data = bytearray(path.read_bytes())
    data[8:10] = (2).to_bytes(2, "little")  # a newer poam_ros wrote it
    data[28:32] = zlib.crc32(bytes(data[:28])).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    journal = Journal(tmp_path / "j")
    recovery = journal.recover()
    assert not recovery.resumable and recovery.records == 0
    assert recovery.unusable == {path.name: "format version 2, this poam_ros reads 1"}
    kept = journal.set_aside(recovery.unusable)
    journal.start_new()
    journal.close(remove=True)
    assert (kept / path.name).read_bytes() == bytes(data)


def test_the_default_directory_is_beside_the_save_path():
    assert journal_directory(JournalConfig(), "/data/map_state.pt").as_posix() \
        == "/data/map_state.journal"
    assert journal_directory(JournalConfig(), "/data/a.journal").as_posix() \
        == "/data/a.journal.journal"
    assert journal_directory(JournalConfig(path="/x/j"), "/data/m.pt").as_posix() == "/x/j"
    assert journal_format.VERSION == 1
