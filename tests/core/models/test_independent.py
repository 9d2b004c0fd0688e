"""poam-independent: one POAM per channel behind the multi-channel interface (dual-gp-independent:
one dual GP; a Bernoulli channel's: dual-gp-bernoulli). Each channel is a lone POAM given its
rows, a channel enters at K samples, an update is one transaction over the channels, idle
training refines each channel on its own, and the state file continues exactly."""

import copy

import numpy as np
import pytest
import torch
from gp_reference import fit_stream
from test_multitask import QUERY, channel_stream

from poam_ros.models import METHODS, MappingConfig, NumericalError, load_model, state_io
from poam_ros.models.bernoulli import BernoulliDualGP
from poam_ros.models.dual_gp import DualGP
from poam_ros.models.independent import DualGPChannels, IndependentChannels
from poam_ros.models.poam import POAM
from poam_ros.params import ConfigError
from poam_ros.scalers import MinMaxScaler, StandardScaler

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**changes):
    settings = dict(method="poam-independent", kernel="attentive", num_inducing=25,
                    train_steps=3, batch_size=32, device="cpu", initial_noise_variance=0.1,
                    channel_min_samples=10, seed=3)
    return MappingConfig(**{**settings, **changes})


def sparse_stream(keep=0.3, seed=5):
    """Three batches of two channels, channel 1 measured on about ``keep`` of the rows."""
    batches = channel_stream(3, 40)
    rng = np.random.default_rng(seed)
    for _, y in batches:
        y[rng.uniform(size=len(y)) > keep, 1] = np.nan
    return batches


def test_each_channel_is_a_lone_poam_fed_its_rows():
    """Hyper-parameters trained: channel d's map equals, to the bit, a POAM of the same seed
    given channel d's rows at the same updates, on the scalers the channels share (inputs on
    the pilot's positions, targets on the channel's samples when it entered)."""
    batches = sparse_stream()
    k = int(np.isfinite(batches[0][1][:, 1]).sum()) + 1  # channel 1 enters with batch 2
    model = fit_stream(IndependentChannels(config(channel_min_samples=k), output_dim=2),
                       batches)
    x_scaler = MinMaxScaler().fit(batches[0][0])
    for d, entry in ((0, 1), (1, 2)):
        lone = POAM(config(method="poam"))
        values = np.concatenate([y[:, d] for _, y in batches[:entry]])
        lone.intake.x_scaler = x_scaler
        lone.intake.y_scaler = StandardScaler().fit(values[np.isfinite(values)])
        rows = [(np.vstack([x for x, _ in batches[:entry]]), values)] + [
            (x, y[:, d]) for x, y in batches[entry:]]
        fit_stream(lone, [(x[np.isfinite(y)], y[np.isfinite(y)]) for x, y in rows])
        for ours, theirs in zip(model.predict(QUERY), lone.predict(QUERY)):
            np.testing.assert_array_equal(ours[:, d], theirs)


def test_a_sparse_channel_is_nan_until_it_enters():
    batches = sparse_stream(keep=0.1)
    k = int(np.isfinite(batches[0][1][:, 1]).sum()) + 1
    model = IndependentChannels(config(channel_min_samples=k), output_dim=2)
    report = fit_stream(model, batches[:1]).update()
    mean, std, cov = model.predict(QUERY, covariance=True)
    assert np.isfinite(mean[:, 0]).all() and np.isnan(mean[:, 1]).all()
    assert np.isnan(std[:, 1]).all() and np.isnan(cov[:, 1]).all()
    assert report.skipped
    fit_stream(model, batches[1:])
    mean, std, cov = model.predict(QUERY, covariance=True)
    assert np.isfinite(mean).all() and (std > 0).all()
    np.testing.assert_array_equal(cov, std[:, :, None] * np.eye(2) * std[:, None, :])
    assert model.inducing.shape[0] == sum(c.inducing.shape[0] for c in model.channels)
    np.testing.assert_array_equal(model.channel_correlation(), np.eye(2))


