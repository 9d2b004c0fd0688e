"""The M-step's training step compiled by torch's inductor on the CPU (``mapping.compile: cpu``).

A training step of the attentive kernel is a chain of elementwise passes (base-kernel
exponentials, attention products, the ELBO's residuals) with a temporary per pass; inductor
fuses such chains into generated C++ loops. A :class:`CompiledStep` compiles one step function
once per process and shape (with ``mapping.static_shapes`` one shape per bucket of M, so the
methods whose M changes at every update do not recompile at every update). Compilation needs
a C++ compiler and may meet an operation inductor cannot take: the step then runs eagerly,
which is said once in the log. Its wall time is counted in :attr:`CompiledStep.compile_time`,
apart from the updates' times.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import torch
import torch._dynamo
from torch._dynamo.utils import counters

log = logging.getLogger(__name__)

#: What a failed compilation raises (a missing compiler is a BackendCompilerFailed).
COMPILE_ERRORS = (torch._dynamo.exc.TorchDynamoException, torch._inductor.exc.InductorError)


class CompiledStep:
    """``function`` compiled by inductor on first use, eager after a failed compilation."""

    def __init__(self, function: Callable):
        self.function = function
        self.compiled = torch.compile(function, dynamic=False)
        #: The compilation error, once one occurred (the step is then eager for good).
        self.failure: Exception | None = None
        #: Graphs compiled so far and the seconds of the calls that compiled them.
        self.graphs = 0
        self.compile_time = 0.0

    def __call__(self, *args):
        if self.failure is not None:
            return self.function(*args)
        before, start = counters["stats"]["unique_graphs"], time.perf_counter()
        try:
            result = self.compiled(*args)
        except COMPILE_ERRORS as error:
            self.failure = error
            log.warning("torch.compile failed, training steps run eagerly: %s",
                        str(error).splitlines()[0] if str(error) else type(error).__name__)
            return self.function(*args)
        compiled = counters["stats"]["unique_graphs"] - before
        if compiled:
            self.graphs += compiled
            self.compile_time += time.perf_counter() - start
        return result


_STEPS: dict[Callable, CompiledStep] = {}


def compiled_step(function: Callable) -> CompiledStep:
    """The process's one :class:`CompiledStep` of ``function``: compilation is paid once per
    process and shape, whichever model calls it."""
    if function not in _STEPS:
        _STEPS[function] = CompiledStep(function)
    return _STEPS[function]
