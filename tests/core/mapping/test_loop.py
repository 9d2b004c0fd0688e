"""The mapping loop's failure rule: a failed update never poisons the queue, and samples far
outside the workspace never reach the model's scaler."""

import numpy as np
import pytest

from poam_ros.mapping.loop import MAX_SPLITS, OUTSIDE_WORKSPACE, MappingLoop
from poam_ros.models import MappingConfig, NumericalError, make_model
from poam_ros.models.samples import UPDATE_FAILED
from poam_ros.workspace import Workspace

POISON = 1e9  # a target that makes the patched model's E-step fail, in any batch holding it


def batch(rng, n, poison_first=False):
    xy = rng.uniform(-30, 30, (n, 2))
    z = np.sin(xy[:, 0] / 7) + np.cos(xy[:, 1] / 9)
    if poison_first:
        z[0] = POISON
    return xy, z


@pytest.fixture
def model(monkeypatch):
    """A small POAM whose E-step fails whenever its batch holds a POISON target (as a
    NumericalError would that no retry fixes), counting its tries."""
    model = make_model(MappingConfig(num_inducing=40, train_steps=2, batch_size=32))
    model.tries = []
    update_posterior = model._update_posterior

    def failing(x_new, y_new, report):
        model.tries.append(len(y_new))
        if (model.y_scaler.inverse_mean(y_new.numpy()) > POISON / 2).any():
            raise NumericalError("I + A: Cholesky failed (injected)")
        return update_posterior(x_new, y_new, report)
    monkeypatch.setattr(model, "_update_posterior", failing)
    return model


def test_a_batch_whose_update_cannot_succeed_is_set_aside_and_later_ones_are_mapped(model):
    rng = np.random.default_rng(0)
    loop = MappingLoop(model)
    assert loop.step([batch(rng, 100)]).failure is None
    inducing = model.inducing.clone()
    step = loop.step([batch(rng, 64, poison_first=True)])
    assert step.failure.startswith("I + A: Cholesky failed") and step.set_aside == 64
    assert "64 new samples set aside" in step.recovery
    assert model.tries[1:] == [64, 32, 16, 8, 4][:MAX_SPLITS + 1]
    assert (model.inducing == inducing).all() and model.num_pending == 0
    assert model.rejections[UPDATE_FAILED] == 64 and model.num_samples == 100
    step = loop.step([batch(rng, 50)])  # the queue is clear: the next batch is mapped
    assert step.failure is None and step.report.num_new == 50 and model.num_samples == 150


def test_a_split_that_succeeds_maps_the_oldest_part_and_the_rest_follows(model):
    rng = np.random.default_rng(1)
    loop = MappingLoop(model)
    loop.step([batch(rng, 100)])
    good = batch(rng, 40)
    step = loop.step([good, batch(rng, 40, poison_first=True)])
    assert step.failure is None and step.report.num_new == 40  # the oldest half: the good one
    assert "the oldest 40 were mapped, 40 wait" in step.recovery
    step = loop.step([])  # the poisoned half alone: set aside, nothing else lost
    assert step.set_aside == 40 and model.num_samples == 140 and model.num_pending == 0


def test_a_batch_too_large_for_the_method_is_split_not_dropped():
    model = make_model(MappingConfig(method="ssgp++", num_inducing=30, train_steps=1,
                                     batch_size=32, max_whole_batch=100))
    rng = np.random.default_rng(2)
    step = MappingLoop(model).step([batch(rng, 300)])
    assert step.failure is None and step.report.num_new == 75 and model.num_pending == 225
    assert "takes at most 100 new samples" in step.recovery
    while model.num_pending:
        assert MappingLoop(model).step([]).failure is None
    assert model.num_samples == 300 and model.rejections[UPDATE_FAILED] == 0


def test_samples_outside_the_workspace_are_refused_before_the_scaler_sees_them():
    workspace = Workspace.from_extent(-30, 30, -30, 30)
    rng = np.random.default_rng(3)
    xy, z = batch(rng, 200)
    xy[7] = [100_000.0, 5.0]  # one sample 100 km away, in the first batch
    model = make_model(MappingConfig(num_inducing=40, train_steps=1, batch_size=32))
    MappingLoop(model, workspace=workspace).step([(xy, z)])
    assert model.rejections[OUTSIDE_WORKSPACE] == 1 and model.num_samples == 199
    assert np.abs(model.x_scaler.transform(xy[:5])).max() <= 1.0
    assert model.x_scaler.inverse(np.array([[1.0, 1.0]]))[0, 0] < 30.0


