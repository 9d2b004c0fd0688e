"""A survey bag with a binary channel (the simulator's seabed class on /seabed_class, one-point
clouds of labels 0/1) re-maps with ``poam-mt`` and a Bernoulli channel: every label reaches
the model as recorded, the channel is scored as a binary one and the planner is given its
probability."""

from __future__ import annotations

import numpy as np
import pytest

from poam_ros.bags import BagReader
from poam_ros.bags.message_types import MessageTypes
from poam_ros.bags.remap import remap_bag
from poam_ros.bags.sim_survey import write_survey
from poam_ros.mapping.binary import ChannelSpread, class_probability
from poam_ros.mapping.loop import MappingLoop


@pytest.fixture(scope="module")
def binary_bag(tmp_path_factory, make_small_setup):
    setup = make_small_setup()
    setup.seabed_class = setup.seabed_class.replace(enabled=True)
    setup.ingest = setup.ingest.replace(channels=["seabed_class"], channel_rates=[0.5])
    setup.mapping = setup.mapping.replace(method="poam-mt", channel_min_samples=10,
                                          channel_likelihoods=["gaussian", "bernoulli"])
    return setup, write_survey(tmp_path_factory.mktemp("binary") / "survey", setup,
                               legs=((20.0, -20.0),))


def test_the_labels_are_remapped_and_scored_as_a_binary_channel(binary_bag):
    setup, bag = binary_bag
    result = remap_bag(bag, setup)
    types = MessageTypes()
    written = [types.deserialize(m.data, m.msgtype)
               for m in BagReader(bag).messages(["/seabed_class"])]
    assert written and all(cloud.fields[0].name == "seabed_class" for cloud in written)
    labels = result.model.buffer.y[:, 1]
    labels = labels[np.isfinite(labels)]
    assert 0.9 * len(written) <= len(labels) <= len(written)
    assert set(labels) == {0.0, 1.0}
    final = result.records[-1]
    for metric in ("nlpd", "msll", "smse"):
        assert np.isfinite(final.extra[f"{metric}_seabed_class"])
    # the cross-entropy of a probability map lies between a sure hit (0) and a sure miss
    assert 0.0 < final.extra["nlpd_seabed_class"] < 2.0
    points = np.array([[0.0, 0.0], [10.0, -10.0]])
    spread = MappingLoop(result.model).uncertainty(points)
    assert isinstance(spread, ChannelSpread)
    mean, std = result.model.predict(points)
    np.testing.assert_allclose(spread.probability[:, 1], class_probability(mean[:, 1],
                                                                          std[:, 1]))
