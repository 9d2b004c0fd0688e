"""Swath filters: hand-worked cases, and the numpy backend agrees with Open3D's."""

import numpy as np
import pytest

from poam_ros.ingest import cloud_filters as cf


def test_voxel_centroids_by_hand():
    # Min corner (0, 0, 0), voxel 1: voxels start at -0.5, so 0.4 and 0.45 share one and
    # 0.6 starts the next.
    points = np.array([[0.0, 0, 0], [0.4, 0, 0], [0.45, 0, 0], [0.6, 0, 0], [3.0, 0, 0]])
    out = cf.voxel_downsample(points, 1.0, backend="numpy")
    np.testing.assert_allclose(out[np.argsort(out[:, 0])],
                               [[0.85 / 3, 0, 0], [0.6, 0, 0], [3.0, 0, 0]])


def test_an_obvious_outlier_is_removed():
    rng = np.random.default_rng(0)
    points = np.vstack([rng.normal(size=(300, 3)) * [5, 5, 0.2], [[0.0, 0.0, 80.0]]])
    keep = cf.statistical_inliers(points, 10, 2.0, backend="numpy")
    assert not keep[-1] and keep[:-1].mean() > 0.9


def test_bad_arguments():
    with pytest.raises(ValueError, match="backend"):
        cf.resolve_backend("pcl")
    with pytest.raises(ValueError, match="shape"):
        cf.voxel_downsample(np.zeros((3, 2)), 1.0)
    with pytest.raises(ValueError, match="voxel_size"):
        cf.voxel_downsample(np.zeros((3, 3)), 0.0)
    with pytest.raises(ValueError, match="neighbors"):
        cf.statistical_inliers(np.zeros((3, 3)), 0, 2.0)
    assert cf.voxel_downsample(np.empty((0, 3)), 1.0).shape == (0, 3)
    assert cf.statistical_inliers(np.zeros((1, 3)), 5, 2.0).tolist() == [True]


@pytest.fixture
def open3d_backend():
    if cf._open3d() is None:
        pytest.skip("open3d is not installed (pip install open3d; apt-get install "
                    "libusb-1.0-0): the numpy backend is not compared with it")
    return "open3d"


@pytest.mark.parametrize("voxel_size", [0.5, 1.3])
def test_numpy_voxels_equal_open3d(open3d_backend, voxel_size):
    points = _swathy_cloud()
    ours = cf.voxel_downsample(points, voxel_size, backend="numpy")
    theirs = cf.voxel_downsample(points, voxel_size, backend=open3d_backend)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours[np.lexsort(ours.T)], theirs[np.lexsort(theirs.T)],
                               atol=1e-12)


@pytest.mark.parametrize("neighbors, std_ratio", [(2, 1.0), (8, 2.0), (20, 1.5)])
def test_numpy_outliers_equal_open3d(open3d_backend, neighbors, std_ratio):
    points = _swathy_cloud()
    ours = cf.statistical_inliers(points, neighbors, std_ratio, backend="numpy")
    theirs = cf.statistical_inliers(points, neighbors, std_ratio, backend=open3d_backend)
    assert 0 < ours.sum() < len(points)
    np.testing.assert_array_equal(ours, theirs)


def _swathy_cloud():
    """Swath-like strips, scattered outliers and a few exact duplicates."""
    rng = np.random.default_rng(1)
    along = np.repeat(np.arange(40.0), 25)
    across = np.tile(np.linspace(-10, 10, 25), 40)
    strips = np.column_stack([along, across, -50 + rng.normal(0, 0.3, along.size)])
    return np.vstack([strips, rng.uniform(-60, 60, (20, 3)), strips[:5]])
