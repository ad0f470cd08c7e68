"""The per-group plot's geometry (pure): bars to the pass rate, whiskers to the interval."""

from __future__ import annotations

from chalicelib.console import run_charts
from chalicelib.console.run_charts import PLOT_LEFT, PLOT_RIGHT, group_plot, x_of


def _group(rate: float, low: float, high: float, scored: int = 10) -> dict[str, object]:
    return {
        "pass_rate": rate,
        "pass_rate_interval": {"low": low, "high": high},
        "scored_item_count": scored,
    }


def test_no_groups_no_plot() -> None:
    assert group_plot(None) is None
    assert group_plot({"pass_rate": 0.5}) is None
    assert group_plot({"grouping": {"group_by": "lang", "groups": {}}}) is None


def test_bars_and_whiskers_sit_on_the_pass_rate_axis_in_label_order() -> None:
    aggregate = {
        "grouping": {
            "groups": {"fr": _group(0.25, 0.1, 0.5, 4), "en": _group(1.0, 0.7, 1.0)},
        }
    }
    plot = group_plot(aggregate)
    assert plot is not None
    en, fr = plot.bars
    assert (en.label, fr.label) == ("en", "fr")
    span = PLOT_RIGHT - PLOT_LEFT
    assert en.bar_width == span and fr.bar_width == round(0.25 * span, 2)
    assert (fr.low_x, fr.high_x) == (x_of(0.1), x_of(0.5))
    assert fr.y > en.y and plot.axis_y > fr.y and plot.height > plot.axis_y
    assert (fr.figure, fr.scored) == ("25.0%", 4)
    assert [tick.label for tick in plot.ticks] == ["0%", "25%", "50%", "75%", "100%"]


def test_rates_are_clamped_and_long_labels_cut() -> None:
    assert x_of(-1) == PLOT_LEFT and x_of(2) == PLOT_RIGHT
    label = "x" * 100
    plot = group_plot({"grouping": {"groups": {label: {"pass_rate": None}}}})
    assert plot is not None
    (bar,) = plot.bars
    assert bar.label == "x" * run_charts.LABEL_CHARS + "…"
    assert bar.bar_width == 0 and bar.low_x == bar.high_x == PLOT_LEFT and bar.figure == "—"
