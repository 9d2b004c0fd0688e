"""VIPS's stopping rule evaluated on the device a block of pivots at a time against the rule
applied after each pivot on the host, and the host reads of a whole update."""

import math

import numpy as np
import pytest
import torch

from poam_ros.benchmark.dispatch import count_update
from poam_ros.inducing import greedy_pivots
from poam_ros.models import MappingConfig
from poam_ros.models.vips import grow_by_bound
from poam_ros.models.vips_bound import BoundSite, IncrementalBound

pytestmark = pytest.mark.usefixtures("single_thread")

NUM_OLD, NUM_NEW, RANK = 8, 40, 30


def problem(seed, with_site, distinct=NUM_NEW, repeat_old=False):
    """An RBF kernel matrix over [Z_o; X] (X of ``distinct`` points, repeated up to
    ``NUM_NEW``; Z_o's 4th point the same as its 2nd if ``repeat_old``), targets, and the
    bound's inputs."""
    rng = np.random.default_rng(seed)
    new = rng.uniform(-1, 1, (distinct, 2))
    old = rng.uniform(-1, 1, (NUM_OLD, 2))
    if repeat_old:
        old[3] = old[1]
    x = np.vstack([old, np.resize(new, (NUM_NEW, 2))])
    k = torch.as_tensor(np.exp(-0.5 * ((x[:, None] - x[None]) ** 2).sum(-1) / 0.3 ** 2))
    y = torch.as_tensor(rng.normal(size=NUM_NEW))
    site = None
    if with_site:
        half = torch.as_tensor(rng.normal(size=(NUM_OLD, NUM_OLD)))
        site = BoundSite(half / math.sqrt(NUM_OLD), torch.as_tensor(rng.normal(size=NUM_OLD)),
                         torch.tensor(-3.0, dtype=torch.float64))
    return k, y, site


def fresh_bound(y, site):
    return IncrementalBound(NUM_OLD, y, torch.tensor(0.1, dtype=torch.float64),
                            torch.tensor(1.0, dtype=torch.float64), site, RANK)


def per_pivot(k, y, site, best, threshold, rel_tol=0.0):
    """The rule on the host after each pivot: count kept, L̂ after each pivot taken, surplus."""
    bound = fresh_bound(y, site)
    values, surplus = [], []

    def on_pivot(step):
        before = float(bound.value)
        values.append(float(bound.add(step.column)))
        if step.pivot < NUM_OLD:
            return False
        if best - before <= threshold and bound.count > 1:
            surplus.append(step)
            return True
        return best - values[-1] <= threshold

    pcd = greedy_pivots(k.diagonal(), lambda i: k[:, i], RANK, rel_tol, forced=NUM_OLD,
                        on_pivot=on_pivot)
    return pcd, values, bool(surplus)


def blocked(k, y, site, best, threshold, rel_tol=0.0):
    bound = fresh_bound(y, site)
    pcd, stop = grow_by_bound(
        lambda rule: greedy_pivots(k.diagonal(), lambda i: k[:, i], RANK, rel_tol,
                                   forced=NUM_OLD, on_block=rule),
        bound, best, threshold, NUM_OLD)
    return pcd, stop, bound


def gaps_of_the_whole_order(k, y, site):
    """L* (the bound at the cap, as a stand-in) and L* − L̂ after each pivot, never stopped."""
    _, values, _ = per_pivot(k, y, site, best=0.0, threshold=-math.inf)
    best = values[-1]
    return best, [best - v for v in values]


def threshold_at(gaps, new_pivot):
    """A threshold met first at the ``new_pivot``-th new point (1-based), by a margin."""
    j = NUM_OLD + new_pivot - 1
    return 0.5 * (gaps[j] + gaps[j - 1])


@pytest.mark.parametrize("with_site", [False, True])
@pytest.mark.parametrize("case", ["first new", "inside a block", "a block's last", "never",
                                  "trace tolerance", "surplus", "round-off floor",
                                  "repeated old point"])
def test_blocked_rule_keeps_what_the_per_pivot_rule_keeps(case, with_site):
    """New pivots come in blocks of 1, 2, 4, 8 after Z_o: the 1st, the 5th (inside the block
    of the 4th-7th) and the 7th (its last) end the selection; never (the cap binds); the
    trace tolerance first; Z_o alone meeting the rule (its first new pivot is dropped);
    repeated points leaving no variance above round-off before the cap; and an old point
    without variance left, skipped (the forced prefix then goes one pivot at a time)."""
    k, y, site = problem(seed=11, with_site=with_site,
                         distinct=5 if case == "round-off floor" else NUM_NEW,
                         repeat_old=case == "repeated old point")
    best, gaps = gaps_of_the_whole_order(k, y, site)
    assert all(a > b for a, b in zip(gaps, gaps[1:]))  # the thresholds below separate pivots
    threshold, rel_tol, kept = {
        "first new": lambda: (threshold_at(gaps, 1), 0.0, NUM_OLD + 1),
        "inside a block": lambda: (threshold_at(gaps, 5), 0.0, NUM_OLD + 5),
        "a block's last": lambda: (threshold_at(gaps, 7), 0.0, NUM_OLD + 7),
        "never": lambda: (-1.0, 0.0, RANK),
        "trace tolerance": lambda: (-1.0, 0.05, None),
        "surplus": lambda: (gaps[NUM_OLD - 1] + 1e-3, 0.0, NUM_OLD),
        "round-off floor": lambda: (-1.0, 0.0, NUM_OLD + 5),
        "repeated old point": lambda: (threshold_at(gaps, 3), 0.0, NUM_OLD + 3),
    }[case]()
    ref, values, surplus = per_pivot(k, y, site, best, threshold, rel_tol)
    pcd, stop, bound = blocked(k, y, site, best, threshold, rel_tol)
    count = len(ref.pivots) - surplus
    if kept is not None:
        assert count == kept
    else:
        assert NUM_OLD < count < RANK and ref.trace_error <= rel_tol * ref.trace
    assert surplus == (case == "surplus")
    assert torch.equal(pcd.pivots, ref.pivots) and stop.count == count
    assert stop.added == int((ref.pivots[:count] >= NUM_OLD).sum())
    assert (3 in ref.pivots) == (case != "repeated old point")
    assert np.isclose(stop.gap, best - values[count - 1], rtol=1e-10, atol=1e-10)
    assert np.allclose(bound.history[1:len(values) + 1].numpy(), values, rtol=1e-10, atol=1e-10)
    assert np.isclose(pcd.trace_error, ref.trace_error, rtol=1e-10, atol=1e-12)
    if surplus:
        square = float(ref.factor[:, -1].square().sum())
        assert np.isclose(stop.surplus_square, square, rtol=1e-10)
    else:
        assert stop.surplus_square is None


@pytest.mark.parametrize("method", ["vips", "poam-vips"])
def test_an_update_reads_the_device_as_often_whatever_the_number_of_pivots(method):
    """On a GPU's code path (counted on CPU tensors) one update of 60 samples after 1,000,
    with 50 or 100 old inducing inputs forced first, reads the device the same few times
    (it read each pivot's numbers several times: hundreds of waits)."""
    syncs = [count_update(MappingConfig(method=method, num_inducing=cap, train_steps=5),
                          num_samples=1000, batch=60)["syncs"] for cap in (50, 100)]
    assert syncs[0] == syncs[1] <= 30
