import numpy as np
import pytest
import shapely

from poam_ros.params import ConfigError
from poam_ros.workspace import Extent, Workspace, WorkspaceConfig

SQUARE = [0.0, 0.0, 10.0, 0.0, 10.0, 10.0, 0.0, 10.0]
HOLE = [4.0, 4.0, 6.0, 4.0, 6.0, 6.0, 4.0, 6.0]


@pytest.fixture
def holed():
    """A 10 m square with a 2 m square no-go zone in the middle."""
    return Workspace.from_vertices(SQUARE, [HOLE])


def test_contains_respects_no_go_zone_and_counts_boundaries_inside(holed):
    xy = np.array([[1.0, 1.0],    # free
                   [5.0, 5.0],    # inside the no-go zone
                   [0.0, 3.0],    # on the outer boundary
                   [4.0, 5.0],    # on the no-go boundary
                   [10.0, 10.0],  # a corner
                   [10.5, 5.0],   # outside
                   [np.nan, 1.0]])
    np.testing.assert_array_equal(holed.contains(xy),
                                  [True, False, True, True, True, False, False])


def test_area_and_bounds(holed):
    assert holed.area == pytest.approx(96.0)
    assert holed.bounds == Extent(0.0, 10.0, 0.0, 10.0)


def test_repr_summarises(holed):
    assert repr(holed) == ("Workspace(bounds=(0.0, 10.0, 0.0, 10.0), area=96 m^2, "
                           "no_go_zones=1)")


def test_from_extent_is_the_rectangle():
    workspace = Workspace.from_extent(-2.0, 3.0, 1.0, 5.0)
    assert workspace.area == pytest.approx(20.0)
    assert workspace.bounds == (-2.0, 3.0, 1.0, 5.0)


def test_polygon_with_hole_is_accepted():
    polygon = shapely.Polygon(np.reshape(SQUARE, (-1, 2)), holes=[np.reshape(HOLE, (-1, 2))])
    workspace = Workspace(polygon)
    assert workspace.area == pytest.approx(96.0)
    assert not workspace.contains(np.array([[5.0, 5.0]]))[0]


def test_samples_are_uniform_inside_and_seeded(holed):
    samples = holed.sample_uniform(5000, np.random.default_rng(0))
    assert samples.shape == (5000, 2)
    assert holed.contains(samples).all()
    # Each quarter of the square holds a quarter of the free area.
    quarter = np.mean((samples[:, 0] < 5.0) & (samples[:, 1] < 5.0))
    assert quarter == pytest.approx(0.25, abs=0.02)
    again = holed.sample_uniform(5000, np.random.default_rng(0))
    np.testing.assert_array_equal(samples, again)


def test_sampling_a_thin_sliver_works_and_zero_samples_is_empty():
    triangle = Workspace(np.array([[0.0, 0.0], [100.0, 0.0], [100.0, 1.0]]))
    assert triangle.contains(triangle.sample_uniform(100, np.random.default_rng(1))).all()
    assert triangle.sample_uniform(0, np.random.default_rng(1)).shape == (0, 2)


def test_sampling_refuses_a_vanishing_free_area():
    sliver = Workspace(np.array([[0.0, 0.0], [1e4, 1e4], [1e4, 1e4 + 1e-3]]))
    with pytest.raises(ValueError, match="too small"):
        sliver.sample_uniform(10, np.random.default_rng(0))


def test_check_names_the_offending_point(holed):
    holed.check(np.array([1.0, 1.0]), "goal")
    with pytest.raises(ValueError, match=r"goal \(31.0, 2.0\) is outside the workspace"):
        holed.check(np.array([31.0, 2.0]), "goal")
    with pytest.raises(ValueError, match=r"waypoints\[1\] \(5.0, 5.0\) is outside .*2 of 3"):
        holed.check(np.array([[1.0, 1.0], [5.0, 5.0], [-1.0, 0.0]]), "waypoints")
    with pytest.raises(ValueError, match="not finite"):
        holed.check(np.array([np.inf, 1.0]), "goal")


def test_nearest_inside_projects_outside_points_only(holed):
    xy = np.array([[12.0, 3.0], [1.0, 1.0], [5.0, 4.5]])
    projected = holed.nearest_inside(xy)
    np.testing.assert_allclose(projected, [[10.0, 3.0], [1.0, 1.0], [5.0, 4.0]])
    assert holed.contains(projected).all()