def test_rows_without_any_channel_are_rejected():
    model = IndependentChannels(config(), output_dim=2)
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    report = model.add_data(x, np.array([[1.0, np.nan], [np.nan, np.nan], [np.inf, 2.0]]))
    assert report.accepted == 2 and dict(report.rejected) == {"nonfinite_target": 1}


def test_a_failing_channel_fails_the_whole_update(monkeypatch):
    """Channel 1's kernel returns NaN: NumericalError, both channels' maps and the pending rows
    stay as they were, and the next healthy update takes the rows."""
    batches = channel_stream(2, 40)
    model = fit_stream(IndependentChannels(config(), output_dim=2), batches[:1])
    before = model.predict(QUERY)
    base = model.channels[1].kernel.base_kernel
    healthy = base.forward
    monkeypatch.setattr(base, "forward",
                        lambda x1, x2, **kw: healthy(x1, x2, **kw) * float("nan"))
    model.add_data(*batches[1])
    with pytest.raises(NumericalError):
        model.update()
    assert model.num_pending == 40
    assert [c.num_samples for c in model.channels] == [40, 40]  # channel 0's update undone
    del model.channels[1].kernel.base_kernel.forward  # the restored channel's, healthy again
    for a, b in zip(model.predict(QUERY), before):
        np.testing.assert_array_equal(a, b)
    assert model.update().num_new == 40 and model.num_pending == 0
    assert [c.num_samples for c in model.channels] == [80, 80]


def test_state_round_trip_continues_exactly(tmp_path):
    batches = channel_stream(3, 40, channels=3, missing=0.3)
    model = fit_stream(IndependentChannels(config(), output_dim=3), batches[:2])
    model.save(tmp_path / "map.pt")
    loaded = load_model(tmp_path / "map.pt")
    assert type(loaded) is IndependentChannels and loaded.output_dim == 3
    reports = []
    for m in (model, loaded):
        m.add_data(*batches[2])
        reports.append({**m.update().extra, **m.diagnostics()})
    assert reports[0] == reports[1] and reports[0]["active_channels"] == 3
    for a, b in zip(model.predict(QUERY, covariance=True), loaded.predict(QUERY, covariance=True)):
        assert np.array_equal(a, b)
    assert torch.equal(model.inducing, loaded.inducing)


def test_a_one_channel_state_with_its_buffer_as_a_column_loads_and_continues_exactly(tmp_path):
    """The intake state keeps a one-channel buffer as a vector; a file that keeps it as an
    N × 1 column (as IndependentChannels once saved it) loads the same."""
    batches = channel_stream(3, 40, channels=1)
    model = fit_stream(IndependentChannels(config(), output_dim=1), batches[:2])
    model.save(tmp_path / "map.pt")
    state = state_io.read_state(tmp_path / "map.pt", model.method)
    assert state["buffer_y"].dim() == 1
    state_io.write_state(tmp_path / "column.pt", model.method,
                         {**state, "buffer_y": state["buffer_y"].unsqueeze(-1)})
    loaded = load_model(tmp_path / "column.pt")
    for m in (model, loaded):
        m.add_data(*batches[2])
        m.update()
    for a, b in zip(model.predict(QUERY), loaded.predict(QUERY)):
        assert np.array_equal(a, b)


def test_fixed_inducing_inputs_reach_every_channel():
    """A channel entering late takes the inducing inputs fixed before the first update."""
    fixed = np.random.default_rng(1).uniform(-30, 30, (12, 2))
    batches = sparse_stream(keep=0.1)
    k = int(np.isfinite(batches[0][1][:, 1]).sum()) + 1
    model = fit_stream(IndependentChannels(config(channel_min_samples=k), output_dim=2),
                       batches, fixed)
    np.testing.assert_allclose(model.inducing_inputs, np.vstack([fixed, fixed]), atol=1e-12)


