"""The continual multi-task GP paper's benchmark: every method, the independent baseline
included, starts from the same scalers; a single-channel method is refused."""

import json

import numpy as np
import pytest

from poam_ros.benchmark import cmogp_paper
from poam_ros.models import MappingConfig


@pytest.mark.parametrize("method", cmogp_paper.METHODS_USED)
def test_every_method_starts_from_the_same_scalers(method):
    batches, _, _ = cmogp_paper.toy_data(0, asynchronous=True)
    first = cmogp_paper.first_samples(batches)
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
    # the first asynchronous batch measures channel 1 only
    assert np.isfinite(model.predict(np.array([[0.1], [1.9]]))[0][:, 0]).all()


def test_a_single_channel_method_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cmogp_paper.main(["sync", "--methods", "poam"])
    assert exit_info.value.code == 2
    assert "--methods: poam not among cmogp, poam-mt, poam-independent" in \
        capsys.readouterr().err


def test_the_asynchronous_toy_alternates_the_channels():
    """Sec. 4.3: one channel per batch, the other the next; each slice once."""
    batches, tests, order = cmogp_paper.toy_data(0, asynchronous=True)
    measured = [np.isfinite(y).any(0).tolist() for _, y in batches]
    assert measured == [[True, False], [False, True]] * 2 + [[True, False]]
    assert order == [[0, 2, 4], [1, 3]] and len(tests[1]) == cmogp_paper.TOY_BATCHES
    synchronous, _, _ = cmogp_paper.toy_data(0, asynchronous=False)
    assert all(np.isfinite(y).any(0).all() for _, y in synchronous)
    assert len(batches[1][0]) == np.isfinite(synchronous[1][1][:, 1]).sum()


def test_the_toy_command_reports_its_numbers_and_checks(capsys):
    code = cmogp_paper.main(["async", "--methods", "cmogp", "--steps", "1",
                             "--num-inducing", "4"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == (0 if all(result["checks"].values()) else 1)
    rows = result["methods"]["cmogp"]["rows"]
    assert [(r["t"], r["channel"]) for r in rows][:3] == [(0, 0), (1, 0), (1, 1)]
    assert all(r["nlpd_unseen"] is not None for r in rows)