@pytest.mark.parametrize("vertices, message", [
    ([[0.0, 0.0], [1.0, 1.0]], "at least 3 distinct"),
    ([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]], "at least 3 distinct"),
    ([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], "zero area"),
    ([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], "Self-intersection"),
    ([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [1.0, -1.0], [0.0, 2.0]], "invalid"),
    ([[0.0, 0.0], [np.nan, 1.0], [1.0, 0.0]], "non-finite"),
])
def test_invalid_polygons_raise(vertices, message):
    with pytest.raises(ValueError, match=message):
        Workspace(np.array(vertices))


def test_no_go_zone_covering_everything_raises():
    with pytest.raises(ValueError, match="cover the whole workspace"):
        Workspace.from_vertices(SQUARE, [[-1.0, -1.0, 11.0, -1.0, 11.0, 11.0, -1.0, 11.0]])


def test_invalid_no_go_zone_is_named():
    with pytest.raises(ValueError, match="no-go zone 1"):
        Workspace.from_vertices(SQUARE, [HOLE, [1.0, 1.0, 2.0, 2.0]])


def test_inverted_extent_raises():
    with pytest.raises(ValueError, match="xmin < xmax"):
        Workspace.from_extent(1.0, 0.0, 0.0, 1.0)


def test_from_config_splits_the_no_go_zones():
    triangle = [7.0, 7.0, 9.0, 7.0, 8.0, 9.0]
    config = WorkspaceConfig(vertices=[int(v) for v in SQUARE],
                             no_go_vertices=HOLE + triangle, no_go_vertex_counts=[4, 3])
    workspace = Workspace.from_config(config)
    assert workspace.area == pytest.approx(100.0 - 4.0 - 2.0)
    assert config.vertices == SQUARE and all(isinstance(v, float) for v in config.vertices)


def test_default_config_is_a_valid_workspace():
    assert Workspace.from_config(WorkspaceConfig()).area > 0.0


@pytest.mark.parametrize("fields, message", [
    ({"vertices": [0.0, 0.0, 1.0, 0.0]}, "at least 3"),
    ({"vertices": SQUARE + [1.0]}, "odd count"),
    ({"vertices": [0.0, 0.0, 1.0, 0.0, float("nan"), 1.0]}, "finite"),
    ({"no_go_vertices": HOLE, "no_go_vertex_counts": [3]}, "asks for 6"),
    ({"no_go_vertices": HOLE, "no_go_vertex_counts": [4.0]}, "integers >= 3"),
    ({"no_go_vertices": HOLE[:4], "no_go_vertex_counts": [2]}, "integers >= 3"),
])
def test_invalid_config_raises(fields, message):
    with pytest.raises(ConfigError, match=message):
        WorkspaceConfig(**fields)


@pytest.mark.parametrize("fields, message", [
    ({"vertices": []}, "WorkspaceConfig.vertices needs at least 3"),
    ({"vertices": [0.0, 0.0, 10.0, 10.0, 10.0, 0.0, 0.0, 10.0]},  # a bowtie
     "WorkspaceConfig.vertices is degenerate"),
    ({"vertices": [0.0, 0.0, 5.0, 0.0, 10.0, 0.0]}, "WorkspaceConfig.vertices is degenerate"),
    ({"vertices": [0.0, 0.0, 1.0, 0.0, 1.0, 0.0]}, "WorkspaceConfig.vertices needs at least 3"),
    ({"vertices": SQUARE, "no_go_vertices": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
      "no_go_vertex_counts": [3]}, r"WorkspaceConfig.no_go_vertices \(no-go zone 0\)"),
    ({"vertices": SQUARE, "no_go_vertices": [-1.0, -1.0, 11.0, -1.0, 11.0, 11.0, -1.0, 11.0],
      "no_go_vertex_counts": [4]}, "WorkspaceConfig.no_go_vertices: the no-go zones cover"),
])
def test_a_degenerate_workspace_is_refused_as_a_config(fields, message):
    """Refused where the parameters are read (a file, a node's start, a change), not later
    by whoever builds the polygon."""
    with pytest.raises(ConfigError, match=message):
        WorkspaceConfig(**fields)
