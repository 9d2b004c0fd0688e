"""Pivoted Cholesky: a correct factorisation, greedy pivots, and its stopping rule."""

import numpy as np
import pytest
import torch

from poam_ros import inducing
from poam_ros.inducing import greedy_pivots, kmeans, pivoted_cholesky


def rbf_matrix(n, lengthscale, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, (n, 2))
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    return np.exp(-0.5 * d2 / lengthscale ** 2)


def test_factor_is_a_pivoted_cholesky_with_greedy_pivots():
    k = rbf_matrix(60, 0.3)
    result = pivoted_cholesky(k, max_rank=25)
    p, factor = result.pivots.numpy(), result.factor.numpy()
    assert len(p) == 25 and len(set(p)) == 25
    # The pivot rows form the lower-triangular Cholesky factor of K[P, P].
    assert np.allclose(np.triu(factor[p], 1), 0.0)
    assert np.allclose(factor[p] @ factor[p].T, k[np.ix_(p, p)], atol=1e-10)
    # The pivot columns are reproduced exactly; elsewhere the residual is the Schur complement.
    assert np.allclose(factor @ factor[p].T, k[:, p], atol=1e-10)
    residual = np.diag(k - factor @ factor.T)
    assert residual.min() > -1e-10
    assert np.isclose(result.trace_error, residual.sum(), atol=1e-8)
    # Greedy: each pivot had the largest residual variance when it was chosen.
    for step in range(25):
        partial = factor[:, :step]
        remaining = np.diag(k) - (partial ** 2).sum(1)
        remaining[p[:step]] = -np.inf
        assert p[step] == np.argmax(remaining)


def test_full_rank_reproduces_matrix():
    a = np.random.default_rng(1).normal(size=(12, 12))
    k = a @ a.T + 0.1 * np.eye(12)
    factor = pivoted_cholesky(k, max_rank=12).factor.numpy()
    assert np.allclose(factor @ factor.T, k, atol=1e-10)


@pytest.mark.parametrize("rel_tol", [1e-2, 1e-4, 1e-6])
def test_stops_at_trace_tolerance(rel_tol):
    k = rbf_matrix(300, 0.5)
    result = pivoted_cholesky(k, max_rank=300, rel_tol=rel_tol)
    rank = len(result.pivots)
    assert rank < 300
    assert result.trace_error <= rel_tol * result.trace
    # One pivot fewer would not have met the tolerance.
    partial = result.factor[:, :rank - 1].numpy()
    assert np.trace(k) - (partial ** 2).sum() > rel_tol * result.trace


def test_duplicates_are_never_chosen_twice():
    k = rbf_matrix(20, 0.4)
    doubled = np.block([[k, k], [k, k]])
    result = pivoted_cholesky(doubled, max_rank=40)
    assert len(set((result.pivots % 20).tolist())) == len(result.pivots)


def test_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        pivoted_cholesky(np.ones((3, 4)), 2)


def columns_of(k):
    k = torch.as_tensor(k)
    return k.diagonal(), lambda i: k[:, i]


@pytest.mark.parametrize("n, rank, tol", [(150, 40, 0.0), (150, 150, 1e-5), (90, 60, 1e-3)])
def test_column_algorithm_returns_the_dense_pivots(n, rank, tol):
    """greedy_pivots, which reads only the chosen columns, against LAPACK's factorisation of
    the whole matrix (the dense selection), on random continuous inputs."""
    k = rbf_matrix(n, 0.2, seed=3)
    dense = pivoted_cholesky(k, rank, tol)
    assert n <= inducing.BLOCKED_RATIO * rank  # the dense call took the LAPACK route
    chunked = greedy_pivots(*columns_of(k), rank, tol)
    assert torch.equal(dense.pivots, chunked.pivots)
    assert torch.allclose(dense.factor, chunked.factor, atol=1e-9)
    assert np.isclose(dense.trace_error, chunked.trace_error, atol=1e-8)


def test_ties_go_to_the_lowest_index():
    k = rbf_matrix(30, 0.3)  # unit diagonal: every candidate ties for the first pivot
    assert int(greedy_pivots(*columns_of(k), 5).pivots[0]) == 0
    assert int(pivoted_cholesky(k, 10).pivots[0]) == 0


def test_forced_prefix_comes_first_then_greedy():
    k = rbf_matrix(80, 0.25, seed=4)
    result = greedy_pivots(*columns_of(k), 20, forced=6)
    p, factor = result.pivots.numpy(), result.factor.numpy()
    assert list(p[:6]) == list(range(6))
    for step in range(6, 20):  # each later pivot had the largest residual when chosen
        remaining = np.diag(k) - (factor[:, :step] ** 2).sum(1)
        remaining[p[:step]] = -np.inf
        assert p[step] == np.argmax(remaining)
    assert np.allclose(factor @ factor[p].T, k[:, p], atol=1e-10)


def test_forced_candidate_without_residual_variance_is_skipped():
    k = rbf_matrix(10, 0.4)
    doubled = np.block([[k, k], [k, k]])  # candidate i + 10 repeats candidate i
    order = np.r_[0, 10, 1:10, 11:20]  # the duplicate of 0 forced second
    result = greedy_pivots(*columns_of(doubled[np.ix_(order, order)]), 5, forced=3)
    assert result.pivots.tolist()[:2] == [0, 2]


def test_absolute_tolerance_stops_at_the_first_pivot_meeting_it():
    k = rbf_matrix(200, 0.5)
    result = greedy_pivots(*columns_of(k), 200, abs_tol=1e-3)
    assert result.trace_error <= 1e-3
    partial = result.factor[:, :-1].numpy()
    assert np.trace(k) - (partial ** 2).sum() > 1e-3
    assert torch.equal(pivoted_cholesky(k, 200, abs_tol=1e-3).pivots, result.pivots)


