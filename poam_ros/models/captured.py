"""POAM's training steps captured as CUDA graphs, one per bucket of M (``mapping.cuda_graphs``).

On a GPU the eager M-step is a chain of small kernels, each launched by Python (about 2,700
launches per update at M = 500, docs/benchmarks.md). A graph captured with
``torch.cuda.graph`` replays one step's kernels (kernel blocks, the ELBO and its hand-derived
gradient, fused Adam) with one launch. A graph is specialised to its tensors' addresses and
shapes, so the step runs on static buffers of its bucket (:mod:`.padding`): each update copies
Z, its base stack, the mask, q(u) and N into them, each step its mini-batch, then replays.
torch.compile's ``reduce-overhead`` mode captures the same way but would trace through the
ELBO's Cholesky guard (a ContextVar: a graph break) and the hand-written autograd Functions;
the explicit capture takes them as they run.

The deferred checks (:func:`~.linalg.deferred_checks`) stay on the device: inside the graph
each step ands its Cholesky statuses and its loss's finiteness into one flag, which the
trainer reads with the loss after the M-step (one host synchronisation). A capture is made
once per bucket and reused while the optimiser's state tensors are the captured ones (a
restored optimiser has new ones: the bucket is captured again). Capturing runs one warm-up
step on a side stream (CUDA's rule before a capture), whose changes to the hyper-parameters
and Adam's state are undone in place. If a capture fails, the steps run eagerly from then on,
said once in the log.
"""

from __future__ import annotations

import logging
from collections import Counter

import torch
from torch import Tensor

from poam_ros.models.elbo import NegativeElbo
from poam_ros.models.linalg import deferred_checks
from poam_ros.models.objectives import fixed_posterior_blocks

log = logging.getLogger(__name__)

#: The tensors of a FixedPosteriorElbo that a graph reads, copied into its buffers per update
#: (and the padding's mask, which the objective leaves out for a full bucket).
_INPUTS = ("z", "cache", "mean", "cov_u", "logdet")


class _BucketGraph:
    """One bucket's static buffers and its captured step."""

    def __init__(self, objective, batch_size: int):
        model = objective.model
        self.inputs = {name: getattr(objective, name).detach().clone() for name in _INPUTS}
        self.inputs["mask"] = objective.padding.mask.clone()
        self.num_data = torch.zeros((), dtype=model.dtype, device=model.device)
        self.x = torch.zeros(batch_size, model.input_dim, dtype=model.dtype, device=model.device)
        self.y = torch.zeros(batch_size, dtype=model.dtype, device=model.device)
        self.ok = torch.ones((), dtype=torch.bool, device=model.device)
        self.graph = torch.cuda.CUDAGraph()
        self.loss: Tensor | None = None
        self.state: list[Tensor] = []

    def step(self, model, optimizer) -> Tensor:
        """One training step on the buffers (run eagerly to warm up, then under capture)."""
        config, inputs = model.config, self.inputs
        with deferred_checks() as checks:
            k_uu, k_uf, cov, logdet = fixed_posterior_blocks(
                model.kernel.base_kernel, model.amplitude, inputs["z"], inputs["cache"],
                self.x, inputs["cov_u"], inputs["logdet"], inputs["mask"], config.jitter)
            loss = NegativeElbo.apply(k_uu, k_uf, model.amplitude, model.noise, self.y,
                                      inputs["mean"], cov, logdet, self.num_data, config.jitter,
                                      config.max_jitter_tries)
            checks.record(torch.isfinite(loss))
        for flag in checks.flags():
            self.ok.logical_and_(flag)
        loss.backward()
        optimizer.step()
        return loss.detach()


class CapturedSteps:
    """The trainer's CUDA graphs by bucket; ``captures`` counts the captures per bucket."""

    def __init__(self):
        self.graphs: dict[int, _BucketGraph] = {}
        self.captures: Counter = Counter()
        #: The capture error, once one occurred (the steps are then eager for good).
        self.failure: Exception | None = None

    def run(self, objective, optimizer, minibatches: list[tuple[Tensor, Tensor]]) -> Tensor:
        """The M-step's steps on ``minibatches`` by replays; the last loss. The graph's flag
        of the checks is and-ed into the caller's :class:`~.linalg.DeferredChecks` by the
        returned loss being NaN where a check failed."""
        model = objective.model
        size = objective.padding.bucket
        graph = self.graphs.get(size)
        if graph is None or not self._current(graph, optimizer):
            graph = self._capture(objective, optimizer, len(minibatches[0][1]))
        for name in _INPUTS:
            graph.inputs[name].copy_(getattr(objective, name))
        graph.inputs["mask"].copy_(objective.padding.mask)
        graph.num_data.fill_(model.num_fitted)
        graph.ok.fill_(True)
        for x, y in minibatches:
            graph.x.copy_(x)
            graph.y.copy_(y)
            graph.graph.replay()
        return torch.where(graph.ok, graph.loss, torch.nan)

    @staticmethod
    def _current(graph: _BucketGraph, optimizer) -> bool:
        """Whether the optimiser still holds the state tensors the graph was captured with."""
        state = [t for s in optimizer.state.values() for t in s.values()
                 if isinstance(t, Tensor)]
        return len(state) == len(graph.state) and all(a is b for a, b in zip(state, graph.state))

    def _capture(self, objective, optimizer, batch_size: int) -> _BucketGraph:
        """Warm up one step on a side stream, undo it in place, capture the step."""
        model = objective.model
        graph = _BucketGraph(objective, batch_size)
        graph.num_data.fill_(model.num_fitted)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        capturable = [group.get("capturable", False) for group in optimizer.param_groups]
        for group in optimizer.param_groups:  # for the capture only: a saved state keeps False
            group["capturable"] = True
        saved = [p.detach().clone() for p in params]
        saved_state = {p: {k: v.clone() for k, v in s.items()} for p, s in optimizer.state.items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(side):
                optimizer.zero_grad(set_to_none=True)
                graph.step(model, optimizer)
            torch.cuda.current_stream().wait_stream(side)
        finally:  # undo the warm-up step in place (the graph will keep these tensors)
            with torch.no_grad():
                for p, value in zip(params, saved):
                    p.copy_(value)
                for p, state in optimizer.state.items():
                    for key, value in state.items():
                        if isinstance(value, Tensor):
                            value.copy_(saved_state[p][key] if p in saved_state else 0)
            optimizer.zero_grad(set_to_none=True)
        try:
            with torch.cuda.graph(graph.graph):
                graph.loss = graph.step(model, optimizer)
        finally:
            for group, flag in zip(optimizer.param_groups, capturable):
                group["capturable"] = flag
        graph.state = [t for s in optimizer.state.values() for t in s.values()
                       if isinstance(t, Tensor)]
        self.graphs[objective.padding.bucket] = graph
        self.captures[objective.padding.bucket] += 1
        return graph
