"""The mapper node's persistence: resuming a saved map and the crash journal.

A mixin of :class:`~poam_ros.ros.mapper_node.MapperNode` (its attributes: the settings, the
model and its served copy, the journal, the queue of incoming batches, the status, the lock):
at start it removes the temporaries of saves killed mid-write and opens the map (the journal's
when a process that did not shut down in order left one, else ``state_file``'s or a new one);
while mapping it appends nothing itself (the callback journals each batch) but begins segments,
autosaves, moves the journal's base past samples set aside and begins a new map on
``~/reset``. The journal's format and recovery are :mod:`poam_ros.mapping.journal`'s.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from poam_ros.mapping.channels import output_count, survey_model
from poam_ros.mapping.journal import Journal, Recovery, journal_directory
from poam_ros.models import OnlineSparseGP, StateFileError, load_model, state_io


@dataclass
class QueuedBatch:
    """A samples message as the callback queued it for the worker."""

    xy: np.ndarray  # (N, 2) m
    z: np.ndarray  # (N,); (N, 1 + C) with channels, depth first, NaN where not measured
    stamp: int  # ns, the message's header stamp (the data time of its samples)
    arrival: float  # time.monotonic() when the message reached the callback


class MapperPersistence:
    """Resuming and journaling the map: see the module docstring."""

    # ---------------------------------------------------------------- start and stop
    def _remove_stale_temporaries(self) -> None:
        """Delete what saves to ``save_path`` killed mid-write left beside it."""
        path = Path(self._settings.save_path).expanduser()
        try:
            removed = state_io.remove_stale_temporaries(path)
        except OSError as error:
            self.get_logger().warning(f"cannot remove stale temporaries of {path}: {error}")
            return
        for stale in removed:
            self.get_logger().info(f"removed {stale.name}, left by a save killed mid-write")

    def _resume(self, path: Path) -> OnlineSparseGP:
        """Serve the model saved in ``path`` (a StateFileError stops the start)."""
        model = load_model(path, device=self._mapping.device)
        if output_count(model) != 1 + len(self._channels):
            raise StateFileError(path, f"it maps {output_count(model)} channel(s), the "
                                       f"samples carry {1 + len(self._channels)} (depth and "
                                       f"channels {list(self._channels)!r})")
        self._model = model
        self._served = copy.deepcopy(model)
        self._republish = True
        self._status.num_samples, self._status.num_inducing = (model.num_samples,
                                                               model.inducing.shape[0])
        self._status.device, self._status.method = str(model.device), model.method
        return model

    def _open_map(self) -> None:
        """The model to start with: the journal's map when a process that did not shut down
        in order left one, else ``state_file``'s or a new one, which the journal then
        begins."""
        journal, recovery = self._open_journal()
        try:
            if recovery is not None and recovery.resumable:
                self._restore(journal, recovery)
            else:
                if self._settings.state_file:
                    path = Path(self._settings.state_file).expanduser()
                    model = self._resume(path)
                    self.get_logger().info(f"resumed {model.num_samples} samples from {path}")
                else:
                    self._model = survey_model(self._mapping, self._channels)
                if journal is not None:
                    journal.start_new(self._model if self._settings.state_file else None)
        except OSError as error:
            if journal is None:
                raise
            self._journal_failed(str(error))  # the journal's: mapping goes on without it
        except BaseException:
            if journal is not None:  # left as it is for the next start, unless it is empty
                journal.close(remove=not (recovery.resumable or recovery.ignored))
            raise
        self._journal = journal

    def _open_journal(self) -> tuple[Journal | None, Recovery | None]:
        """The journal, held by this process, and what an earlier one left in it; (None,
        None) when it is off or unusable (said in the log, and the journal left as it is)."""
        config = self._journal_config
        if not config.enabled:
            return None, None
        directory = journal_directory(config, self._settings.save_path)
        try:
            journal = Journal(directory, config.sync_period,
                              targets=1 + len(self._channels))
        except OSError as error:
            self._journal_state = f"off: {error}"
            self.get_logger().warning(f"mapping without a crash journal: {error}")
            return None, None
        try:
            recovery = journal.recover()
        except OSError as error:
            journal.close()
            self._journal_state = f"off: cannot read {directory}: {error}"
            self.get_logger().error(f"mapping without a crash journal: cannot read "
                                    f"{directory} ({error}); it is left as it is")
            return None, None
        self._journal_state = str(directory)
        for ignored in recovery.ignored:
            self.get_logger().warning(f"journal {directory}: ignored {ignored}")
        return journal, recovery

    def _restore(self, journal: Journal, recovery: Recovery) -> None:
        """Resume the journal's map: its autosave now, its later batches as the worker's
        first batch (replayed, not journaled again), then an autosave."""
        log = self.get_logger()
        if self._settings.state_file:
            log.warning(f"state_file {self._settings.state_file} not loaded: the journal in "
                        f"{journal.directory} continues the map the last process held "
                        f"(remove that directory to start from state_file)")
        if recovery.autosave is not None:
            saved = self._resume(recovery.autosave).num_samples
        else:
            saved, self._model = 0, survey_model(self._mapping, self._channels)
        self._data_stamp = recovery.stamp
        if len(recovery.z):
            self._incoming.append(QueuedBatch(recovery.xy, recovery.z, recovery.stamp,
                                         time.monotonic()))
            self._autosave_due = True
        (log.error if recovery.corrupt else log.info)(
            f"restoring the map of a mapper that did not shut down in order, from the journal "
            f"in {journal.directory}: {recovery.describe(saved)} (replayed as one batch "
            f"before the first map)")
        journal.resume(recovery)

    # ---------------------------------------------------------------- journal
    def _journaling(self) -> bool:
        """Whether batches go to the journal (call with the lock held)."""
        return self._journal is not None and not self._journal_state.startswith("failed")

    def _journal_failed(self, text: str) -> None:
        """Stop journaling after an I/O error; mapping goes on. The journal stays until an
        orderly shutdown: after a crash it still restores what it holds (call with the lock
        held)."""
        self._journal_state = f"failed: {text}"
        self.get_logger().error(f"crash journal stopped, mapping goes on: {text}")

    def _sync_journal(self) -> None:
        with self._lock:
            journal = self._journal if self._journaling() else None
        if journal is None:
            return
        try:
            journal.sync()
        except OSError as error:
            with self._lock:
                self._journal_failed(f"cannot fsync the journal: {error}")

    def _checkpoint(self) -> int | None:
        """Begin the journal's next segment when an autosave is due after this update; its
        number (call with the lock held)."""
        config = self._journal_config
        due = self._autosave_due or (
            config.autosave_updates and self._since_autosave + 1 >= config.autosave_updates
        ) or (config.autosave_period
              and time.monotonic() - self._last_autosave >= config.autosave_period)
        if not due or not self._journaling():
            return None
        try:
            return self._journal.checkpoint()
        except OSError as error:
            self._journal_failed(f"cannot begin a journal segment: {error}")
            return None

    def _autosave(self, model: OnlineSparseGP, checkpoint: int, generation: int) -> None:
        """Autosave ``model``, which holds every batch before ``checkpoint``, unless a reset
        or the shutdown came since."""
        with self._lock:
            journal = (self._journal if self._journaling() and generation == self._generation
                       and not self._stopping else None)
        if journal is None or not model.ready:
            return
        tic = time.perf_counter()
        try:
            path = journal.autosave(model, checkpoint)
        except OSError as error:
            with self._lock:
                self._journal_failed(f"cannot autosave: {error}")
            return
        with self._lock:
            if path is not None:
                self._autosave_due, self._since_autosave = False, 0
                self._last_autosave = time.monotonic()
                self._status.autosaves += 1
                self._status.autosave_time = time.perf_counter() - tic

    def _rebase_journal(self, model: OnlineSparseGP, generation: int) -> None:
        """Samples were set aside after a failed update: the journal's base moves past them,
        so that a restart does not replay them (and fail on them) again. The model without
        them becomes the autosave of a new segment (a new map when it holds nothing yet), and
        the batches that came during the update, journaled before that boundary, are
        appended again after it."""
        with self._lock:
            if not self._journaling() or generation != self._generation or self._stopping:
                return
            try:
                if model.ready:
                    checkpoint = self._journal.checkpoint()
                else:
                    checkpoint = None
                    self._journal.start_new(stamp=self._data_stamp)
                for batch in self._incoming:
                    if len(batch.z):
                        self._journal.append(batch.xy, batch.z, batch.stamp)
            except OSError as error:
                self._journal_failed(f"cannot move the journal past samples set aside: {error}")
                return
        if checkpoint is not None:
            self._autosave(model, checkpoint, generation)

    def _new_journal_map(self) -> None:
        """~/reset: the journal begins a new map (call with the lock held)."""
        self._autosave_due, self._since_autosave = False, 0
        self._last_autosave = time.monotonic()
        if self._journaling():
            try:
                self._journal.start_new()
            except OSError as error:
                self._journal_failed(f"cannot begin a new map in the journal: {error}")
