"""What a decision epoch (one map update) leaves for the record, and its averages."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class EpochRecord:
    """Metrics and timings after one decision epoch (epoch 0: after the pilot survey)."""

    epoch: int
    num_samples: int
    smse: float
    msll: float
    nlpd: float
    rmse: float
    mae: float
    update_time: float
    inducing_time: float
    variational_time: float
    training_time: float
    predict_time: float
    num_inducing: int
    sim_time: float
    training_failure: str | None = None
    #: a failed E-step: the epoch's samples wait for the next update, the previous map is scored
    update_failure: str | None = None
    #: the method's own per-update figures (``UpdateReport.extra``: inducing inputs added, the
    #: bound's gap, the memory's size, ...), by name
    extra: dict = field(default_factory=dict)


AVERAGED_METRICS = ("smse", "msll", "nlpd", "rmse", "mae", "update_time", "predict_time")


def epoch_averages(records: list[EpochRecord]) -> dict[str, float]:
    """Metrics averaged over decision epochs, as the paper's text describes Table I."""
    return {k: float(np.mean([getattr(r, k) for r in records])) for k in AVERAGED_METRICS}


def sample_averages(records: list[EpochRecord], first: int, last: int) -> dict[str, float] | None:
    """Metrics averaged over the sample counts ``first`` … ``last``, or None when the records
    do not span them.

    Each count's value is interpolated linearly between the epochs around it, so an epoch
    weighs by the samples it spans and the early epochs before ``first`` drop out. The POAM
    authors' released metrics scripts average their runs so, over 1,000 … 5,000 samples.
    Where epochs share a count (a failed update adds none), the last of them counts.
    """
    if not records or records[0].num_samples > first or records[-1].num_samples < last:
        return None
    counts = np.array([r.num_samples for r in records])
    keep = np.append(counts[1:] != counts[:-1], True)  # the last record of each count
    grid = np.arange(first, last + 1)
    return {k: float(np.mean(np.interp(grid, counts[keep],
                                       [getattr(r, k) for r, kept in zip(records, keep) if kept])))
            for k in AVERAGED_METRICS}


