"""Bag files without ROS: what BagWriter writes, an independent reader (rosbags) reads
back byte for byte, in both storages and across splits; what BagReader makes of damaged
bags (killed mid-write, a corrupt chunk, a damaged sqlite file, files missing), each with
one clear message; message definitions from the store and from installed .msg files."""

from __future__ import annotations

import shutil

import pytest
import yaml
from mcap.reader import make_reader
from rosbags.highlevel import AnyReader

from poam_ros.bags import BagError, BagReader, BagWriteError, BagWriter, MessageTypes
from poam_ros.bags.message_types import UnknownMessageType
from poam_ros.bags.sim_survey import add, sounding

RANGE = "sensor_msgs/msg/Range"
BASE = 1_700_000_000 * 10**9


def write_ranges(path, count=300, **writer_args):
    """``count`` soundings 0.1 s apart; returns the bytes written, in order."""
    sent = []
    with BagWriter(path, **writer_args) as writer:
        topic = add(writer, "/sonar/range", RANGE)
        for k in range(count):
            data = sounding(0.1 * k, 10.0 + k)
            writer.write(topic, BASE + k * 10**8, data)
            sent.append(data)
    return sent


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("split", [{}, {"max_duration": 10.0}, {"max_bytes": 5000}])
def test_an_independent_reader_reads_back_every_byte(tmp_path, storage, split):
    bag = tmp_path / "bag"
    sent = write_ranges(bag, storage=storage, **split)
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == storage
    assert meta["message_count"] == len(sent)
    assert sum(f["message_count"] for f in meta["files"]) == len(sent)
    if split:
        assert len(meta["relative_file_paths"]) > 1
    with AnyReader([bag]) as reader:  # rosbags' reader, not ours
        (connection,) = reader.connections
        assert connection.msgtype == RANGE and connection.msgcount == len(sent)
        assert connection.msgdef.data == MessageTypes().definition(RANGE)[0]
        got = [bytes(data) for _, _, data in reader.messages()]
    assert got == sent
    ours = BagReader(bag)
    assert [m.data for m in ours.messages()] == sent and not ours.report.damaged
    assert ours.topics["/sonar/range"].count == len(sent)


def test_a_bag_is_never_overwritten(tmp_path):
    write_ranges(tmp_path / "bag", count=3)
    with pytest.raises(BagWriteError, match="exists already"):
        BagWriter(tmp_path / "bag")


def test_a_recording_killed_mid_write_replays_what_is_readable(tmp_path):
    bag = tmp_path / "bag"
    sent = write_ranges(bag, count=400, chunk_size=1000, compression="none")
    killed = tmp_path / "killed"
    killed.mkdir()
    data = (bag / "bag_0.mcap").read_bytes()
    (killed / "killed_0.mcap").write_bytes(data[: int(len(data) * 0.6)])  # no metadata.yaml
    reader = BagReader(killed)
    assert reader.topics["/sonar/range"].msgtype == RANGE
    got = [m.data for m in reader.messages()]
    assert 0 < len(got) < len(sent) and got == sent[: len(got)]
    report = reader.report
    assert report.unknown_loss
    assert any("metadata.yaml is missing" in p for p in report.problems)
    assert any("truncated" in p and "killed mid-write" in p for p in report.problems)


