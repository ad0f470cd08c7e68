"""Chart geometry for the eval and project pages: pure functions from the API's run JSON to
the numbers an inline SVG is drawn from (the templates only place them).

The eval page's chart plots each scored run's pass rate, oldest on the left, with its
Wilson interval as a vertical band, a dashed link from a run to its baseline (when the
baseline is on the chart), and a marker where the agent version changes. The project
page's sparkline is the same pass rates as one small polyline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.console.figures import interval_text, percent

#: The eval chart's box (SVG user units; the SVG scales to its container's width).
WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 14, 30
#: The sparkline's box.
SPARK_WIDTH, SPARK_HEIGHT, SPARK_PAD = 120, 28, 3
#: How many runs the project page's sparkline shows.
SPARK_RUNS = 20


@dataclass(frozen=True)
class Point:
    run_id: str
    x: float
    y: float
    band_top: float
    band_bottom: float
    label: str
    passed: bool | None


@dataclass(frozen=True)
class BaselineLink:
    run_id: str
    baseline_run_id: str
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(frozen=True)
class VersionMark:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    points: list[Point]
    line: str
    links: list[BaselineLink]
    versions: list[VersionMark]
    gridlines: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _rate_y(rate: float, top: float, height: float) -> float:
    """A rate in [0, 1] as a y coordinate: 1 at ``top``, 0 at ``top + height``."""
    return round(top + (1.0 - min(1.0, max(0.0, rate))) * height, 2)


def _x_positions(count: int, left: float, width: float) -> list[float]:
    if count == 1:
        return [round(left + width / 2, 2)]
    step = width / (count - 1)
    return [round(left + i * step, 2) for i in range(count)]


def _rate_of(run: dict[str, Any]) -> float | None:
    return _number((run.get("aggregate_scores") or {}).get("pass_rate"))


def scored(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs that have a pass rate, oldest first (the API lists newest first)."""
    return [run for run in reversed(runs) if _rate_of(run) is not None]


def _point(run: dict[str, Any], x: float) -> Point:
    aggregate = run.get("aggregate_scores") or {}
    rate = _rate_of(run) or 0.0
    interval = aggregate.get("pass_rate_interval") or {}
    low, high = _number(interval.get("low")), _number(interval.get("high"))
    plot = HEIGHT - TOP - BOTTOM
    label = f"{run['id']}: {percent(rate)} ({interval_text(interval)})"
    return Point(
        run_id=run["id"],
        x=x,
        y=_rate_y(rate, TOP, plot),
        band_top=_rate_y(high if high is not None else rate, TOP, plot),
        band_bottom=_rate_y(low if low is not None else rate, TOP, plot),
        label=label,
        passed=run.get("passed") if isinstance(run.get("passed"), bool) else None,
    )


def _version_marks(runs: list[dict[str, Any]], xs: list[float]) -> list[VersionMark]:
    """A mark before each run whose agent version differs from the run before it (and one
    at the first run, naming the version the chart starts with)."""
    marks: list[VersionMark] = []
    previous: Any = object()
    for i, run in enumerate(runs):
        version = run.get("agent_version")
        if version != previous:
            x = xs[i] if i == 0 else round((xs[i - 1] + xs[i]) / 2, 2)
            marks.append(VersionMark(x, f"v{version}" if version is not None else "v?"))
        previous = version
    return marks


def pass_rate_chart(runs: list[dict[str, Any]]) -> Chart | None:
    """The eval page's chart of ``runs`` (as the API lists them); None with nothing scored."""
    plotted = scored(runs)
    if not plotted:
        return None
    xs = _x_positions(len(plotted), LEFT, WIDTH - LEFT - RIGHT)
    points = [_point(run, x) for run, x in zip(plotted, xs, strict=True)]
    by_id = {p.run_id: p for p in points}
    links = []
    for run, point in zip(plotted, points, strict=True):
        baseline = by_id.get(run.get("baseline_run_id") or "")
        if baseline is not None:
            links.append(
                BaselineLink(
                    point.run_id, baseline.run_id, baseline.x, baseline.y, point.x, point.y
                )
            )
    plot = HEIGHT - TOP - BOTTOM
    gridlines = [(_rate_y(rate, TOP, plot), f"{int(rate * 100)}%") for rate in (0, 0.5, 1)]
    return Chart(
        points=points,
        line=" ".join(f"{p.x},{p.y}" for p in points),
        links=links,
        versions=_version_marks(plotted, xs),
        gridlines=gridlines,
    )


@dataclass(frozen=True)
class Sparkline:
    line: str
    last_x: float
    last_y: float
    label: str
    width: int = SPARK_WIDTH
    height: int = SPARK_HEIGHT


def sparkline(runs: list[dict[str, Any]]) -> Sparkline | None:
    """The project page's trend of an eval: its scored runs' pass rates, oldest first."""
    plotted = scored(runs)[-SPARK_RUNS:]
    if not plotted:
        return None
    rates = [_rate_of(run) or 0.0 for run in plotted]
    pad = SPARK_PAD
    xs = _x_positions(len(rates), pad, SPARK_WIDTH - 2 * pad)
    ys = [_rate_y(rate, pad, SPARK_HEIGHT - 2 * pad) for rate in rates]
    label = f"pass rate over the last {len(rates)} scored runs: " + ", ".join(
        percent(rate) for rate in rates
    )
    return Sparkline(
        line=" ".join(f"{x},{y}" for x, y in zip(xs, ys, strict=True)),
        last_x=xs[-1],
        last_y=ys[-1],
        label=label,
    )
