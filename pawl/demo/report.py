"""The HTML report of a comparison: one self-contained file (inline CSS and SVG, no scripts).

Jinja renders it with autoescaping, so labels and keys that came from users cannot inject
markup. The figures are those of :mod:`pawl.demo.summary`, the same ones the
terminal shows.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, StrictUndefined

from chalicelib.clock import now_iso
from pawl.demo.flips import REGRESSED, Flips
from pawl.demo.plot import build_plot
from pawl.demo.report_template import TEMPLATE
from pawl.demo.summary import (
    Comparison,
    fmt_delta,
    fmt_interval,
    fmt_p,
    fmt_rate,
    fmt_rate_with_interval,
    fmt_signed_rank,
    verdict_word,
)

DEFAULT_TITLE = "pawl eval report"


def _direction(delta: float | None) -> str:
    if delta is None or delta == 0:
        return ""
    return "up" if delta > 0 else "down"


def _environment() -> Environment:
    environment = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
    environment.filters.update(
        rate=fmt_rate,
        interval=fmt_interval,
        rate_ci=fmt_rate_with_interval,
        delta=fmt_delta,
        p=fmt_p,
        signed_rank=fmt_signed_rank,
        verdict=verdict_word,
        direction=_direction,
    )
    return environment


_TEMPLATE = _environment().from_string(TEMPLATE)


def render_report(
    comparison: Comparison,
    *,
    title: str = DEFAULT_TITLE,
    generated_at: str | None = None,
    flips: Flips | None = None,
) -> str:
    """The report as one HTML document; ``flips``: the flipped items' section (when the
    results were read: :func:`pawl.demo.flips.fetch_flips`)."""
    runs = [("candidate", comparison.candidate)]
    if comparison.baseline is not None:
        runs.insert(0, ("baseline", comparison.baseline))
    passed = comparison.candidate.passed
    return _TEMPLATE.render(
        title=title,
        generated_at=generated_at or now_iso(),
        c=comparison,
        runs=runs,
        plot=build_plot(comparison),
        verdict_class={True: "passed", False: "failed", None: "none"}[passed],
        flips=flips,
        regressed=REGRESSED,
    )


def write_report(
    path: Path, comparison: Comparison, *, title: str = DEFAULT_TITLE, flips: Flips | None = None
) -> Path:
    """Render the report to ``path`` (parents created); returns the absolute path."""
    path = path.expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(comparison, title=title, flips=flips), encoding="utf-8")
    return path
