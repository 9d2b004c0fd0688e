"""Point-cloud filters for multibeam swaths: voxel down-sampling and statistical outliers.

Each filter has two implementations that give the same result: Open3D's (``open3d``, the
reference, used when it is installed) and a numpy/scipy one (``numpy``) for machines
without it. Open3D is an optional dependency (``pip install open3d``; on Debian it also
needs ``libusb-1.0-0``); it takes seconds to import, so it is imported on first use.

Points are (N, 3) float arrays in metres, any frame.
"""

from __future__ import annotations

import functools
import importlib

import numpy as np
from scipy.spatial import cKDTree

BACKENDS = ("auto", "open3d", "numpy")


@functools.lru_cache(maxsize=1)
def _open3d():
    """The open3d module, or None where it is not installed (or fails to load)."""
    try:
        return importlib.import_module("open3d")
    except (ImportError, OSError):
        return None


def resolve_backend(backend: str) -> str:
    """``open3d`` or ``numpy`` for a requested backend; ``auto`` prefers Open3D.

    Raises:
        ValueError: an unknown backend, or ``open3d`` where it cannot be imported.
    """
    if backend not in BACKENDS:
        raise ValueError(f"filter backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numpy":
        return "numpy"
    if _open3d() is None:
        if backend == "open3d":
            raise ValueError("filter backend 'open3d' requested, but open3d cannot be "
                             "imported (pip install open3d; apt-get install libusb-1.0-0)")
        return "numpy"
    return "open3d"


def voxel_downsample(points: np.ndarray, voxel_size: float, backend: str = "auto"
                     ) -> np.ndarray:
    """One point per occupied voxel, the centroid of the points in it: (M, 3), M <= N.

    Voxels are cubes of side ``voxel_size`` m anchored half a voxel below the cloud's
    minimum corner, as Open3D's ``voxel_down_sample`` places them. Output order is
    unspecified (Open3D's is a hash order; the numpy one sorts by voxel index).
    """
    points = _points(points)
    if not voxel_size > 0:
        raise ValueError(f"voxel_size must be > 0, got {voxel_size}")
    if len(points) == 0:
        return points.copy()
    if resolve_backend(backend) == "open3d":
        o3d = _open3d()
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
        return np.asarray(cloud.voxel_down_sample(voxel_size).points)
    origin = points.min(axis=0) - 0.5 * voxel_size
    cells = np.floor((points - origin) / voxel_size).astype(np.int64)
    _, inverse, counts = np.unique(cells, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    sums = np.zeros((len(counts), 3))
    np.add.at(sums, inverse, points)
    return sums / counts[:, None]


def statistical_inliers(points: np.ndarray, neighbors: int, std_ratio: float,
                        backend: str = "auto") -> np.ndarray:
    """Which points (N,) bool are not statistical outliers.

    For each point, d = mean distance to its ``neighbors`` nearest points (the point
    itself included, as Open3D counts it). A point is kept when ``0 < d < mean(d) +
    std_ratio * std(d)`` (std with Bessel's correction; the mean and std over the points
    with d > 0, the mean divided by all N as Open3D does). Open3D's rule also drops a
    point whose neighbours all coincide with it (d = 0); both backends keep that rule.
    """
    points = _points(points)
    if neighbors < 1 or not std_ratio > 0:
        raise ValueError(f"neighbors must be >= 1 and std_ratio > 0, got {neighbors}, "
                         f"{std_ratio}")
    if len(points) < 2:
        return np.ones(len(points), dtype=bool)
    if resolve_backend(backend) == "open3d":
        o3d = _open3d()
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
        _, kept = cloud.remove_statistical_outlier(int(neighbors), float(std_ratio))
        mask = np.zeros(len(points), dtype=bool)
        mask[np.asarray(kept, dtype=np.int64)] = True
        return mask
    k = min(int(neighbors), len(points))
    distances, _ = cKDTree(points).query(points, k=k)
    mean_distance = distances.reshape(len(points), k).mean(axis=1)
    positive = mean_distance > 0
    cloud_mean = mean_distance[positive].sum() / len(points)
    deviation = np.where(positive, mean_distance - cloud_mean, 0.0)
    threshold = cloud_mean + std_ratio * np.sqrt((deviation ** 2).sum() / (len(points) - 1))
    return positive & (mean_distance < threshold)


def _points(points) -> np.ndarray:
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must have shape (N, 3), got {points.shape}")
    return points