def test_set_aside_samples_leave_the_duplicate_index_consistent():
    rng = np.random.default_rng(4)
    model = make_model(MappingConfig(num_inducing=20, train_steps=0))
    first, second, third = batch(rng, 30), batch(rng, 20), batch(rng, 10)
    model.add_data(*first)
    model.update()
    model.add_data(*second)
    model.add_data(*third)
    assert model.update(max_new=20).num_new == 20 and model.num_pending == 10
    assert model.set_aside_pending() == 10
    model.add_data(*second)  # still known: every one a duplicate
    assert model.num_pending == 0
    report = model.add_data(*third)  # set aside, so new again
    assert report.accepted == 10 and model.num_samples == 60
    np.testing.assert_array_equal(model.buffer.x[50:], third[0])


def test_an_epoch_without_new_samples_records_the_model_s_inducing_inputs():
    """An epoch with nothing new (an empty batch, or every sample refused) keeps the map it
    had: its record gives that map's M, not 0 (the sweep's curve of M would drop to 0)."""
    loop = MappingLoop(make_model(MappingConfig(num_inducing=40, train_steps=1)))
    rng = np.random.default_rng(3)
    first = loop.record(0, loop.step([batch(rng, 60)]), sim_time=1.0)
    empty = loop.record(1, loop.step([(np.empty((0, 2)), np.empty(0))]), sim_time=2.0)
    assert first.num_inducing == empty.num_inducing == loop.model.inducing.shape[0] > 0


def test_a_step_reports_the_learned_noise_in_the_targets_units(model):
    rng = np.random.default_rng(3)
    loop = MappingLoop(model)
    xy, z = batch(rng, 100)
    report = loop.step([(xy, 50.0 * z)]).report
    noise = model.noise.item()
    assert report.extra["noise"] == noise
    assert report.extra["noise_std"] == pytest.approx(np.sqrt(noise) * model.y_scaler.std)
    assert model.y_scaler.std == pytest.approx(50.0 * z.std())
    split = loop.step([batch(rng, 40), batch(rng, 40, poison_first=True)])  # the oldest half
    assert split.failure is None and split.report.extra["noise"] == model.noise.item()
    assert "noise" not in loop.step([]).report.extra  # nothing new: no update, no figures


def track(n, length=60.0):
    """A first batch that is a short straight stretch of track along x, at y = 1,000 m."""
    xy = np.c_[np.linspace(1_000.0, 1_000.0 + length, n), np.full(n, 1_000.0)]
    return xy, np.sin(xy[:, 0] / 3_000)


SURVEY = Workspace.from_extent(0.0, 20_000.0, 0.0, 20_000.0)


@pytest.mark.parametrize("mode, spans_workspace", [
    ("auto", True), ("workspace", True), ("first_batch", False)])
def test_a_first_batch_of_a_short_track_scales_inputs_as_the_mode_says(mode, spans_workspace,
                                                                       caplog):
    model = make_model(MappingConfig(num_inducing=20, train_steps=1, input_scaling=mode))
    MappingLoop(model, workspace=SURVEY).step([track(30)])
    corners = model.x_scaler.inverse(np.array([[-1.0, -1.0], [1.0, 1.0]]))
    if spans_workspace:
        assert np.allclose(corners, [[0.0, 0.0], [20_000.0, 20_000.0]])
    else:  # the track's 60 m, and a unit half-range across it
        assert np.allclose(corners, [[1_000.0, 999.0], [1_060.0, 1_001.0]])
    warned = [r.getMessage() for r in caplog.records if "input scaling" in r.getMessage()]
    assert warned == ([] if mode != "auto" else [
        "the first update's 30 samples span 60 m x 0 m of the workspace's 2e+04 m x 2e+04 m: "
        "the input scaling spans the workspace (mapping.input_scaling: auto)"])


def test_auto_keeps_the_samples_range_when_they_span_half_the_workspace_or_more():
    rng = np.random.default_rng(5)
    xy = rng.uniform(4_000.0, 16_000.0, (200, 2))  # 12 km of the 20 km on each axis
    model = make_model(MappingConfig(num_inducing=20, train_steps=1))
    MappingLoop(model, workspace=SURVEY).step([(xy, np.sin(xy[:, 0] / 3_000))])
    assert np.array_equal(model.x_scaler.low, xy.min(0))
    assert np.array_equal(model.x_scaler.high, xy.max(0))


