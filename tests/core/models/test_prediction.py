"""The prediction (poam_ros/models/prediction.py): queries in world units, in blocks of rows."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from poam_ros.models.poam import POAM


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
