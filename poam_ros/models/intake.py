"""A model's intake: every sample it accepted, the scalers, its counters and a fixed Z.

One object owns what every mapping model, one channel or several, keeps alike beside its
posterior: the :class:`~.buffer.SampleBuffer` (world units), the samples seen for duplicate
detection, the rejections by reason, how many samples are pending (buffered, not yet in an
update) and how many updates succeeded, the input and target scalers, and the inducing inputs
fixed by the user (scaled units, or None). Samples are appended at the end of the buffer, so
the first :attr:`Intake.num_fitted` rows are those the model has taken in an update and the
last :attr:`Intake.num_pending` wait for the next one.

The models differ in how a batch is read (one target per sample, or D with NaN where a channel
was not measured) and in their buffer and target scaler; they pass those in. The state,
:meth:`Intake.state_dict`, is the intake part of every state file (``OnlineSparseGP`` and
``IndependentChannels`` alike): ``input_dim``, ``x_scaler``, ``y_scaler``, ``buffer_x``,
``buffer_y`` (the buffer's ``y``), ``num_pending``, ``num_updates``, ``rejections`` and
``fixed_inducing``.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections import Counter
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.buffer import SampleBuffer
from poam_ros.models.samples import (
    MALFORMED_BATCH,
    UPDATE_FAILED,
    BatchReport,
    InvalidBatchError,
    SeenSamples,
    as_batch,
    filter_samples,
)
from poam_ros.scalers import MinMaxScaler, StandardScaler

log = logging.getLogger(__name__)


class Intake:
    """The samples of a model over inputs of dimension ``input_dim``.

    ``buffer`` and ``y_scaler`` default to one target per sample; ``read_batch(x, y)`` coerces
    a batch to arrays or raises :class:`~.samples.InvalidBatchError` (default
    :func:`~.samples.as_batch`).
    """

    def __init__(self, input_dim: int, buffer: SampleBuffer | None = None, y_scaler=None,
                 read_batch: Callable | None = None):
        self.input_dim = input_dim
        self.buffer = buffer if buffer is not None else SampleBuffer(input_dim)
        self.x_scaler = MinMaxScaler()
        self.y_scaler = y_scaler if y_scaler is not None else StandardScaler()
        self.read_batch = read_batch or functools.partial(as_batch, input_dim=input_dim)
        self.seen = SeenSamples(self.buffer)
        self.rejections: Counter = Counter()
        self.num_pending = 0
        self.num_updates = 0
        self.fixed_z: Tensor | None = None  # M × D, scaled units

    @property
    def num_samples(self) -> int:
        return len(self.buffer)

    @property
    def num_fitted(self) -> int:
        """Samples the model has taken in an update (the first ``num_fitted`` of the buffer)."""
        return self.num_samples - self.num_pending

    @property
    def fixed_inducing(self) -> bool:
        return self.fixed_z is not None

    def add(self, x, y) -> BatchReport:
        """Validate and buffer samples (see ``OnlineSparseGP.add_data``)."""
        try:
            x, y = self.read_batch(x, y)
        except InvalidBatchError:
            self.rejections[MALFORMED_BATCH] += 1
            raise
        x, y, report = filter_samples(x, y, self.seen)
        self.rejections.update(report.rejected)
        if report.num_rejected:
            log.warning("rejected %d samples: %s", report.num_rejected, dict(report.rejected))
        self.seen.add(self.num_samples, np.column_stack([x, y]))
        self.buffer.append(x, y)
        self.num_pending += report.accepted
        return report

    def pending(self, max_new: int | None = None) -> int:
        """How many pending samples an update takes: all, or the oldest ``max_new``."""
        return self.num_pending if max_new is None else min(int(max_new), self.num_pending)

    def take(self, count: int) -> None:
        """The oldest ``count`` pending samples are in the model now (its E-step took them)."""
        self.num_pending -= count

    def set_aside(self, count: int | None = None) -> int:
        """Drop the oldest ``count`` pending samples (all by default), counted under
        ``update_failed``; returns how many were dropped."""
        count = self.pending(count)
        if count <= 0:
            return 0
        first = self.num_fitted
        self.buffer.remove(first, first + count)
        self.seen.remove(first, first + count)
        self.num_pending -= count
        self.rejections[UPDATE_FAILED] += count
        return count

    def fit_scalers(self) -> tuple:
        """Fit both scalers on every buffered sample (the pilot survey); returns unfitted ones
        to put back if the update that fitted them fails: the target
        scaler as it was, the input scaler without an ``extent`` (the mapping loop sets it
        again from the samples left then)."""
        unfitted = MinMaxScaler(), copy.deepcopy(self.y_scaler)
        self.x_scaler.fit(self.buffer.x)
        self.y_scaler.fit(self.buffer.y)
        return unfitted

    def fix_inducing(self, z, dtype: torch.dtype, device: torch.device) -> None:
        """Fix the inducing inputs to z (M × D, world units), kept scaled in ``dtype`` on
        ``device``; before the first update this fits the scalers on the samples so far."""
        if not self.x_scaler.fitted:
            self.fit_scalers()
        self.fixed_z = torch.as_tensor(self.x_scaler.transform(z), dtype=dtype, device=device)

    def scaled_query(self, x) -> np.ndarray:
        """Query inputs x (N × D, world units) in scaled units; a malformed or non-finite query
        is an :class:`~.samples.InvalidBatchError` (and no rejection: nothing is stored)."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            raise InvalidBatchError(f"query inputs must have shape (N, {self.input_dim}), "
                                    f"got {x.shape}")
        if not np.isfinite(x).all():
            raise InvalidBatchError("query inputs contain NaN or inf")
        return self.x_scaler.transform(x)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {
            "input_dim": self.input_dim,
            "x_scaler": self.x_scaler.state_dict(),
            "y_scaler": self.y_scaler.state_dict(),
            "buffer_x": torch.from_numpy(self.buffer.x.copy()),
            "buffer_y": torch.from_numpy(self.buffer.y.copy()),
            "num_pending": self.num_pending,
            "num_updates": self.num_updates,
            "rejections": dict(self.rejections),
            "fixed_inducing": None if self.fixed_z is None else self.fixed_z.cpu(),
        }

    def load_state_dict(self, state: dict, device: torch.device, dtype: torch.dtype) -> None:
        """Inverse of :meth:`state_dict` into a fresh intake; the scalers are read as the kinds
        this intake has, the buffer is checked against ``input_dim``, a fixed Z is put on
        ``device`` in ``dtype``."""
        self.x_scaler = type(self.x_scaler).from_state_dict(state["x_scaler"])
        self.y_scaler = type(self.y_scaler).from_state_dict(state["y_scaler"])
        x, y = state["buffer_x"].numpy(), state["buffer_y"].numpy()
        if x.shape != (len(y), self.input_dim):
            raise ValueError(f"buffer shapes {tuple(x.shape)} and {tuple(y.shape)} disagree")
        self.seen.add(self.num_samples, np.column_stack([x, y]))
        self.buffer.append(x, y)
        self.num_pending = int(state["num_pending"])
        self.num_updates = int(state["num_updates"])
        self.rejections = Counter(state["rejections"])
        fixed = state["fixed_inducing"]
        self.fixed_z = None if fixed is None else fixed.to(device, dtype)