def test_a_short_first_track_maps_a_kilometre_survey_as_a_wide_first_batch_does():
    """Scaled by a 60 m track, the lengthscales (bounded in scaled units) are metres and the
    map of a 20 km field between the samples is lost; spanning the workspace keeps it."""
    def field(xy):
        return 300 * np.sin(xy[:, 0] / 3_000) * np.cos(xy[:, 1] / 2_500)

    def error(mode, first):
        rng = np.random.default_rng(6)
        model = make_model(MappingConfig(num_inducing=100, train_steps=5, input_scaling=mode))
        loop = MappingLoop(model, workspace=SURVEY)
        loop.step([(first, field(first))])
        for _ in range(4):
            xy = rng.uniform(0.0, 20_000.0, (200, 2))
            loop.step([(xy, field(xy) + rng.normal(0.0, 1.0, 200))])
        test = rng.uniform(0.0, 20_000.0, (1_000, 2))
        return np.sqrt(np.mean((loop.evaluation(test)[0] - field(test)) ** 2))

    short = track(30)[0]
    wide = np.random.default_rng(7).uniform(0.0, 20_000.0, (200, 2))
    assert error("first_batch", short) > 5 * error("auto", short)
    assert error("auto", short) < 2 * error("first_batch", wide)


def test_a_snapshot_keeps_its_map_while_the_loop_updates_on():
    """What the mapper serves beside its worker: a copy, which a later step leaves as it was."""
    rng = np.random.default_rng(3)
    loop = MappingLoop(make_model(MappingConfig(num_inducing=20, train_steps=1,
                                                batch_size=32)))
    loop.step([batch(rng, 50)])
    snapshot = loop.snapshot()
    points = rng.uniform(-30, 30, (7, 2))
    before = snapshot.uncertainty(points)
    np.testing.assert_array_equal(before, loop.uncertainty(points))
    loop.step([batch(rng, 50)])
    assert snapshot.model is not loop.model
    assert (snapshot.model.num_samples, loop.model.num_samples) == (50, 100)
    np.testing.assert_array_equal(snapshot.uncertainty(points), before)


def idle_models(idle_steps):
    config = MappingConfig(num_inducing=40, train_steps=2, batch_size=32, idle_steps=idle_steps)
    return make_model(config)


def same_maps(a, b):
    query = np.random.default_rng(9).uniform(-30, 30, (200, 2))
    return all(np.array_equal(x, y) for x, y in zip(a.predict(query), b.predict(query)))


def test_the_idle_steps_due_after_an_update_run_before_the_next_and_are_recorded():
    rng = np.random.default_rng(3)
    batches = [batch(rng, 80), batch(rng, 40)]
    idled, by_hand = MappingLoop(idle_models(6)), MappingLoop(idle_models(0))
    for loop in (idled, by_hand):
        loop.step([batches[0]])
    assert idled.idle_due == 6 and by_hand.idle_due == 0
    by_hand.model.refine(6)  # what the ROS-free routes run in the vehicle's leg
    steps = [loop.step([batches[1]]) for loop in (idled, by_hand)]
    assert same_maps(idled.model, by_hand.model)
    assert steps[0].idle_steps == 6 and steps[0].idle_time > 0 and steps[1].idle_steps == 0
    record = idled.record(1, steps[0], 0.0)
    assert record.extra["idle_steps"] == 6 and "idle_steps" not in by_hand.record(
        1, steps[1], 0.0).extra


def test_a_node_runs_idle_steps_in_rounds_and_a_batch_forgoes_the_rest():
    rng = np.random.default_rng(4)
    batches = [batch(rng, 80), batch(rng, 40)]
    rounds, whole, none = (MappingLoop(idle_models(6)) for _ in range(3))
    for loop in (rounds, whole, none):
        loop.step([batches[0]])
    rounds.idle(2)
    rounds.idle(2)  # four of six run: a batch comes
    assert rounds.idle_due == 2
    whole.model.refine(4)
    rounds.step([batches[1]], idle=False)
    whole.step([batches[1]], idle=False)
    assert same_maps(rounds.model, whole.model)
    none.step([batches[1]], idle=False)
    assert not same_maps(none.model, whole.model)
    assert rounds.idle_due == 6  # due again after this update


def test_nothing_is_due_for_a_method_that_does_not_refine_nor_after_an_empty_step():
    rng = np.random.default_rng(5)
    loop = MappingLoop(make_model(MappingConfig(method="ssgp++", kernel="rbf", num_inducing=40,
                                                train_steps=2, idle_steps=6)))
    loop.step([batch(rng, 80)])
    assert loop.idle_due == 6
    assert loop.idle(2).training_time == 0 and loop.idle_due == 0
    poam = MappingLoop(idle_models(6))
    poam.step([batch(rng, 80)])
    poam.step([])  # nothing new: the idle steps ran, none is due until samples come
    assert poam.idle_due == 0
