"""The prediction (poam_ros/models/prediction.py): queries in world units, in blocks of rows."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from poam_ros.models import MappingConfig, make_model
from poam_ros.models.poam import POAM
from poam_ros.models.posterior import TERMS_DTYPE, prediction_cache


def test_lengthscale_map_in_world_units(stream, small_config):
    model = POAM(small_config)
    model.add_data(*stream(1, 200)[0])
    model.update()
    ls = model.lengthscale_map(np.zeros((5, 2)))
    half_range = model.x_scaler.half_range
    assert ls.shape == (5,)
    assert (ls >= 0.05 * half_range.min() - 1e-9).all()
    assert (ls <= 0.5 * half_range.max() + 1e-9).all()


PREDICTION_PEAK = """
import numpy as np
from poam_ros.models import MappingConfig, make_model

def resident_mb(name):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith(name))

model = make_model(MappingConfig(kernel="rbf", num_inducing=500, train_steps=2, device="cpu"))
rng = np.random.default_rng(0)
x = rng.uniform(-30.0, 30.0, (3000, 2))
model.add_data(x, np.sin(x[:, 0] / 5.0))
model.update()
query = rng.uniform(-30.0, 30.0, (250_000, 2))
open("/proc/self/clear_refs", "w").write("5")  # restart the peak (VmHWM) from here
before = resident_mb("VmRSS")
model.predict(query)
print(resident_mb("VmHWM") - before)
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc")
def test_predicting_many_points_holds_one_block_at_a_time():
    """250,000 points in blocks of 2,048: the peak resident memory grows by about the
    results (4 MB) and one block's K(x, Z), not by every block's: when the per-block results
    were kept between the blocks' temporaries they pinned glibc's heap, +0.65 GB. In a fresh
    process, as a mapper's heap after its first big update."""
    done = subprocess.run([sys.executable, "-c", PREDICTION_PEAK], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 150.0


def test_a_float32_model_predicts_the_variance_of_its_factors_at_high_condition():
    """v = a − kᵀQk with Q of K_uu's condition (10⁷ here): the products with the factors in
    float32 put errors of the prior variance's size into v (0.28 a at these points, where v
    is down to 6·10⁻⁵ a); taken in TERMS_DTYPE from the float32 kernel values, v is the
    float64 evaluation's to 10⁻⁶ a."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-10.0, 10.0, (3000, 2))
    model = make_model(MappingConfig(method="poam", kernel="rbf", num_inducing=200,
                                     train_steps=30, dtype="float32", device="cpu",
                                     initial_noise_variance=1e-3))
    model.add_data(x, 50.0 * np.sin(x[:, 0] / 4.0) * np.cos(x[:, 1] / 5.0))
    model.update()
    chol = model.k_uu_cholesky(model.inducing, None, TERMS_DTYPE)
    assert torch.linalg.cond(chol @ chol.T) > 1e6
    kernel = copy.deepcopy(model.kernel).to(torch.float64)
    queries = rng.uniform(-10.0, 10.0, (500, 2))
    k_fu = kernel.outputscale * kernel.base_kernel.forward(
        model.prediction.scaled_inputs(queries).double(), model.inducing.double())
    factors = prediction_cache(chol, model.posterior.to(TERMS_DTYPE))
    amplitude = model.amplitude.double()
    reference = amplitude - ((k_fu @ factors.q) * k_fu).sum(1)
    _, std = model.predict(queries)
    variance = (std / model.y_scaler.inverse_std(np.ones(1))[0]) ** 2
    assert np.abs(variance - reference.detach().numpy()).max() < 1e-5 * amplitude.item()
