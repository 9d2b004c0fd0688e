"""The continual multi-task GP paper's benchmark: every method, the independent baseline
included, starts from the same scalers; a single-channel method is refused."""

import numpy as np
import pytest

from poam_ros.benchmark import cmogp_paper
from poam_ros.models import MappingConfig


@pytest.mark.parametrize("method", cmogp_paper.METHODS_USED)
def test_every_method_starts_from_the_same_scalers(method):
    batches, _, _ = cmogp_paper.toy_data(0, asynchronous=True)
    first = batches[0][1]
    config = MappingConfig(kernel="rbf", num_inducing=20, train_steps=1, device="cpu")
    model = cmogp_paper.build(method, config, 1, 2, [0.0], [2.0], first)
    model.add_data(*batches[0])
    model.update()
    assert model.x_scaler.low.tolist() == [0.0] and model.x_scaler.high.tolist() == [2.0]
    for d, scaler in enumerate(model.y_scaler.scalers):
        values = first[np.isfinite(first[:, d]), d]
        assert (scaler.mean, scaler.std) == (values.mean(), values.std())
    for channel in getattr(model, "channels", ()):  # poam-independent's POAMs share them
        assert channel.x_scaler is model.x_scaler
    assert np.isfinite(model.predict(np.array([[0.1], [1.9]]))[0]).all()


def test_a_single_channel_method_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cmogp_paper.main(["sync", "--methods", "poam"])
    assert exit_info.value.code == 2
    assert "--methods: poam not among cmogp, poam-mt, poam-independent" in \
        capsys.readouterr().err
