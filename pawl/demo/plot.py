"""Geometry of the report's plot: per-group pass rates, baseline beside candidate.

Pure arithmetic; the report template draws the shapes as inline SVG. Each bar carries
its Wilson interval as an error bar. Without groups the plot shows the overall rates.
"""

from __future__ import annotations

from dataclasses import dataclass

from pawl.demo.summary import Comparison, RateFigure, fmt_rate_with_interval

WIDTH = 760
HEIGHT = 340
MARGIN_LEFT = 52
MARGIN_RIGHT = 16
MARGIN_TOP = 44
MARGIN_BOTTOM = 46
MAX_BAR_WIDTH = 30.0
BAR_GAP = 3.0
LABEL_CHARS = 16
TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
#: A rate of 0 is drawn this tall, so it reads as a measured zero, not as missing data.
ZERO_BAR_HEIGHT = 2.0
Y_AXIS_TITLE = "pass rate (95% interval)"


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    centre: float
    whisker_top: float
    whisker_bottom: float
    cap_left: float
    cap_right: float
    side: str  # "baseline" | "candidate" (the CSS class)
    title: str
    #: The rate written above the bar (and above its interval), e.g. ``0.00``.
    value_label: str
    value_label_y: float


@dataclass(frozen=True)
class Slot:
    centre: float
    label: str
    full_label: str


@dataclass(frozen=True)
class Tick:
    y: float
    label_y: float
    label: str


@dataclass(frozen=True)
class Plot:
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    label_y: float
    bars: list[Bar]
    slots: list[Slot]
    ticks: list[Tick]
    threshold_y: float | None
    threshold_label: str | None
    y_title: str
    #: Where the rotated y-axis title is centred (SVG user units, before the rotation).
    y_title_x: float
    y_title_y: float


def _series(comparison: Comparison) -> list[tuple[str, RateFigure | None, RateFigure | None]]:
    if comparison.groups:
        return [(row.label, row.baseline, row.candidate) for row in comparison.groups]
    baseline = comparison.baseline.overall if comparison.baseline is not None else None
    return [("overall", baseline, comparison.candidate.overall)]


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


class _Axes:
    def __init__(self) -> None:
        self.left = float(MARGIN_LEFT)
        self.right = float(WIDTH - MARGIN_RIGHT)
        self.top = float(MARGIN_TOP)
        self.bottom = float(HEIGHT - MARGIN_BOTTOM)

    def y(self, rate: float) -> float:
        return round(self.bottom - (self.bottom - self.top) * min(1.0, max(0.0, rate)), 1)


def _bar(
    axes: _Axes, figure: RateFigure, x: float, width: float, side: str, title: str
) -> Bar | None:
    if figure.rate is None:
        return None
    top = min(axes.y(figure.rate), axes.bottom - ZERO_BAR_HEIGHT)
    low = figure.low if figure.low is not None else figure.rate
    high = figure.high if figure.high is not None else figure.rate
    return Bar(
        x=round(x, 1),
        y=round(top, 1),
        width=round(width, 1),
        height=round(axes.bottom - top, 1),
        centre=round(x + width / 2, 1),
        whisker_top=axes.y(high),
        whisker_bottom=axes.y(low),
        cap_left=round(x + width / 4, 1),
        cap_right=round(x + width * 3 / 4, 1),
        side=side,
        title=f"{title}: {fmt_rate_with_interval(figure)} over {figure.scored} items",
        value_label=f"{figure.rate:.2f}",
        value_label_y=round(min(top, axes.y(high)) - 4, 1),
    )


def build_plot(comparison: Comparison) -> Plot:
    """Bars, labels, ticks and the threshold line, in SVG user units."""
    axes = _Axes()
    series = _series(comparison)
    slot_width = (axes.right - axes.left) / len(series)
    bar_width = min(MAX_BAR_WIDTH, slot_width * 0.32)
    bars: list[Bar] = []
    slots: list[Slot] = []
    for index, (label, baseline, candidate) in enumerate(series):
        centre = axes.left + slot_width * (index + 0.5)
        slots.append(Slot(centre=round(centre, 1), label=_short(label), full_label=label))
        sides = [
            (baseline, centre - BAR_GAP / 2 - bar_width, "baseline"),
            (candidate, centre + BAR_GAP / 2, "candidate"),
        ]
        for figure, x, side in sides:
            bar = (
                None
                if figure is None
                else _bar(axes, figure, x, bar_width, side, f"{label} · {side}")
            )
            if bar is not None:
                bars.append(bar)
    threshold = comparison.pass_threshold
    return Plot(
        width=WIDTH,
        height=HEIGHT,
        left=axes.left,
        right=axes.right,
        top=axes.top,
        bottom=axes.bottom,
        bars=bars,
        slots=slots,
        label_y=axes.bottom + 18,
        ticks=[Tick(y=axes.y(v), label_y=axes.y(v) + 4, label=f"{v:.1f}") for v in TICKS],
        threshold_y=axes.y(threshold) if threshold is not None else None,
        threshold_label=f"threshold {threshold:.2f}" if threshold is not None else None,
        y_title=Y_AXIS_TITLE,
        y_title_x=14.0,
        y_title_y=round((axes.top + axes.bottom) / 2, 1),
    )
