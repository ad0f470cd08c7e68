"""The chart geometry of the eval page and the project sparklines (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.console import charts


def run(
    run_id: str,
    rate: float | None,
    low: float | None = None,
    high: float | None = None,
    version: int | None = 1,
    baseline: str | None = None,
    passed: bool | None = None,
) -> dict[str, Any]:
    aggregate = None
    if rate is not None:
        interval = {"low": low, "high": high} if low is not None else None
        aggregate = {"pass_rate": rate, "pass_rate_interval": interval}
    return {
        "id": run_id,
        "aggregate_scores": aggregate,
        "agent_version": version,
        "baseline_run_id": baseline,
        "passed": passed,
    }


PLOT_HEIGHT = charts.HEIGHT - charts.TOP - charts.BOTTOM


def test_points_run_oldest_to_newest_and_rates_map_onto_the_plot() -> None:
    newest_first = [run("r3", 1.0), run("r2", 0.5), run("r1", 0.0)]
    chart = charts.pass_rate_chart(newest_first)
    assert chart is not None
    assert [p.run_id for p in chart.points] == ["r1", "r2", "r3"]
    xs = [p.x for p in chart.points]
    assert xs == [charts.LEFT, charts.LEFT + 332.0, charts.WIDTH - charts.RIGHT]
    bottom = charts.TOP + PLOT_HEIGHT
    assert [p.y for p in chart.points] == [bottom, charts.TOP + PLOT_HEIGHT / 2, charts.TOP]
    assert chart.line == " ".join(f"{p.x},{p.y}" for p in chart.points)
    assert [label for _, label in chart.gridlines] == ["0%", "50%", "100%"]


def test_the_wilson_band_spans_the_interval() -> None:
    chart = charts.pass_rate_chart([run("r1", 0.5, low=0.25, high=0.75)])
    assert chart is not None
    (point,) = chart.points
    assert point.x == charts.LEFT + (charts.WIDTH - charts.LEFT - charts.RIGHT) / 2
    assert point.band_top == charts.TOP + PLOT_HEIGHT * 0.25
    assert point.band_bottom == charts.TOP + PLOT_HEIGHT * 0.75
    assert point.band_top < point.y < point.band_bottom
    assert point.label == "r1: 50.0% (25.0% to 75.0%)"


def test_a_run_without_an_interval_has_a_band_of_its_rate_only() -> None:
    chart = charts.pass_rate_chart([run("r1", 0.4)])
    assert chart is not None
    assert chart.points[0].band_top == chart.points[0].band_bottom == chart.points[0].y


def test_runs_without_a_pass_rate_are_left_out_and_nothing_scored_is_no_chart() -> None:
    assert charts.pass_rate_chart([]) is None
    assert charts.pass_rate_chart([run("q", None), run("c", None)]) is None
    chart = charts.pass_rate_chart([run("queued", None), run("done", 0.0)])
    assert chart is not None and [p.run_id for p in chart.points] == ["done"]
    assert chart.points[0].y == charts.TOP + PLOT_HEIGHT  # a 0% run is plotted, at the bottom


def test_a_run_links_to_its_baseline_when_both_are_on_the_chart() -> None:
    runs = [run("r3", 0.9, baseline="gone"), run("r2", 0.6, baseline="r1"), run("r1", 0.8)]
    chart = charts.pass_rate_chart(runs)
    assert chart is not None
    (link,) = chart.links  # r3's baseline is not on the chart
    r1, r2, _ = chart.points
    assert (link.run_id, link.baseline_run_id) == ("r2", "r1")
    assert (link.x1, link.y1, link.x2, link.y2) == (r1.x, r1.y, r2.x, r2.y)


def test_agent_versions_are_marked_where_they_change() -> None:
    runs = [run("r4", 0.5, version=3), run("r3", 0.5, version=2)]
    runs += [run("r2", 0.5, version=2), run("r1", 0.5, version=1)]
    chart = charts.pass_rate_chart(runs)
    assert chart is not None
    xs = [p.x for p in chart.points]
    assert [(m.x, m.label) for m in chart.versions] == [
        (xs[0], "v1"),
        (round((xs[0] + xs[1]) / 2, 2), "v2"),
        (round((xs[2] + xs[3]) / 2, 2), "v3"),
    ]


def test_the_verdict_colours_each_point() -> None:
    chart = charts.pass_rate_chart([run("b", 0.2, passed=False), run("a", 0.9, passed=True)])
    assert chart is not None and [p.passed for p in chart.points] == [True, False]


@pytest.mark.parametrize("rate", [1.5, -0.5])
def test_a_rate_outside_zero_to_one_stays_inside_the_plot(rate: float) -> None:
    chart = charts.pass_rate_chart([run("r", rate)])
    assert chart is not None
    assert charts.TOP <= chart.points[0].y <= charts.TOP + PLOT_HEIGHT


def test_the_sparkline_keeps_the_last_twenty_scored_runs_oldest_first() -> None:
    newest_first = [run(f"r{i}", i / 30) for i in range(30, 0, -1)] + [run("q", None)]
    spark = charts.sparkline(newest_first)
    assert spark is not None
    points = [tuple(map(float, pair.split(","))) for pair in spark.line.split()]
    assert len(points) == charts.SPARK_RUNS
    assert points[0][0] == charts.SPARK_PAD
    assert points[-1] == (charts.SPARK_WIDTH - charts.SPARK_PAD, charts.SPARK_PAD)  # 100%
    ys = [y for _, y in points]
    assert ys == sorted(ys, reverse=True)  # rising rates: each point higher than the last
    assert (spark.last_x, spark.last_y) == points[-1]
    assert spark.label.startswith("pass rate over the last 20 scored runs: 36.7%, ")


def test_no_scored_run_is_no_sparkline() -> None:
    assert charts.sparkline([run("q", None)]) is None
