"""What one call of a model's ``update()`` did: :class:`UpdateReport`.

The mapping loop, the mission, the benchmarks and the mapper's diagnostics read it; a method
adds what is its own under ``extra`` (e.g. ``pcd_trace_error``, VIPS's bound terms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class UpdateReport:
    """What one call of ``update()`` did. Times are wall-clock seconds."""

    num_new: int = 0
    num_samples: int = 0
    num_inducing: int = 0
    inducing_time: float = 0.0
    variational_time: float = 0.0
    training_time: float = 0.0
    total_time: float = 0.0
    loss: float = math.nan
    training_failure: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def skipped(self) -> bool:
        return self.num_new == 0
