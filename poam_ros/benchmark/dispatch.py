"""The launch budget of a model update, counted without a GPU.

A GPU update is bound by its kernel launches and by the points where the host waits for the
device, not by arithmetic. Both are properties of the code path, so they are counted on CPU
tensors: :class:`DispatchCounter` sees every aten op torch dispatches while it is active
(autograd's backward included) and classifies it.

**Launches** (``ops``): every dispatched aten op except pure metadata and allocation, which
launch no kernel on a GPU:

* views and aliases (ops whose schema returns an alias of an input: ``view``, ``transpose``,
  ``slice``, ``select``, ``expand``, ``unsqueeze``, ``diagonal``, ``detach``, …) and
  ``_unsafe_view``;
* allocations without initialisation (``empty``, ``empty_strided``, ``new_empty``, …) and
  storage bookkeeping (``set_``, ``resize_``);
* the profiler's record-function markers (``profiler::…``), which optimisers emit;
* size and stride queries, which do not dispatch at all.

Composite ops (``reshape``, ``matmul``, ``to``) are seen as the ops they decompose into, so a
``reshape`` of a contiguous tensor counts nothing and one that copies counts its copy. Host
work inside numpy is no torch dispatch and counts nothing.

**Synchronisations** (``syncs``): operations after which the host holds a value computed on
the device, so on a GPU it waits for every queued kernel:

* ``_local_scalar_dense``: ``item()``, ``bool()``, ``int()``, ``float()`` of a tensor, and so
  every ``if tensor:``;
* ops whose output shape depends on the data (:data:`DATA_DEPENDENT`: ``nonzero``,
  ``masked_select``, ``unique``, ``repeat_interleave`` without ``output_size``, …, and
  ``index`` / ``index_put_`` with a boolean mask) and ops that return a Python value
  (``equal``, the error check of ``linalg.cholesky`` and friends);
* copies to the host: ``Tensor.cpu()`` and ``Tensor.tolist()``, seen at the Python level
  (on CPU tensors ``cpu()`` dispatches nothing). The GPU path must bring data to the host with
  ``.cpu()``: a ``.to("cpu")`` cannot be told from ``.to(model.device)`` on a CPU and is not
  counted; ``.numpy()`` is not counted either, as on a GPU tensor it only works after
  ``.cpu()``, and on a tensor made on the host (the model's CPU generator) it copies nothing.

A data-dependent op that also computes on the device counts as one launch and one sync.
**Uploads** (host data to the device: ``torch.as_tensor`` / ``torch.tensor`` of numpy arrays
or Python numbers) are counted apart: they are copies, not kernels, and need no wait.

:func:`count_update` counts one steady-state update on the code path a CUDA model takes
(:func:`use_gpu_code_path`: whole-matrix kernel evaluation, fused Adam), which is what the
launch budget is about; the CPU path's row blocks launch more ops, and its Adam's step counts
are CPU tensors whose reads would count as syncs although a CPU never waits.

    python -m poam_ros.benchmark.dispatch [--num-inducing 500] [--dtype float64] [--cpu-path]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

#: Allocation and bookkeeping ops that launch no kernel (views are recognised by schema).
NO_LAUNCH = frozenset({
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::_unsafe_view", "aten::set_", "aten::resize_",
    "aten::lift_fresh", "aten::_local_scalar_dense", "aten::_linalg_check_errors",
})
#: Ops whose output shape depends on the data: the host must read the device to allocate.
DATA_DEPENDENT = frozenset({
    "aten::nonzero", "aten::masked_select", "aten::_unique", "aten::_unique2",
    "aten::unique_dim", "aten::unique_consecutive", "aten::unique_dim_consecutive",
    "aten::bincount",
})
#: Ops that hand the host a value computed on the device.
HOST_READS = frozenset({"aten::_local_scalar_dense", "aten::equal", "aten::is_nonzero",
                        "aten::_linalg_check_errors"})
_MASK_INDEXED = frozenset({"aten::index", "aten::index_put", "aten::index_put_",
                           "aten::_index_put_impl_"})
_UPLOADS = (torch.as_tensor, torch.tensor)


class DispatchCounter:
    """Counts launches, synchronisations and uploads while active (see the module docstring).

    ``by_op`` counts launches by aten op name, ``sync_by_op`` syncs by what caused them.
    Usable once or several times as a context manager; counts accumulate.
    """

    def __init__(self):
        self.by_op: Counter = Counter()
        self.sync_by_op: Counter = Counter()
        self.uploads = 0
        self._modes: list = []

    @property
    def ops(self) -> int:
        return sum(self.by_op.values())

    @property
    def syncs(self) -> int:
        return sum(self.sync_by_op.values())

    def __enter__(self) -> "DispatchCounter":
        self._modes = [_FunctionLevel(self), _DispatchLevel(self)]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        self._modes = []

    def _record(self, func, args, kwargs) -> None:
        name = func._schema.name
        if name in HOST_READS:
            self.sync_by_op[name] += 1
        elif name in DATA_DEPENDENT or _data_dependent(name, func, args, kwargs):
            self.sync_by_op[name] += 1
        if not (func.is_view or name in NO_LAUNCH or name.startswith("profiler::")):
            self.by_op[name] += 1


def _data_dependent(name: str, func, args, kwargs) -> bool:
    """Boolean-mask indexing (an implicit nonzero) or repeat_interleave of unknown size."""
    if name in _MASK_INDEXED:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
                   for i in indices)
    if name == "aten::repeat_interleave":
        return func._overloadname != "self_int" and kwargs.get("output_size") is None
    return False


class _DispatchLevel(TorchDispatchMode):
    def __init__(self, counter: DispatchCounter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.counter._record(func, args, kwargs)
        return func(*args, **kwargs)


class _FunctionLevel(TorchFunctionMode):
    def __init__(self, counter: DispatchCounter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cpu or func is torch.Tensor.tolist:
            self.counter.sync_by_op[f"Tensor.{func.__name__}"] += 1
        elif func in _UPLOADS and args and not isinstance(args[0], torch.Tensor):
            self.counter.uploads += 1
        return func(*args, **kwargs)


def use_gpu_code_path(model) -> None:
    """Make a CPU model take the code path a CUDA model takes: the attentive kernel in whole
    matrices instead of row blocks, and fused Adam (a new optimiser: call before training)."""
    base = model.kernel.base_kernel
    if hasattr(base, "block_rows"):
        base.block_rows = None
    model.trainer = model._make_trainer(fused=True)


def fill_to_steady_state(model, samples, num_samples: int, batch: int) -> None:
    """Fill ``model`` with ``num_samples`` samples (``samples(n)`` draws n) in updates of
    2,000, then update it once more with ``batch`` new ones: the state a mission's update
    starts from."""
    while model.num_samples < num_samples:
        model.add_data(*samples(min(2000, num_samples - model.num_samples)))
        model.update()
    model.add_data(*samples(batch))
    model.update()


def count_update(config, num_samples: int = 5000, batch: int = 60, seed: int = 0,
                 top: int = 15, gpu_path: bool = True) -> dict:
    """Launches and synchronisations of one steady-state update on CPU tensors.

    The model of ``config`` (its device set to the CPU; with ``gpu_path``, on the code path of
    a CUDA model: :func:`use_gpu_code_path`) is filled with ``num_samples`` samples of the core
    benchmark's synthetic field in updates of 2,000, updated once more with ``batch`` new
    samples, then counted over the next update of ``batch`` samples. Returns ``ops``,
    ``syncs``, ``uploads``, the ``top`` launching ops (``by_op``) and the syncs by cause
    (``sync_by_op``).
    """
    from poam_ros.benchmark.core_speed import noisy_samples
    from poam_ros.models import make_model

    rng = np.random.default_rng(seed)

    def samples(n):
        return noisy_samples(rng, n)

    model = make_model(config.replace(device="cpu"))
    if gpu_path:
        use_gpu_code_path(model)
    fill_to_steady_state(model, samples, num_samples, batch)
    model.add_data(*samples(batch))
    with DispatchCounter() as counter:
        model.update()
    return {"ops": counter.ops, "syncs": counter.syncs, "uploads": counter.uploads,
            "by_op": dict(counter.by_op.most_common(top)),
            "sync_by_op": dict(counter.sync_by_op.most_common())}


#: CUDA runtime and driver calls that launch a kernel, and those that make the host wait.
_LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchCooperativeKernel",
                 "cudaGraphLaunch")
_WAIT_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
               "cudaMemcpy ", "cuMemcpyDtoH", "cudaMemcpy(")


def profile_device_update(config, num_samples: int = 5000, batch: int = 60, seed: int = 0,
                          updates: int = 3) -> dict:
    """What one steady-state update costs on a CUDA device, read by torch's profiler.

    The model is filled by :func:`fill_to_steady_state` (on ``config``'s device), then ``updates``
    updates of ``batch`` samples are profiled. Per update (the median): ``launches`` (runtime
    and driver calls that launch a kernel or a graph), ``waits`` (calls that block the host:
    stream, device and event synchronisations and synchronous copies), ``copies`` (memory
    copies the device ran), ``gpu_busy`` (the kernels' and copies' device time [s]) and
    ``update`` (the update's wall time [s]). The ratio of the last two says how much of an
    update the device waits on the host.
    """
    import time

    from torch.profiler import ProfilerActivity, profile

    from poam_ros.benchmark.core_speed import noisy_samples
    from poam_ros.models import make_model

    rng = np.random.default_rng(seed)

    def samples(n):
        return noisy_samples(rng, n)

    model = make_model(config)
    if model.device.type != "cuda":
        raise ValueError(f"profile_device_update needs a CUDA model, got {model.device}")
    fill_to_steady_state(model, samples, num_samples, batch)
    rows = []
    for _ in range(updates):
        model.add_data(*samples(batch))
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            tic = time.perf_counter()
            model.update()
            torch.cuda.synchronize()
            wall = time.perf_counter() - tic
        rows.append({"update": wall, **_device_activity(prof.events())})
    return {key: float(np.median([row[key] for row in rows])) for key in rows[0]}


def _device_activity(events) -> dict:
    """Launch, wait and copy counts and the device's busy time [s] of profiler ``events``."""
    launches = waits = copies = 0
    busy_us = 0.0
    for event in events:
        name = event.name
        if event.device_type == torch.autograd.DeviceType.CUDA:
            busy_us += event.device_time
            copies += "memcpy" in name.lower()
        elif name.startswith(_LAUNCH_CALLS):
            launches += 1
        elif name.startswith(_WAIT_CALLS):
            waits += 1
    return {"launches": launches, "waits": waits, "copies": copies, "gpu_busy": busy_us * 1e-6}


def main(argv=None) -> int:
    from poam_ros.models import MappingConfig

    parser = argparse.ArgumentParser(prog="python -m poam_ros.benchmark.dispatch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="poam")
    parser.add_argument("--num-inducing", type=int, default=500)
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--num-samples", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=60)
    parser.add_argument("--cpu-path", action="store_true",
                        help="count the CPU code path (row blocks, foreach Adam) instead")
    args = parser.parse_args(argv)
    config = MappingConfig(method=args.method, num_inducing=args.num_inducing, dtype=args.dtype)
    print(json.dumps(count_update(config, args.num_samples, args.batch,
                                  gpu_path=not args.cpu_path), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
