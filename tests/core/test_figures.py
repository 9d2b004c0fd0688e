"""Every figure the package writes is a PNG whose colour bars and axes carry their units and
whose map titles name the map, the method, the sample count and the scores where known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import poam_ros.figures as figures
from poam_ros.mapping.map_grid import MapGrid, MapLayers


@pytest.fixture
def saved(monkeypatch):
    """The figures written during the test, in order (inspectable once closed)."""
    written = []
    save = figures.save_figure
    monkeypatch.setattr(figures, "save_figure",
                        lambda fig, path: written.append(fig) or save(fig, path))
    return written


def panels_and_bars(fig, count):
    """The ``count`` image panels, then their colour bars (added after the panels)."""
    return fig.axes[:count], fig.axes[count:]


def field(points):
    return -100 + 5 * np.sin(points[:, 0] / 7) * np.cos(points[:, 1] / 9)


def test_map_titles_leave_out_unknown_scores():
    assert figures.map_title("N17E073", "poam", 5012, 0.01234, -1.2346, "seed 3") == \
        "N17E073 · poam · 5,012 samples · final SMSE 0.0123, MSLL -1.235 · seed 3"
    assert figures.map_title("the survey of bag", "ssgp", 700, float("nan"), float("nan")) == \
        "the survey of bag · ssgp · 700 samples"


def test_a_mission_figure_names_map_method_samples_and_scores(tmp_path, saved):
    grid = MapGrid((-30, 30, -30, 30), 6.0)
    points = grid.points
    model = SimpleNamespace(
        method="poam", inducing_inputs=points[::7],
        predict=lambda x: (field(x) + 0.5, np.full(len(x), 2.0)),
        lengthscale_map=lambda x: np.full(len(x), 8.0))
    final = SimpleNamespace(num_samples=1234, smse=0.0421, msll=-1.5)
    result = SimpleNamespace(model=model, eval_points=points, final=final, truth=field(points),
                             path=np.zeros((5, 3)), samples_x=points[::3])
    path = figures.plot_mission(result, tmp_path / "m.png", "embedded bathymetry", "seed 0")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    [fig] = saved
    assert fig._suptitle.get_text() == ("embedded bathymetry · poam · 1,234 samples · final "
                                        "SMSE 0.0421, MSLL -1.500 · seed 0")
    panels, bars = panels_and_bars(fig, 4)
    assert [ax.get_title() for ax in panels] == [
        "ground truth", "predicted mean", "standard deviation", "learned lengthscale"]
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in panels] == [("x [m]", "y [m]")] * 4
    assert [bar.get_ylabel() for bar in bars] == [
        "elevation [m]", "elevation [m]", "std [m]", "lengthscale [m]"]


def test_a_remap_figure_shows_the_map_layers_on_their_grid(tmp_path, saved):
    grid = MapGrid((0, 40, 0, 20), 2.0)
    mean = field(grid.points).reshape(grid.shape)
    layers = MapLayers(mean, np.ones(grid.shape), None, grid.points[::9], mean.ravel()[::9],
                       0.0)
    track = np.column_stack([np.linspace(0, 40, 50), np.linspace(0, 20, 50)])
    path = figures.plot_remap(grid, layers, track, tmp_path / "r.png", "a title")
    assert path.stat().st_size > 0
    [fig] = saved
    panels, bars = panels_and_bars(fig, 2)
    assert fig._suptitle.get_text() == "a title"
    assert [ax.get_title() for ax in panels] == ["predicted mean", "standard deviation"]
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in panels] == [("x [m]", "y [m]")] * 2
    assert [bar.get_ylabel() for bar in bars] == ["elevation [m]", "std [m]"]
    # The image spans the grid's cells, edges included.
    assert panels[0].images[0].get_extent() == pytest.approx([0, 40, 0, 20])


def test_curves_and_speed_label_their_axes_with_units(tmp_path, saved):
    run = [{"num_samples": n, "smse": 1 / n, "msll": -n / 1000, "update_time": 0.1}
           for n in (500, 1000, 1500)]
    figures.plot_curves({"poam (attentive)": [run, run]}, tmp_path / "c.png", title="BATHY")
    figures.plot_speed([{"num_samples": n, "update": 0.2, "inducing": 0.05, "variational": 0.05,
                         "training": 0.1} for n in (1000, 10000)], tmp_path / "s.png")
    curves, speed = saved
    assert curves._suptitle.get_text() == "BATHY"
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in curves.axes] == [
        ("number of samples", "SMSE"), ("number of samples", "MSLL [nats]"),
        ("number of samples", "update time [s]")]
    [ax] = speed.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("samples in the model",
                                                  "median time per update [s]")
    assert (tmp_path / "c.png").stat().st_size > 0 and (tmp_path / "s.png").stat().st_size > 0


def test_the_sizing_figure_draws_each_method_on_the_panels_it_reports(tmp_path, saved):
    """VIPS on the added, bound and cap panels, OIPS on the added, ρ̄ and cap panels, POAM
    (no sizing figures) on none; the cap's panel counts the updates it stopped so far."""
    counts = (500, 1000, 1500)
    vips = [{"num_samples": n, "inducing_added": 5, "bound_gap": 0.1, "bound_threshold": 0.2,
             "cap_bound": int(n > 500)} for n in counts]
    oips = [{"num_samples": n, "inducing_added": 3, "rho_bar": 0.8, "cap_bound": 0}
            for n in counts]
    poam = [{"num_samples": n, "pcd_trace_error": 1e-6} for n in counts]
    vips.insert(2, {"num_samples": 1000})  # an epoch without an update: passed over
    figures.plot_sizing({"vips": [vips], "oips": [oips], "poam": [poam]}, tmp_path / "s.png",
                        title="BATHY")
    [fig] = saved
    assert fig._suptitle.get_text() == "BATHY"
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == [ylabel for ylabel, _ in figures.SIZING_PANELS]
    drawn = [[line.get_label() for line in ax.lines if not line.get_label().startswith("_")]
             for ax in fig.axes]
    assert drawn == [["vips", "oips"], ["vips"], ["oips"], ["vips", "oips"]]
    assert len(fig.axes[1].lines) == 2  # the gap solid, the threshold dashed
    vips_cap = fig.axes[3].lines[0].get_ydata()
    assert vips_cap[0] == 0 and vips_cap[-1] == 2  # two of three updates stopped by the cap
    assert figures.plot_sizing({"poam": [poam]}, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_a_georeferenced_map_is_drawn_in_eastings_and_northings(tmp_path, saved):
    from poam_ros.geo import GeoReference

    anchor = GeoReference.at_lonlat("UTM 10N", 47.5, -123.5, "chart datum")
    east0, north0 = anchor.origin
    grid = MapGrid((0, 40, 0, 20), 2.0)
    mean = field(grid.points).reshape(grid.shape)
    layers = MapLayers(mean, np.ones(grid.shape), None, grid.points[::9], mean.ravel()[::9],
                       0.0)
    track = np.column_stack([np.linspace(0, 40, 50), np.linspace(0, 20, 50)])
    figures.plot_remap(grid, layers, track, tmp_path / "g.png", "a title", anchor)
    [fig] = saved
    panels, _ = panels_and_bars(fig, 2)
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in panels] == \
        [("easting [m]", "northing [m]")] * 2
    # The map's cells and track sit at their UTM coordinates, ticks written out in full.
    assert panels[0].images[0].get_extent() == pytest.approx(
        [east0, east0 + 40, north0, north0 + 20])
    np.testing.assert_allclose(panels[0].lines[0].get_xydata(), track + anchor.origin)
    assert panels[0].xaxis.get_major_formatter().get_offset() == ""
    assert fig._supxlabel.get_text() == ("WGS 84 / UTM zone 10N · map origin 47.500000°, "
                                         "-123.500000° (WGS 84) · elevations relative to "
                                         "chart datum")


