"""Crash journal of a mapper's samples, beside periodic autosaves of its model.

A mapper killed without shutting down (SIGKILL, out of memory, a power loss) would lose every
sample since its last ``~/save``. The journal keeps them: every batch is appended to a segment
file as it arrives and, every so often, the model is autosaved and a new segment begun; a
restart loads the newest autosave and replays the segments after it as one batch. ROS-free.

One directory per journal, used by one process at a time (``lock``, held with ``flock``)::

    autosave-00000007.pt       the model when segment 7 began (the state file format of
                               poam_ros.models.state_io, SHA-256 checked)
    segment-00000007.journal   the batches after it, in order
    segment-00000008.journal   begun by a restart, or by a checkpoint whose autosave is due

The segments' header, records and damage detection are :mod:`~poam_ros.mapping.journal_format`'s;
a segment holds T targets per sample (the depth and the mapper's channels).

The map a journal holds starts at its *base*, the highest n with an ``autosave-n.pt`` or with a
segment n that begins a new map: that autosave (or an empty model), then the records of
segments n, n + 1, ... in order. Each change makes the new base durable before it deletes the
old one, so that a crash between any two steps neither loses nor replays a record twice:

* a segment is born whole: its header is written to a temporary, fsync'd and renamed, and the
  directory fsync'd;
* a checkpoint begins segment n, so later batches go there; once the model holds every batch
  before it, :meth:`Journal.autosave` writes ``autosave-n.pt`` (temporary and rename) and only
  then deletes what is older than n;
* a new map (``~/reset``, or a start with nothing to resume) begins a segment flagged as one,
  then deletes what is older.

Intact records are data, never deleted before a model holds them. A journal whose base's
autosave is gone (deleted, or set aside as unreadable) still holds the records after it: with
no base, the map is *partial*, the records of every segment from the lowest on, replayed as a
map of their own (the samples before them are lost; :attr:`Recovery.partial`). A file this
journal cannot use, a segment of another T, another format version or a damaged header, or an
autosave the mapper cannot load, is :meth:`Journal.set_aside`: moved, as it is, into a dated
directory beside the journal's (``<name>.<UTC time>.kept``), never deleted. Only what a base
supersedes, a reset discards, or an orderly stop ends is deleted.

Reading never misreads (see the format); a torn tail, a write the crash cut short, and corrupt
records are reported, neither is replayed.

Records reach the operating system at once (one ``os.write`` each), so a killed process loses
none that was written; ``fsync`` (what a power loss or an operating-system crash spares) comes
at the first append ``sync_period`` after the last one, at :meth:`Journal.sync` (a node calls
it on a timer, for when no batch comes), at each checkpoint and at close.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from poam_ros.mapping.journal_format import (
    MAX_TARGETS,
    NEW_MAP,
    TEMPORARY,
    file_name,
    parse_name,
    read_header,
    record,
    scan_records,
    segment_header,
)
from poam_ros.models import OnlineSparseGP
from poam_ros.params import Params, param

_LOCK = "lock"


@dataclass
class JournalConfig(Params):
    """The mapper's crash journal and autosaves (``journal.*``); read at start."""

    enabled: bool = param(True, "keep a crash journal of the samples received and autosave "
                                "the model, so that a restart after a crash resumes the map")
    path: str = param("", "directory of the journal and its autosaves (~ is expanded, "
                          "{node} is the node's fully qualified name); empty: beside "
                          "save_path, named after it (map_state.pt: map_state.journal)")
    sync_period: float = param(1.0, "a batch is fsync'd (survives a power loss) at most this "
                                    "long after it arrived; 0: each one at once. A killed "
                                    "process loses none either way", unit="s", low=0.0,
                               high=3600.0)
    autosave_period: float = param(60.0, "autosave the model after the first update this "
                                         "long after the last autosave, so that a restart "
                                         "replays at most this much of the journal; 0: off",
                                   unit="s", low=0.0)
    autosave_updates: int = param(0, "also autosave after this many updates since the last "
                                      "autosave; 0: off", low=0)


