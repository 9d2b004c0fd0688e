"""The common state of every model, as the plain containers a state file holds.

:func:`common_state` lists a ready model's whole state (the file format around it is
:mod:`.state_io`'s)::

    config          MappingConfig.to_dict()
    (the intake's)  samples, scalers, counters, fixed Z (:meth:`.Intake.state_dict`)
    kernel, likelihood, optimizer   torch state dicts (the optimizer: the M-step's)
    generator       the seeded generator's state (E-step selections, mini-batches)
    inducing        Z (M × D, scaled units)
    posterior       q(u): mean, sqrt, logdet, or None
    method_state    the tensors a method keeps beyond q(u) and Z (``_method_state``)

Tensors are written from the CPU and read back onto the model's device in its dtype, except
the method state, which keeps the precision saved (data terms are float64 in any model).
:func:`rebuild` makes a model from such a state; anything inconsistent is one
:class:`~.state_io.StateFileError` naming the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from torch import Tensor

from poam_ros.models.config import MappingConfig
from poam_ros.models.posterior import VariationalPosterior
from poam_ros.models.state_io import StateFileError

if TYPE_CHECKING:
    from poam_ros.models.sparse_gp import OnlineSparseGP


def common_state(model: OnlineSparseGP, method_state: dict[str, Tensor]) -> dict:
    """The state of ``model`` (ready) with its ``method_state``, in the layout above."""
    posterior = model.posterior
    return {
        "config": model.config.to_dict(),
        **model.intake.state_dict(),
        "kernel": model.kernel.state_dict(),
        "likelihood": model.likelihood.state_dict(),
        "optimizer": model.trainer.optimizer.state_dict(),
        "generator": model.generator.get_state(),
        "inducing": model.inducing.cpu(),
        "posterior": None if posterior is None else {
            "mean": posterior.mean.cpu(), "sqrt": posterior.sqrt.cpu(),
            "logdet": posterior.logdet.cpu()},
        "method_state": {k: v.cpu() for k, v in method_state.items()},
    }


def load_common_state(model: OnlineSparseGP, state: dict) -> dict[str, Tensor]:
    """Inverse of :func:`common_state` into a fresh ``model``; returns the method state, on
    the model's device in the precision saved (the method casts)."""
    to = dict(device=model.device, dtype=model.dtype)
    model.intake.load_state_dict(state, model.device, model.dtype)
    model.kernel.load_state_dict(state["kernel"])
    model.likelihood.load_state_dict(state["likelihood"])
    model.trainer.optimizer.load_state_dict(state["optimizer"])
    model.generator.set_state(state["generator"])
    model.inducing = state["inducing"].to(**to)
    post = state["posterior"]
    model.posterior = None if post is None else VariationalPosterior(
        post["mean"].to(**to), post["sqrt"].to(**to), post["logdet"].to(**to))
    return {k: v.to(model.device) for k, v in state["method_state"].items()}


def rebuild(build: Callable[[MappingConfig, int], OnlineSparseGP], state: dict, path,
            device: str | None = None) -> OnlineSparseGP:
    """A model made by ``build(config, input_dim)`` and loaded with the checked ``state`` of
    the file ``path`` (``device`` overrides the saved device setting); nothing is
    half-loaded."""
    try:
        config = MappingConfig.from_saved(state["config"])
        if device is not None:
            config = config.replace(device=device)
        model = build(config, int(state["input_dim"]))
        model.load_state_dict(state)
    except StateFileError:
        raise
    except Exception as err:  # a damaged or mismatched payload
        raise StateFileError(path, f"inconsistent contents ({type(err).__name__}: "
                                   f"{err})") from None
    return model
