"""A model streamed over batches and scored after each: the shared harness of the papers'
reproductions (:mod:`.vips_paper`, :mod:`.vips_synthetic`, :mod:`.oips_paper`).

The papers' settings, used throughout: hyper-parameters by L-BFGS to convergence (``m_step =
"lbfgs"``, :data:`COMMON`), scalers fitted on the whole data set's statistics before the first
update (``update()`` refits only unfitted scalers): inputs standardised (the min-max scaler
with low = mean − std and high = mean + std is the standard scaler) or left in their units.
The scores: RMSE, and NLPD, the mean negative log predictive density of the test targets under
N(mean, std² + σ²) (nats); relative to the full-batch GP and a noise model as the VIPS paper's
App. D.3 (:func:`relative_percent`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from poam_ros.models import MappingConfig, make_model
from poam_ros.models.linalg import NumericalError
from poam_ros.scalers import MinMaxScaler, StandardScaler


def shared_data(*parts: str) -> Path:
    """A file of the shared data folder ``shared/data`` beside the checkout: the nearest
    folder above this file that holds one (a checkout and its worktrees sit at different
    depths); beside the checkout when none does (then the file is missing, and says so)."""
    here = Path(__file__).resolve()
    for folder in here.parents:
        if (folder / "shared" / "data").is_dir():
            return folder.joinpath("shared", "data", *parts)
    return here.parents[3].joinpath("shared", "data", *parts)


#: Settings of every model here: the papers' M-step, no trace tolerance besides VIPS's rule.
COMMON = dict(m_step="lbfgs", device="cpu", dtype="float64", pcd_tolerance=0.0)


def standardising_scalers(x: np.ndarray, y: np.ndarray) -> tuple[MinMaxScaler, StandardScaler]:
    """Scalers that standardise inputs (per axis) and targets with the statistics of x, y."""
    mean, std = x.mean(0), x.std(0)
    return MinMaxScaler(mean - std, mean + std), StandardScaler(float(y.mean()), float(y.std()))


def identity_scalers(input_dim: int) -> tuple[MinMaxScaler, StandardScaler]:
    return MinMaxScaler(-np.ones(input_dim), np.ones(input_dim)), StandardScaler(0.0, 1.0)


def scores(model, x_test: np.ndarray, y_test: np.ndarray) -> dict[str, float]:
    """RMSE of the predictive mean and NLPD of the (noisy) test targets, nats."""
    mean, std = model.predict(x_test, include_noise=True)
    return {"rmse": float(np.sqrt(np.mean((mean - y_test) ** 2))),
            "nlpd": float(np.mean(0.5 * np.log(2 * np.pi * std ** 2)
                                  + 0.5 * ((y_test - mean) / std) ** 2))}


def stream(config: MappingConfig, batches, scalers, x_test, y_test) -> list[dict]:
    """Fit ``batches`` one update each; per batch M, :func:`scores` on the test set, the
    method's extras, the hyper-parameters and the update time. An update that fails
    numerically (:class:`~poam_ros.models.linalg.NumericalError`) ends the stream there, said
    on stdout: the rows are those of the batches before it."""
    model = make_model(config, batches[0][0].shape[1])
    model.intake.x_scaler, model.intake.y_scaler = scalers
    rows = []
    for i, (x, y) in enumerate(batches):
        model.add_data(x, y)
        start = time.perf_counter()
        try:
            report = model.update()
        except NumericalError as err:
            print(f"{config.method}: the update of batch {i + 1} failed ({err}); stopped there")
            break
        seconds = time.perf_counter() - start
        rows.append(dict(batch=i + 1, M=report.num_inducing, **scores(model, x_test, y_test),
                         seconds=round(seconds, 3), failure=report.training_failure,
                         **{k: v for k, v in report.extra.items() if k != "pcd_trace_error"},
                         **hyperparameters(model)))
    return rows


def hyperparameters(model) -> dict[str, float]:
    """The kernel amplitude a and noise variance σ² (standardised target units) and, where the
    kernel has them, its lengthscale (scaled input units) and constant share c (matern52)."""
    base = model.kernel.base_kernel
    values = {"amplitude": model.amplitude, "noise": model.noise,
              "lengthscale": getattr(base, "lengthscale", None),
              "constant": getattr(base, "constant", None)}
    return {name: _number(value) for name, value in values.items() if value is not None}


def _number(value: torch.Tensor) -> float | list[float]:
    """A hyper-parameter as a float, or a list of them (one lengthscale per input with ARD)."""
    flat = value.detach().reshape(-1)
    return float(flat[0]) if flat.numel() == 1 else [round(float(v), 4) for v in flat]


def exact_scores(config: MappingConfig, x, y, scalers, x_test, y_test) -> dict[str, float]:
    """The full-batch GP's :func:`scores`: all of (x, y) in one update, hyper-parameters by
    L-BFGS."""
    model = make_model(config.replace(method="exact", exact={"max_samples": len(y)}), x.shape[1])
    model.intake.x_scaler, model.intake.y_scaler = scalers
    model.add_data(x, y)
    model.update()
    return scores(model, x_test, y_test)


def noise_scores(y_train: np.ndarray, y_test: np.ndarray) -> dict[str, float]:
    """The noise model's :func:`scores`: every target predicted as N(mean, variance) of the
    training targets (the VIPS paper's App. D.3 normalises by it; it does not define it
    further, this is the GP whose kernel is all noise)."""
    mean, std = float(y_train.mean()), float(y_train.std())
    return {"rmse": float(np.sqrt(np.mean((y_test - mean) ** 2))),
            "nlpd": float(np.mean(0.5 * np.log(2 * np.pi * std ** 2)
                                  + 0.5 * ((y_test - mean) / std) ** 2))}


def relative_percent(method: float, exact: float, noise: float) -> float:
    """App. D.3: 100 (metric_method − metric_exact) / |metric_noise − metric_exact|."""
    return 100.0 * (method - exact) / abs(noise - exact)


def print_rows(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    for row in rows:
        extra = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()
                 if k not in ("batch", "M", "rmse")}
        print(f"  batch {row['batch']:2d}  M {row['M']:5d}  RMSE {row['rmse']:.3f}  {extra}")