def journal_directory(config: JournalConfig, save_path: str) -> Path:
    """The journal's directory: ``config.path``, else ``save_path`` with ``.journal`` for its
    suffix (``map_state.pt``: ``map_state.journal``)."""
    if config.path:
        return Path(config.path).expanduser()
    save = Path(save_path).expanduser()
    beside = save.with_name(f"{save.stem}.journal")
    return beside if beside != save else save.with_name(f"{save.name}.journal")


class JournalBusy(OSError):
    """Another process holds the journal's directory."""


@dataclass
class Recovery:
    """What a journal left by an earlier process holds: the base's autosave (None: an empty
    model) and the samples after it, positions ``xy`` (N, 2) [m], targets ``z`` (N,), or
    (N, T) for a journal of T targets per sample; ``partial`` when no base is left, the
    samples then those of every segment from the lowest on (those before it are lost); the
    files it cannot use, by name, with why."""

    directory: Path
    base: int | None = None  # None: nothing to resume
    partial: bool = False  # no autosave or new map before segment ``base``
    autosave: Path | None = None
    xy: np.ndarray = field(default_factory=lambda: np.empty((0, 2)))
    z: np.ndarray = field(default_factory=lambda: np.empty(0))
    stamp: int = 0  # ns: the newest data stamp of the map
    records: int = 0
    segments: list[int] = field(default_factory=list)  # those replayed
    torn: list[str] = field(default_factory=list)  # "segment 8: 1,234 bytes at byte 5,678"
    corrupt: list[str] = field(default_factory=list)
    unusable: dict[str, str] = field(default_factory=dict)  # name: why, to set aside

    @property
    def resumable(self) -> bool:
        return self.base is not None

    def describe(self, saved: int | None = None) -> str:
        """One line for the log: what the restart restores (``saved``: the autosave's
        sample count) and what it ignores."""
        held = "" if saved is None else f"{saved} samples from "
        if self.partial:
            parts = [f"no autosave before segment {self.base} (the samples before it are "
                     f"lost)"]
        else:
            parts = [f"{held}{self.autosave.name}" if self.autosave else "an empty model"]
        if self.segments:
            first, last = self.segments[0], self.segments[-1]
            parts.append(f"{len(self.z)} samples in {self.records} record"
                         f"{'' if self.records == 1 else 's'} of segment"
                         f"{f' {first}' if first == last else f's {first}-{last}'}")
        text = " + ".join(parts)
        if self.torn:
            text += f"; torn tail ignored ({'; '.join(self.torn)})"
        if self.corrupt:
            text += f"; CORRUPT records skipped ({'; '.join(self.corrupt)})"
        return text