def corrupt_a_chunk(file) -> None:
    """Overwrite 16 bytes inside the compressed records of the MCAP ``file``'s middle chunk."""
    with file.open("rb") as stream:
        chunks = make_reader(stream).get_summary().chunk_indexes
    chunk = sorted(chunks, key=lambda c: c.chunk_start_offset)[len(chunks) // 2]
    data = bytearray(file.read_bytes())
    middle = chunk.chunk_start_offset + chunk.chunk_length // 2
    data[middle: middle + 16] = b"\xa5" * 16
    file.write_bytes(bytes(data))


def test_a_corrupt_chunk_is_skipped_and_its_messages_counted(tmp_path):
    bag = tmp_path / "bag"
    sent = write_ranges(bag, count=400, chunk_size=1000)
    corrupt_a_chunk(bag / "bag_0.mcap")
    reader = BagReader(bag)
    got = [m.data for m in reader.messages()]
    lost = reader.report.lost["/sonar/range"]
    assert 0 < lost < len(sent) and len(got) + lost == len(sent)
    assert set(got) <= set(sent)
    assert "corrupt" in reader.report.summary()


def test_a_damaged_sqlite_file_is_said_so(tmp_path):
    bag = tmp_path / "bag"
    write_ranges(bag, count=50, storage="sqlite3")
    file = bag / "bag_0.db3"
    data = bytearray(file.read_bytes())
    data[-2048:] = b"\xff" * 2048
    file.write_bytes(bytes(data))
    reader = BagReader(bag)
    list(reader.messages())  # never raises
    assert reader.report.unknown_loss
    assert "bag_0.db3 cannot be read by sqlite (database disk image is malformed)" in \
        reader.report.summary()


def test_bad_paths_give_one_clear_message(tmp_path):
    with pytest.raises(BagError, match="does not exist"):
        BagReader(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match="not a rosbag2 bag"):
        BagReader(tmp_path / "empty")
    (tmp_path / "text.mcap").write_text("not a bag")
    with pytest.raises(BagError, match="neither an MCAP nor an sqlite3"):
        BagReader(tmp_path / "text.mcap")


def test_a_split_file_gone_missing_is_reported(tmp_path):
    bag = tmp_path / "bag"
    sent = write_ranges(bag, max_duration=10.0)
    (bag / "bag_1.mcap").unlink()
    reader = BagReader(bag)
    got = [m.data for m in reader.messages()]
    assert len(got) == len(sent) - 100
    assert any("missing" in p and "bag_1.mcap" in p for p in reader.report.problems)


def test_a_single_storage_file_opens_as_a_bag(tmp_path):
    sent = write_ranges(tmp_path / "bag", count=20)
    shutil.copy(tmp_path / "bag" / "bag_0.mcap", tmp_path / "alone.mcap")
    assert [m.data for m in BagReader(tmp_path / "alone.mcap").messages()] == sent


def test_definitions_from_the_store_and_from_installed_files(tmp_path):
    share = tmp_path / "share" / "survey_msgs" / "msg"
    share.mkdir(parents=True)
    (share / "Ping.msg").write_text("std_msgs/Header header\nsurvey_msgs/Beam[] beams\n")
    (share / "Beam.msg").write_text("float32 angle\nfloat32 range\n")
    types = MessageTypes([tmp_path])
    text, digest = types.definition("survey_msgs/msg/Ping")
    assert text.startswith("std_msgs/Header header\nsurvey_msgs/Beam[] beams")
    assert "MSG: survey_msgs/Beam\nfloat32 angle" in text and digest.startswith("RIHS01_")
    assert types.definition(RANGE)[1] == \
        "RIHS01_b42b62562e93cbfe9d42b82fe5994dfa3d63d7d5c90a317981703f7388adff3a"
    with pytest.raises(UnknownMessageType, match="no definition of nowhere_msgs/msg/X"):
        types.definition("nowhere_msgs/msg/X")


@pytest.mark.parametrize("split", [{}, {"max_duration": 10.0}, {"max_bytes": 5000}])
def test_batched_writes_equal_single_writes(tmp_path, split):
    """Batches spanning several chunks and splits store what single writes store."""
    split = {**split, "chunk_size": 1000}
    items = [(0, BASE + k * 10**8, sounding(0.1 * k, k), 0) for k in range(300)]
    for name, batches in (("one", [items]), ("parts", [items[:7], items[7:200], items[200:]])):
        with BagWriter(tmp_path / name, **split) as writer:
            add(writer, "/sonar/range", RANGE)
            for batch in batches:
                writer.write_many(batch)
    with BagWriter(tmp_path / "single", **split) as writer:
        add(writer, "/sonar/range", RANGE)
        for item in items:
            writer.write(*item)
    expected = BagReader(tmp_path / "single").metadata["files"]
    for name in ("one", "parts"):
        reader = BagReader(tmp_path / name)
        assert [m.data for m in reader.messages()] == [item[2] for item in items]
        files = reader.metadata["files"]
        assert [{**f, "path": f["path"].split("_")[-1]} for f in files] == \
            [{**f, "path": f["path"].split("_")[-1]} for f in expected]