def labelled_stream(keep=0.5, seed=5):
    """:func:`sparse_stream` with channel 1 as class labels: 1 where its value is positive."""
    batches = sparse_stream(keep, seed)
    for _, y in batches:
        measured = np.isfinite(y[:, 1])
        y[measured, 1] = (y[measured, 1] > 0).astype(float)
    return batches


@pytest.mark.parametrize("method, gaussian", [("poam-independent", POAM),
                                              ("dual-gp-independent", DualGP)])
def test_a_bernoulli_channel_is_a_lone_bernoulli_dual_gp_fed_its_labels(method, gaussian):
    """channel_likelihoods [gaussian, bernoulli]: the depth's map is the family's method, the
    class's a lone ``dual-gp-bernoulli`` of the same seed given the class's labels at the same
    updates (its latent, to the bit), on the shared input scaler."""
    batches = labelled_stream()
    model = fit_stream(METHODS[method](
        config(method=method, channel_likelihoods=["gaussian", "bernoulli"]), output_dim=2),
        batches)
    assert [type(c) for c in model.channels] == [gaussian, BernoulliDualGP]
    lone = BernoulliDualGP(config(method="dual-gp-bernoulli"))
    lone.intake.x_scaler = MinMaxScaler().fit(batches[0][0])
    fit_stream(lone, [(x[np.isfinite(y[:, 1])], y[np.isfinite(y[:, 1]), 1])
                      for x, y in batches])
    mean, std = model.predict(QUERY)
    np.testing.assert_array_equal(mean[:, 1], lone.predict(QUERY)[0])
    np.testing.assert_array_equal(std[:, 1], lone.predict(QUERY)[1])
    response = model.predict_response(QUERY)[:, 1]  # P(y = 1), from the latent
    np.testing.assert_allclose(response, lone.predict_proba(QUERY), rtol=1e-12)
    assert np.isnan(model.diagnostics()["noise_1"])  # no noise variance for labels


def test_a_poisson_channel_is_refused():
    with pytest.raises(ConfigError, match="each one of"):
        IndependentChannels(config(channel_likelihoods=["gaussian", "poisson"]), output_dim=2)


def test_idle_training_refines_each_channel_that_refines():
    """refine(steps) is each channel's own refine: the POAM channel moves as a copy of it
    refined alone, the Bernoulli dual GP (which does not refine) stays as it was."""
    batches = labelled_stream()
    model = fit_stream(IndependentChannels(
        config(channel_likelihoods=["gaussian", "bernoulli"]), output_dim=2), batches)
    assert model.refines and [c.refines for c in model.channels] == [True, False]
    depth = copy.deepcopy(model.channels[0])
    before = model.predict(QUERY)
    report = model.refine(4)
    assert report.training_time > 0 and report.training_failure is None
    depth.refine(4)
    mean, std = model.predict(QUERY)
    np.testing.assert_array_equal(mean[:, 0], depth.predict(QUERY)[0])
    assert not np.array_equal(mean[:, 0], before[0][:, 0])
    np.testing.assert_array_equal(mean[:, 1], before[0][:, 1])
    np.testing.assert_array_equal(std[:, 1], before[1][:, 1])


def test_a_dual_gp_map_per_channel_does_not_refine_and_continues_from_its_state(tmp_path):
    batches = labelled_stream()
    settings = config(method="dual-gp-independent", channel_likelihoods=["gaussian", "bernoulli"])
    model = fit_stream(DualGPChannels(settings, output_dim=2), batches[:2])
    assert not model.refines and model.refine(4).training_time == 0.0
    model.save(tmp_path / "map.pt")
    loaded = load_model(tmp_path / "map.pt")
    assert type(loaded) is DualGPChannels
    for m in (model, loaded):
        m.add_data(*batches[2])
        m.update()
    for a, b in zip(model.predict(QUERY, covariance=True), loaded.predict(QUERY, covariance=True)):
        assert np.array_equal(a, b)
