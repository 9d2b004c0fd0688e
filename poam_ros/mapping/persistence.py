"""A mapper's persistence: the map it starts with, its crash journal and its autosaves. ROS-free.

The mapper node holds one :class:`MapPersistence` and hands it plain values (the model, the
batches as they arrive); it keeps the time with ``clock`` and says what it does with
``logging``.

* :meth:`MapPersistence.open`, at start: deletes what saves to ``save_path`` killed mid-write
  left beside it, then opens the map. That is the journal's when a process that did not shut
  down in order left one (its newest autosave now, the batches after it replayed as one batch
  before the first map, then an autosave; said in the log), else ``state_file``'s (a
  :class:`~poam_ros.models.StateFileError` stops the start; the journal holds it as its first
  autosave) or a new model, which the journal then begins. A journal to resume wins over
  ``state_file`` (said in the log). Nothing the journal holds is deleted at start: its files
  that this mapper cannot use (another channel count, another format, a damaged header, an
  autosave that does not load) are set aside, kept as they are, and the map is read without
  them; records left without their autosave are replayed as a partial map of their own. Both
  are said at warning level and in :attr:`MapPersistence.state`.
* :meth:`~MapPersistence.append` journals each batch the node accepts, in the order of its
  queue, before any update; :meth:`~MapPersistence.checkpoint`, when the node takes batches
  for an update, begins the journal's next segment at exactly those batches if an autosave
  is due after that update (``journal.autosave_period`` since the last autosave, every
  ``journal.autosave_updates`` updates, or at once after a restore), and
  :meth:`~MapPersistence.autosave` then writes the model that holds every batch before it.
* :meth:`~MapPersistence.rebase`: samples set aside after a failed update leave the journal,
  so that a restart neither replays nor fails on them again: the model without them becomes
  the autosave of a new segment (a new map when it holds nothing yet) and the batches that
  came during the update, journaled before that boundary, are appended again after it.
* :meth:`~MapPersistence.new_map` (``~/reset``) begins a new map in the journal;
  :meth:`~MapPersistence.close` (an orderly stop) removes it, so the next start is a new map.

The journal is optional (``journal.enabled``) and never stops the mapping: one that cannot be
opened or read is off, an I/O error while mapping stops it (it then stays until an orderly
stop: after a crash it still restores what it holds), and :attr:`MapPersistence.state` says
which for /diagnostics: ``off``, ``off: <why>``, its directory (then ``; files it cannot use
kept in <directory>`` and ``; resumed without the samples before segment <n>`` when so), or
``failed: <why>``.
Thread-safe: the node appends from its callbacks while its worker checkpoints and autosaves;
a caller that needs :meth:`append` and :meth:`checkpoint` in its queue's order holds its own
lock around both. The format and recovery are :mod:`poam_ros.mapping.journal`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

import numpy as np

from poam_ros.mapping.channels import output_count, survey_model
from poam_ros.mapping.journal import Journal, JournalConfig, Recovery, journal_directory
from poam_ros.models import MappingConfig, OnlineSparseGP, StateFileError, load_model, state_io

log = logging.getLogger(__name__)
T = TypeVar("T")

#: A batch of samples: positions (N, 2) [m], targets (N,) or, with C channels, (N, 1 + C)
#: depth first with NaN where not measured, and its data stamp [ns].
Batch = tuple[np.ndarray, np.ndarray, int]


@dataclass
class OpenedMap:
    """The map a mapper starts with: ``model``; ``loaded`` when it came from a file (a state
    file or an autosave), so that its map is due at once; ``replay``, the journal's batches
    after that autosave as one batch, for the first update; ``stamp`` [ns], the newest data
    stamp of the map (0: none)."""

    model: OnlineSparseGP
    loaded: bool = False
    replay: Batch | None = None
    stamp: int = 0


class MapPersistence:
    """Opening, journaling and autosaving one mapper's map; see the module docstring.

    ``config`` (``journal.*``) and ``save_path`` are read once, here (the journal's directory
    defaults to beside ``save_path``); ``channels`` are the samples' (T = 1 + C targets per
    sample); ``clock`` (seconds, monotonic) times ``journal.autosave_period``.
    """

    def __init__(self, config: JournalConfig, save_path: str, channels: Sequence[str] = (),
                 logger: logging.Logger = log,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.save_path = Path(save_path).expanduser()
        self.channels = tuple(channels)
        self.journal: Journal | None = None  # held by this process from open to close
        self.state = "off"
        self._log, self._clock = logger, clock
        self._mutex = threading.Lock()  # guards state and the autosave schedule
        self._due = False  # autosave after the next update, whatever the period
        self._since = 0  # updates since the last autosave
        self._last = clock()  # the last autosave's time (or the map's start)

    # ------------------------------------------------------------------ start
    def open(self, mapping: MappingConfig, state_file: str = "") -> OpenedMap:
        """The map to start with (see the module docstring); ``mapping`` makes a new model
        and places a loaded one (its device)."""
        self._remove_stale_temporaries()
        journal, recovery, saved = self._open_journal(mapping)
        opened = None
        try:
            if recovery is not None and recovery.resumable:
                opened = self._restored(journal, recovery, saved, mapping, state_file)
                journal.resume(recovery)
            else:
                opened = self._started(mapping, state_file)
                if journal is not None:
                    journal.start_new(opened.model if state_file else None)
        except OSError as error:
            if journal is None:
                raise
            self._failed(str(error))  # the journal's: mapping goes on without it
        except BaseException:
            if journal is not None:  # left as it is for the next start, unless it is empty
                journal.close(remove=not recovery.resumable)
            raise
        self.journal = journal
        return opened if opened is not None else OpenedMap(survey_model(mapping, self.channels))

    def _remove_stale_temporaries(self) -> None:
        try:
            removed = state_io.remove_stale_temporaries(self.save_path)
        except OSError as error:
            self._log.warning(f"cannot remove stale temporaries of {self.save_path}: {error}")
            return
        for stale in removed:
            self._log.info(f"removed {stale.name}, left by a save killed mid-write")

    def _open_journal(self, mapping: MappingConfig
                      ) -> tuple[Journal | None, Recovery | None, OnlineSparseGP | None]:
        """The journal, held by this process, what an earlier one left in it and the model of
        its base's autosave (None: none); (None, None, None) when it is off or unusable (said
        in the log, and the journal left as it is)."""
        if not self.config.enabled:
            return None, None, None
        directory = journal_directory(self.config, str(self.save_path))
        try:
            journal = Journal(directory, self.config.sync_period,
                              targets=1 + len(self.channels))
        except OSError as error:
            self.state = f"off: {error}"
            self._log.warning(f"mapping without a crash journal: {error}")
            return None, None, None
        try:
            recovery, saved = self._recover(journal, mapping)
        except OSError as error:
            journal.close()
            self.state = f"off: cannot read {directory}: {error}"
            self._log.error(f"mapping without a crash journal: cannot read {directory} "
                            f"({error}); it is left as it is")
            return None, None, None
        except BaseException:
            journal.close()
            raise
        notes = [str(directory)]
        if journal.kept is not None:
            notes.append(f"files it cannot use kept in {journal.kept}")
        if recovery.partial:
            notes.append(f"resumed without the samples before segment {recovery.base}")
        self.state = "; ".join(notes)
        return journal, recovery, saved

    def _recover(self, journal: Journal,
                 mapping: MappingConfig) -> tuple[Recovery, OnlineSparseGP | None]:
        """What the journal holds and its base's model. The files it cannot use, an autosave
        that does not load among them, are set aside (never deleted), and the map is then
        read again without them: from an older base, else partial."""
        while True:
            recovery = journal.recover()
            self._set_aside(journal, recovery.unusable)
            if recovery.autosave is None:
                return recovery, None
            try:
                return recovery, self._load(recovery.autosave, mapping)
            except StateFileError as error:
                self._set_aside(journal, {recovery.autosave.name: error.problem})

    def _set_aside(self, journal: Journal, unusable: dict[str, str]) -> None:
        """Move the files ``unusable`` (name: why) out of the journal, kept as they are."""
        if not unusable:
            return
        kept = journal.set_aside(unusable)
        for name, why in unusable.items():
            self._log.warning(f"journal {journal.directory}: {name} cannot go into this map "
                              f"({why}); kept as it is in {kept}")

    def _started(self, mapping: MappingConfig, state_file: str) -> OpenedMap:
        """``state_file``'s model, or a new one."""
        if not state_file:
            return OpenedMap(survey_model(mapping, self.channels))
        path = Path(state_file).expanduser()
        model = self._load(path, mapping)
        self._log.info(f"resumed {model.num_samples} samples from {path}")
        return OpenedMap(model, loaded=True)

    def _restored(self, journal: Journal, recovery: Recovery, saved: OnlineSparseGP | None,
                  mapping: MappingConfig, state_file: str) -> OpenedMap:
        """The journal's map: its autosave's model ``saved`` (None: an empty one), and its
        later batches to replay (not journaled again), after which an autosave is due."""
        if state_file:
            self._log.warning(f"state_file {state_file} not loaded: the journal in "
                              f"{journal.directory} continues the map the last process held "
                              f"(remove that directory to start from state_file)")
        if saved is not None:
            opened = OpenedMap(saved, loaded=True)
        else:
            opened = OpenedMap(survey_model(mapping, self.channels))
        opened.stamp = recovery.stamp
        if len(recovery.z):
            opened.replay = (recovery.xy, recovery.z, recovery.stamp)
            with self._mutex:
                self._due = True
        level = self._log.error if recovery.corrupt else (
            self._log.warning if recovery.partial else self._log.info)
        level(f"restoring the map of a mapper that did not shut down in order, from the "
              f"journal in {journal.directory}: "
              f"{recovery.describe(None if saved is None else saved.num_samples)} (replayed as one "
              f"batch before the first map{', a map of its own' if recovery.partial else ''})")
        return opened

    def _load(self, path: Path, mapping: MappingConfig) -> OnlineSparseGP:
        """The model saved in ``path``, on ``mapping``'s device, if it maps the samples'
        targets (else StateFileError)."""
        model = load_model(path, device=mapping.device)
        if output_count(model) != 1 + len(self.channels):
            raise StateFileError(path, f"it maps {output_count(model)} channel(s), the "
                                       f"samples carry {1 + len(self.channels)} (depth and "
                                       f"channels {list(self.channels)!r})")
        return model

    # ------------------------------------------------------------------ mapping
    def append(self, xy: np.ndarray, z: np.ndarray, stamp: int) -> None:
        """Journal a batch the mapper accepted (an empty one adds nothing to replay)."""
        if len(z):
            self._write("cannot append to the journal",
                        lambda journal: journal.append(xy, z, stamp))

    def sync(self) -> None:
        """fsync what was appended since the last fsync (a node's timer, for when no batch
        comes)."""
        self._write("cannot fsync the journal", Journal.sync)

    def checkpoint(self) -> int | None:
        """When an autosave is due after the update of the batches appended so far: begin the
        journal's next segment and return its number, for :meth:`autosave`; else None."""
        config = self.config
        with self._mutex:
            due = self._due or (
                config.autosave_updates and self._since + 1 >= config.autosave_updates
            ) or (config.autosave_period
                  and self._clock() - self._last >= config.autosave_period)
        return self._write("cannot begin a journal segment", Journal.checkpoint) if due else None

    def updated(self) -> None:
        """Count an update that made a new map (``journal.autosave_updates``)."""
        with self._mutex:
            self._since += 1

    def autosave(self, model: OnlineSparseGP, checkpoint: int) -> float | None:
        """Autosave ``model``, which holds every batch before ``checkpoint``; the seconds it
        took, None when nothing was saved (no journal, no model yet, or a new map began
        since the checkpoint)."""
        if not model.ready:
            return None
        tic = time.perf_counter()
        path = self._write("cannot autosave", lambda journal: journal.autosave(model, checkpoint))
        if path is None:
            return None
        with self._mutex:
            self._due, self._since, self._last = False, 0, self._clock()
        return time.perf_counter() - tic

    def rebase(self, model: OnlineSparseGP, stamp: int, pending: Iterable[Batch]) -> int | None:
        """Samples were set aside after a failed update: move the journal's base past them
        (see the module docstring). ``model`` is the model without them, ``stamp`` [ns] its
        newest data stamp, ``pending`` the batches journaled since the update began, in
        order. Returns the checkpoint to :meth:`autosave` ``model`` with (None: no model yet,
        the journal began a new map, or there is no journal)."""
        def move(journal: Journal) -> int | None:
            if model.ready:
                checkpoint = journal.checkpoint()
            else:
                checkpoint = None
                journal.start_new(stamp=stamp)
            for xy, z, batch_stamp in pending:
                if len(z):
                    journal.append(xy, z, batch_stamp)
            return checkpoint

        return self._write("cannot move the journal past samples set aside", move)

    def new_map(self) -> None:
        """``~/reset``: the journal begins a new map, and the autosave schedule with it."""
        with self._mutex:
            self._due, self._since, self._last = False, 0, self._clock()
        self._write("cannot begin a new map in the journal", Journal.start_new)

    def close(self) -> None:
        """An orderly stop: remove the journal (the map ends with the process). Idempotent."""
        with self._mutex:
            journal, self.journal = self.journal, None
        if journal is None:
            return
        try:
            journal.close(remove=True)
        except OSError as error:
            self._log.warning(f"cannot remove the journal {journal.directory}: {error}")
            return
        self._log.info(f"removed the crash journal {journal.directory}: an orderly stop ends "
                       f"the map (~/save keeps one)")

    # ------------------------------------------------------------------ internals
    def _active(self) -> Journal | None:
        """The journal while batches go to it: open, and not stopped by an I/O error."""
        with self._mutex:
            return None if self.state.startswith("failed") else self.journal

    def _write(self, failure: str, action: Callable[[Journal], T]) -> T | None:
        """``action(journal)`` on the active journal; None without one, or after an I/O
        error, which stops journaling (``failure``: what could not be done)."""
        journal = self._active()
        if journal is None:
            return None
        try:
            return action(journal)
        except OSError as error:
            self._failed(f"{failure}: {error}")
            return None

    def _failed(self, text: str) -> None:
        """Stop journaling after an I/O error; mapping goes on. The journal stays until an
        orderly stop: after a crash it still restores what it holds."""
        with self._mutex:
            self.state = f"failed: {text}"
        self._log.error(f"crash journal stopped, mapping goes on: {text}")