def test_a_two_channel_mission_has_a_figure_per_channel(tmp_path, saved):
    grid = MapGrid((-30, 30, -30, 30), 6.0)
    points = grid.points
    both = lambda x: np.column_stack([field(x), np.full(len(x), 7.0)])  # noqa: E731
    model = SimpleNamespace(
        method="poam-mt", inducing_inputs=points[::7],
        predict=lambda x: (both(x) + 0.5, np.full((len(x), 2), 2.0)),
        lengthscale_map=lambda x: np.full(len(x), 8.0))
    samples_y = np.full((len(points[::3]), 2), np.nan)
    samples_y[::2, 0] = 1.0
    samples_y[1::2, 1] = 7.0
    extra = dict(smse_depth=0.1, msll_depth=-1.0, smse_temperature=0.2, msll_temperature=-2.0)
    result = SimpleNamespace(model=model, eval_points=points, truth=both(points),
                             final=SimpleNamespace(num_samples=9, smse=0.1, msll=-1.0,
                                                   extra=extra),
                             path=np.zeros((5, 3)), samples_x=points[::3], samples_y=samples_y)
    assert figures.plot_mission(result, tmp_path / "m.png", "embedded bathymetry") == \
        tmp_path / "m.png"
    assert (tmp_path / "m_temperature.png").is_file()
    depth, temperature = saved
    truth, mean = (ax.get_images()[0].get_array() for ax in panels_and_bars(depth, 4)[0][:2])
    np.testing.assert_allclose(np.ma.compressed(mean) - 0.5, np.ma.compressed(truth))
    assert np.ma.compressed(truth).std() > 0  # the depth, not the constant second channel
    panels, bars = panels_and_bars(temperature, 3)  # no lengthscale panel
    np.testing.assert_allclose(np.ma.compressed(panels[1].get_images()[0].get_array()), 7.5)
    assert [bar.get_ylabel() for bar in bars] == ["temperature [°C]"] * 2 + ["std [°C]"]
    assert temperature._suptitle.get_text() == ("embedded bathymetry, temperature · poam-mt · "
                                                "17 samples · final SMSE 0.2000, MSLL -2.000")
    assert len(panels[1].lines[0].get_xydata()) == 17  # the samples that measured it


def test_the_track_stays_visible_over_the_inducing_inputs(tmp_path, saved):
    grid = MapGrid((-30, 30, -30, 30), 6.0)
    points = grid.points
    track = np.column_stack([np.linspace(-25, 25, 40), np.zeros(40)])
    lengthscale = np.linspace(2.0, 4.0, len(points))
    lengthscale[0] = 500.0  # one cell at a bound must not flatten the panel
    figures.plot_map(tmp_path / "t.png", points, field(points), np.ones(len(points)),
                     lengthscale, track=track, inducing=points[::5])
    [fig] = saved
    panels, _ = panels_and_bars(fig, 3)
    std_panel = panels[1]
    lines = {line.get_label(): line for line in std_panel.get_lines()}
    assert lines["track"].get_zorder() > lines["inducing inputs"].get_zorder()
    assert lines["track"].get_path_effects()  # outlined: visible on light and dark colours
    assert lines["inducing inputs"].get_markerfacecolor() == "none"
    low, high = panels[2].get_images()[0].get_clim()
    assert high < 5.0 and low > 2.0  # the percentiles, not the outlier
