"""A mapper with a binary channel that crashes: its autosave and the journal's tail after it
bring back the class, labels and Bernoulli likelihood included, to the map it would have had."""

import numpy as np

from poam_ros.mapping.binary import binary_channels
from poam_ros.mapping.journal import JournalConfig
from poam_ros.mapping.loop import MappingLoop
from poam_ros.mapping.map_grid import MapGrid
from poam_ros.mapping.persistence import MapPersistence
from poam_ros.models import MappingConfig

CONFIG = MappingConfig(method="poam-mt", num_inducing=15, train_steps=1, device="cpu",
                       channel_min_samples=10, channel_likelihoods=["gaussian", "bernoulli"])
CHANNELS = ("seabed_class",)


def batch(seed, n=60):
    xy = np.random.default_rng(seed).uniform(0.0, 10.0, (n, 2))
    depth = np.sin(xy[:, 0] / 2.0) + xy[:, 1] / 5.0
    label = np.where(np.arange(n) % 2 == 0, (depth > 1.0).astype(float), np.nan)
    return xy, np.column_stack([depth, label])


def persistence(tmp_path):
    config = JournalConfig(path=str(tmp_path / "j"), autosave_period=0.0, autosave_updates=1)
    return MapPersistence(config, str(tmp_path / "map.pt"), CHANNELS)


def test_a_crashed_mapper_restores_the_class_channel(tmp_path):
    first = persistence(tmp_path)
    loop = MappingLoop(first.open(CONFIG).model)
    first.append(*batch(0), stamp=1)
    checkpoint = first.checkpoint()
    loop.step([batch(0)])
    first.updated()
    assert first.autosave(loop.model, checkpoint) is not None
    first.append(*batch(1), stamp=2)  # journaled, then the process dies before its update
    first.journal.close()

    opened = persistence(tmp_path).open(CONFIG)
    assert opened.loaded and list(binary_channels(opened.model)) == [False, True]
    restored = MappingLoop(opened.model)
    xy, y, _ = opened.replay
    restored.step([(xy, y)])
    loop.step([batch(1)])  # the mapper that did not crash
    labels = restored.model.buffer.y[:, 1]
    assert set(labels[np.isfinite(labels)]) == {0.0, 1.0}
    np.testing.assert_array_equal(restored.model.buffer.y, loop.model.buffer.y)
    grid = MapGrid((0.0, 10.0, 0.0, 10.0), 2.0)
    live, again = loop.layers(grid), restored.layers(grid)
    np.testing.assert_allclose(again.channel_means, live.channel_means, atol=1e-9)
    np.testing.assert_allclose(again.channel_stds, live.channel_stds, atol=1e-9)