def test_callback_sees_each_pivot_and_may_stop():
    k = rbf_matrix(100, 0.3)
    seen = []

    def on_pivot(step):
        seen.append((step.rank, step.pivot, step.trace_error))
        assert np.isclose(step.trace_error, float(step.residual.sum()))
        return step.trace_error < 0.5 * step.trace

    result = greedy_pivots(*columns_of(k), 100, on_pivot=on_pivot)
    assert [s[1] for s in seen] == result.pivots.tolist()
    assert [s[0] for s in seen] == list(range(1, len(seen) + 1))
    assert seen[-1][2] < 0.5 * np.trace(k) <= seen[-2][2]  # stopped at the first that met it


def one_at_a_time(k, rank, **kwargs):
    """The reference: a host callback that never stops makes every block a single pivot."""
    return greedy_pivots(*columns_of(k), rank, on_pivot=lambda step: False, **kwargs)


@pytest.mark.parametrize("forced, rank", [(12, 40), (40, 40), (30, 25)])
def test_forced_prefix_at_once_equals_it_one_pivot_at_a_time(forced, rank):
    """The forced prefix from one Cholesky of its columns' leading square: the same pivots,
    factor and trace error as the column-by-column recursion (and the cap inside it)."""
    k = rbf_matrix(90, 0.3, seed=5)
    blocked = greedy_pivots(*columns_of(k), rank, 1e-4, forced=forced)
    reference = one_at_a_time(k, rank, rel_tol=1e-4, forced=forced)
    assert torch.equal(blocked.pivots, reference.pivots)
    assert torch.allclose(blocked.factor, reference.factor, atol=1e-12)
    assert np.isclose(blocked.trace_error, reference.trace_error, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("last", [0, 1, 2, 3, 5, 6, 7, 20, 36])
def test_block_rule_stops_after_the_first_pivot_it_holds_for(last):
    """``on_block`` sees blocks of 1, 2, 4, … pivots not yet read (after the forced prefix,
    one block); the selection keeps the pivots up to the first flagged one, whether it is the
    first, inside a block, or a block's last, and computes the rest of its block only."""
    k = rbf_matrix(80, 0.3, seed=6)
    seen = []

    def rule(block):
        seen.append((block.start, block.end))
        assert block.errors.shape == block.pivots.shape == (60,)
        return torch.arange(block.start, block.end) >= last

    result = greedy_pivots(*columns_of(k), 60, forced=3, on_block=rule)
    reference = one_at_a_time(k, 60, forced=3)
    assert torch.equal(result.pivots, reference.pivots[:last + 1])
    assert torch.allclose(result.factor, reference.factor[:, :last + 1], atol=1e-12)
    expected = float(np.trace(k) - (reference.factor[:, :last + 1].numpy() ** 2).sum())
    assert np.isclose(result.trace_error, expected, atol=1e-9)
    starts = [0, 3, 4, 6, 10, 18, 34, 50]
    assert seen == [(a, b) for a, b in zip(starts, starts[1:])][:len(seen)]
    assert seen[-1][0] <= last < seen[-1][1]


def test_reads_the_device_once_per_block():
    """Counted on CPU tensors (the GPU's code path): a forced prefix of any length is one read,
    greedy pivots one read per block of at most ``PIVOT_BLOCK``."""
    from poam_ros.benchmark.dispatch import DispatchCounter

    k = torch.as_tensor(rbf_matrix(200, 0.2, seed=7))
    syncs = []
    for forced in (10, 100):
        with DispatchCounter() as counter:
            result = greedy_pivots(k.diagonal(), lambda i: k.index_select(1, i), forced + 40,
                                   forced=forced, on_block=lambda b: b.errors[b.start:b.end] < 0)
        assert len(result.pivots) == forced + 40
        syncs.append(counter.syncs)
    # One read of tr K, one of the prefix, blocks of 1, 2, 4, 8, 16, 9 greedy pivots.
    assert syncs == [8, 8] and inducing.PIVOT_BLOCK == 16


def test_kmeans_assignment_in_chunks_changes_nothing(monkeypatch):
    points = np.random.default_rng(2).uniform(-1, 1, (500, 2))
    whole = kmeans(points, 12, 50, np.random.default_rng(0))
    monkeypatch.setattr(inducing, "ASSIGN_ELEMENTS", 48)  # two points a chunk
    assert np.array_equal(whole, kmeans(points, 12, 50, np.random.default_rng(0)))


def test_kmeans_finds_separated_clusters_and_repeats_with_the_seed():
    rng = np.random.default_rng(0)
    centres = np.array([[-5.0, -5.0], [0.0, 6.0], [7.0, -1.0]])
    points = np.vstack([c + rng.normal(0, 0.3, (40, 2)) for c in centres])
    found = kmeans(points, 3, 100, np.random.default_rng(1))
    assert np.allclose(np.sort(found, axis=0), np.sort(centres, axis=0), atol=0.2)
    assert np.array_equal(found, kmeans(points, 3, 100, np.random.default_rng(1)))
    labels = ((points[:, None] - found[None]) ** 2).sum(-1).argmin(1)
    for j in range(3):  # converged: every centroid is the mean of its points
        assert np.allclose(found[j], points[labels == j].mean(0))


def test_kmeans_never_returns_more_centroids_than_distinct_points():
    points = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0]]), 5, axis=0)
    found = kmeans(points, 4, 10, np.random.default_rng(0))
    assert len(found) == 2 and len(np.unique(found, axis=0)) == 2
