"""Online sparse-GP mapping methods, selectable by name.

    model = make_model(MappingConfig(method="poam", num_inducing=500))
    model.add_data(x, y); model.update(); mean, std = model.predict(x_query)

Methods (the POAM paper's method, baselines and ablations) are selected by name from
:data:`METHODS`, the registry (registry.py), which lists them; each method's class is
imported from its own module (``poam_ros.models.poam.POAM``); each method family's options
are ``MappingConfig.<family>`` (config.py).
"""

from poam_ros.models import state_io
from poam_ros.models.config import MappingConfig
from poam_ros.models.device import resolve_device
from poam_ros.models.exact import ExactGPSizeError
from poam_ros.models.linalg import BatchTooLargeError, NumericalError
from poam_ros.models.prediction import ModelNotReadyError
from poam_ros.models.registry import METHODS
from poam_ros.models.report import UpdateReport
from poam_ros.models.sparse_gp import OnlineSparseGP
from poam_ros.models.state_io import StateFileError

__all__ = ["BatchTooLargeError", "ExactGPSizeError", "METHODS", "MappingConfig",
           "ModelNotReadyError", "NumericalError", "OnlineSparseGP", "StateFileError",
           "UpdateReport", "load_model", "make_model", "resolve_device"]


def make_model(config: MappingConfig | None = None, input_dim: int = 2) -> OnlineSparseGP:
    """A new model of the method ``config.method``."""
    config = config or MappingConfig()
    return _method(config.method)(config, input_dim)


def load_model(path, device: str | None = None) -> OnlineSparseGP:
    """Load a model saved with ``save(path)``, whatever its method (named in the file)."""
    contents = state_io.read_header(path)  # read and checked once
    method = contents["method"]
    if method not in METHODS:
        raise StateFileError(path, f"it holds a model of the method {method!r}, unknown to "
                                   f"this version")
    return METHODS[method].from_state(contents["state"], path, device)


def _method(name: str) -> type[OnlineSparseGP]:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown mapping method {name!r}; available: "
                         f"{', '.join(sorted(METHODS))}") from None
