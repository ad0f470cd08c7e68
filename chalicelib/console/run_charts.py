"""The run page's per-group plot: each group's pass rate and its Wilson interval, as the
geometry of an inline SVG (pure: numbers in, coordinates out; the template draws them).

Labels are tenant text: they are cut here and escaped by the template like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.console.figures import as_text, percent

#: The plot's coordinate system (the SVG scales to its box; see ``.group-plot`` in the CSS).
WIDTH = 640
ROW_HEIGHT = 28
TOP = 24
LABEL_WIDTH = 190
PLOT_LEFT = LABEL_WIDTH + 10
PLOT_RIGHT = WIDTH - 80
BAR_HEIGHT = 12
LABEL_CHARS = 28
#: Gridlines at these pass rates.
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class GroupBar:
    """One group's row: its label, the bar to its pass rate, the interval's whisker."""

    label: str
    y: float
    bar_width: float
    low_x: float
    high_x: float
    text_y: float
    figure: str
    scored: int


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class GroupPlot:
    width: int
    height: int
    plot_left: int
    plot_right: int
    axis_y: float
    bars: list[GroupBar]
    ticks: list[Tick]


def x_of(rate: float) -> float:
    """A pass rate (0..1, clamped) as an x coordinate of the plot."""
    clamped = min(1.0, max(0.0, rate))
    return round(PLOT_LEFT + clamped * (PLOT_RIGHT - PLOT_LEFT), 2)


def _rate(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _bar(index: int, label: str, group: dict[str, Any]) -> GroupBar:
    rate = _rate(group.get("pass_rate")) or 0.0
    interval = group.get("pass_rate_interval") or {}
    low, high = _rate(interval.get("low")), _rate(interval.get("high"))
    y = TOP + index * ROW_HEIGHT
    scored = group.get("scored_item_count")
    return GroupBar(
        label=as_text(label, LABEL_CHARS),
        y=y,
        bar_width=round(x_of(rate) - PLOT_LEFT, 2),
        low_x=x_of(low if low is not None else rate),
        high_x=x_of(high if high is not None else rate),
        text_y=y + BAR_HEIGHT - 2,
        figure=percent(group.get("pass_rate")),
        scored=scored if isinstance(scored, int) else 0,
    )


def group_plot(aggregate: dict[str, Any] | None) -> GroupPlot | None:
    """The plot of a run's ``aggregate_scores.grouping.groups``; None without groups."""
    grouping = (aggregate or {}).get("grouping") or {}
    groups = grouping.get("groups") or {}
    if not isinstance(groups, dict) or not groups:
        return None
    bars = [
        _bar(index, label, group)
        for index, (label, group) in enumerate(sorted(groups.items()))
        if isinstance(group, dict)
    ]
    axis_y = TOP + len(bars) * ROW_HEIGHT
    return GroupPlot(
        width=WIDTH,
        height=int(axis_y + 22),
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        axis_y=axis_y,
        bars=bars,
        ticks=[Tick(x_of(t), f"{t * 100:.0f}%") for t in TICKS],
    )