class Journal:
    """The journal in ``directory``, held by this process until :meth:`close`.

    Thread-safe: batches may be appended from one thread while another checkpoints. ``clock``
    (seconds, monotonic) times ``sync_period``; ``targets`` is T, the targets per sample (the
    depth and the mapper's channels). Raises :class:`JournalBusy` when another process holds
    the directory, ``OSError`` when it cannot be created.
    """

    def __init__(self, directory, sync_period: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, targets: int = 1) -> None:
        if not 1 <= targets <= MAX_TARGETS:
            raise ValueError(f"a journal holds 1 to {MAX_TARGETS} targets per sample, got "
                             f"{targets}")
        self.targets = int(targets)
        self.directory = Path(directory)
        self.sync_period, self._clock = float(sync_period), clock
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.directory / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise JournalBusy(f"{self.directory} is in use by another process") from None
        for entry in self.directory.iterdir():  # saves and segments cut short by a crash
            if TEMPORARY.fullmatch(entry.name):
                entry.unlink(missing_ok=True)
        self._mutex = threading.Lock()
        self._fd: int | None = None
        self._number = -1  # of the segment records go to
        self._next = max((n for _, n in self._files()), default=-1) + 1
        self._new_map = -1  # number of the newest segment that began a new map
        self._dirty = False  # records written since the last fsync
        self._last_sync = clock()
        self.stamp = 0  # ns: newest data stamp of the map so far
        self.records = self.bytes = self.syncs = 0  # written by this process
        self.kept: Path | None = None  # where this process set files aside

    # ------------------------------------------------------------------ reading
    def recover(self) -> Recovery:
        """What the directory holds (read only): the base and the records after it."""
        recovery = Recovery(self.directory, z=self._targets_shaped(np.empty((0, self.targets))))
        files = self._files()
        segments, headers = {}, {}
        for kind, n in files:
            if kind == "segment":
                data = (self.directory / file_name(kind, n)).read_bytes()
                header = read_header(data, n)
                if not header.problem and header.targets != self.targets:
                    header.problem = (f"{header.targets} targets per sample, this journal's "
                                      f"{self.targets}")
                if header.problem:
                    recovery.unusable[file_name(kind, n)] = header.problem
                else:
                    segments[n], headers[n] = data, header
        bases = [n for kind, n in files if kind == "autosave"]
        bases += [n for n, header in headers.items() if header.flags & NEW_MAP]
        if not bases and not headers:
            return recovery
        base = recovery.base = max(bases) if bases else min(headers)
        recovery.partial = not bases
        if (self.directory / file_name("autosave", base)).is_file():
            recovery.autosave = self.directory / file_name("autosave", base)
        recovery.stamp = headers[base].stamp if base in headers else 0
        xy, z = [], []
        for n in sorted(n for n in headers if n >= base):
            scan = scan_records(segments[n], self.targets)
            recovery.segments.append(n)
            recovery.records += len(scan.records)
            for stamp, positions, targets in scan.records:
                xy.append(positions)
                z.append(targets)
                recovery.stamp = max(recovery.stamp, stamp)
            for start, end, torn in scan.damage:
                (recovery.torn if torn else recovery.corrupt).append(
                    f"segment {n}: {end - start:,} bytes at byte {start:,}")
        if xy:
            recovery.xy = np.concatenate(xy)
            recovery.z = self._targets_shaped(np.concatenate(z))
        return recovery

    def _targets_shaped(self, z: np.ndarray) -> np.ndarray:
        """Targets (N, T) as the mapper holds them: (N,) for T = 1."""
        return z[:, 0] if self.targets == 1 else z

    def set_aside(self, names: Iterable[str]) -> Path:
        """Move the files ``names`` (ones the map cannot use) out of the journal, as they are,
        into this process's kept directory beside it, ``<name>.<UTC time>.kept``; returns it.
        Call before the journal goes on: what stays may be deleted once superseded."""
        with self._mutex:
            if self.kept is None:
                self.kept = _new_kept_directory(self.directory)
            for name in names:
                os.rename(self.directory / name, self.kept / name)
            _fsync_directory(self.kept)
            _fsync_directory(self.directory)
            return self.kept

    # ------------------------------------------------------------------ writing
    def resume(self, recovery: Recovery) -> None:
        """Go on with the map ``recovery`` holds: later batches go to a new segment of its
        chain; what is older than its base is deleted."""
        with self._mutex:
            self.stamp = recovery.stamp
            self._begin_segment(flags=0)
            self._remove_older(recovery.base)

    def start_new(self, model: OnlineSparseGP | None = None, stamp: int = 0) -> None:
        """Begin a new map, from ``model`` (a resumed state file: written as the base's
        autosave) or an empty one, and delete the journal's older contents."""
        with self._mutex:
            self.stamp = stamp
            number = self._begin_segment(flags=0 if model is not None else NEW_MAP)
        if model is not None:
            self._write_autosave(model, number)
        with self._mutex:
            self._remove_older(number)

    def append(self, xy, z, stamp: int = 0) -> int:
        """Append one batch, positions (N, 2) [m] and targets (N,) ((N, T) for T > 1), with
        its data stamp [ns]; returns the bytes written. Values are kept as given (the model
        filters them when they are replayed); a batch of another shape is a ``ValueError``."""
        xy = np.asarray(xy, dtype="<f8")
        z = np.asarray(z, dtype="<f8")
        shape = (len(xy),) if self.targets == 1 else (len(xy), self.targets)
        if xy.ndim != 2 or xy.shape[1] != 2 or z.shape != shape:
            raise ValueError(f"a journal record is positions (N, 2) and targets {shape}, got "
                             f"{xy.shape} and {z.shape}")
        data = record(xy, z, stamp)
        with self._mutex:
            fd = self._require_open()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            self._dirty = True
            self.stamp = max(self.stamp, int(stamp))
            self.records += 1
            self.bytes += len(data)
            if self._clock() - self._last_sync >= self.sync_period:
                self._fsync(fd)
        return len(data)

    def sync(self) -> bool:
        """fsync what was appended since the last fsync; False when there was nothing."""
        with self._mutex:
            if self._fd is None or not self._dirty:
                return False
            self._fsync(self._fd)
        return True

    def checkpoint(self) -> int:
        """Begin the next segment and return its number n: once the model holds every batch
        appended so far, :meth:`autosave` it with n."""
        with self._mutex:
            self._require_open()
            return self._begin_segment(flags=0)

    def autosave(self, model: OnlineSparseGP, number: int) -> Path | None:
        """Write ``model`` as the autosave of checkpoint ``number`` and delete what it
        supersedes; None (nothing kept) when a new map began since the checkpoint."""
        with self._mutex:
            if self._fd is None or number <= self._new_map:
                return None
        path = self._write_autosave(model, number)
        with self._mutex:
            if self._fd is None or number <= self._new_map:  # a new map began meanwhile
                path.unlink(missing_ok=True)
                return None
            self._remove_older(number)
        return path

    def close(self, remove: bool = False) -> None:
        """fsync and close; with ``remove``, delete the journal (the map ends with the
        process) and its directory when that is then empty. Idempotent."""
        with self._mutex:
            if self._lock_fd is None:
                return
            if self._fd is not None:
                self._fsync(self._fd)
                os.close(self._fd)
                self._fd = None
            if remove:
                self._remove_older(None)
                (self.directory / _LOCK).unlink(missing_ok=True)
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None
        if remove:
            try:
                self.directory.rmdir()
            except OSError:  # something else lives there
                pass

    # ------------------------------------------------------------------ internals
    def _files(self) -> list[tuple[str, int]]:
        return sorted(parsed for entry in self.directory.iterdir()
                      if (parsed := parse_name(entry.name)))

    def _require_open(self) -> int:
        if self._fd is None:
            raise ValueError(f"the journal in {self.directory} is closed or not started")
        return self._fd

    def _begin_segment(self, flags: int) -> int:
        """Create the next segment whole (its header durable before its name exists) and
        direct appends to it; call with the mutex held."""
        number, self._next = self._next, self._next + 1
        path = self.directory / file_name("segment", number)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=self.directory)
        try:
            try:
                os.write(fd, segment_header(number, flags, self.targets, self.stamp))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            _fsync_directory(self.directory)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if self._fd is not None:
            self._fsync(self._fd)
            os.close(self._fd)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._number = number
        if flags & NEW_MAP:
            self._new_map = number
        return number

    def _write_autosave(self, model: OnlineSparseGP, number: int) -> Path:
        path = self.directory / file_name("autosave", number)
        model.save(path)
        _fsync_directory(self.directory)  # the rename durable before older files go
        return path

    def _remove_older(self, number: int | None) -> None:
        """Delete autosaves and segments numbered below ``number`` (all: None)."""
        for kind, n in self._files():
            if number is None or n < number:
                (self.directory / file_name(kind, n)).unlink(missing_ok=True)

    def _fsync(self, fd: int) -> None:
        os.fsync(fd)
        self._dirty = False
        self._last_sync = self._clock()
        self.syncs += 1


def _new_kept_directory(directory: Path) -> Path:
    """A new, empty directory beside ``directory`` named after it and the UTC time."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(1000):
        kept = directory.with_name(f"{directory.name}.{stamp}{f'-{attempt}' if attempt else ''}"
                                   f".kept")
        try:
            kept.mkdir()
        except FileExistsError:
            continue
        _fsync_directory(directory.parent)
        return kept
    raise FileExistsError(f"no free name for a kept directory beside {directory}")


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
