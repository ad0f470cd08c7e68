"""The outcome of :func:`pawl.evaluate`: a :class:`Verdict`, and its words for a person.

Pure: built from a run as the API returns it (:func:`figures_of`, :func:`reasons_of`, which
word the gates as ``pawl run`` does, :mod:`pawl.demo.summary`) and worded by :func:`explain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pawl.demo.flips import REGRESSED, FlippedItem, ItemVerdict
from pawl.evaluation_apply import Applied
from pawl.transport import Run

#: Characters of an output quoted per item in :meth:`Verdict.explain`.
QUOTE_CHARS = 160
#: Failing items (beyond the flipped ones) :meth:`Verdict.explain` lists; the rest are counted.
EXPLAINED_FAILING = 10


@dataclass(frozen=True)
class Figures:
    """The run's figures: its pass rate and interval, and its change against the baseline."""

    pass_rate: float | None
    interval: tuple[float, float] | None
    interval_level: float | None
    scored: int
    errored: int
    items: int
    #: Against the baseline (None without one): pass-rate change and McNemar's exact p.
    delta: float | None = None
    p_value: float | None = None
    compared: int = 0
    improved: int = 0
    regressed: int = 0


@dataclass(frozen=True, repr=False)
class Verdict:
    """Whether the run passed the eval's gates, why, and which items flipped."""

    passed: bool
    #: One sentence per gate checked (and why there is no baseline or no verdict, if so).
    reasons: tuple[str, ...]
    figures: Figures
    #: Items whose verdict differs from the baseline's, regressions first (at most 50).
    flipped: tuple[FlippedItem, ...]
    run_id: str
    eval_id: str
    #: The eval's name (what :func:`evaluate` was called with).
    name: str
    status: str
    console_url: str
    baseline_run_id: str | None = None
    #: Flipped items beyond those in :attr:`flipped`.
    more_flipped: int = 0
    #: The items that failed in this run (at most 50, by item id; :attr:`more_failing` counts
    #: the rest): what to look at when there is no baseline to flip against.
    failing: tuple[ItemVerdict, ...] = ()
    more_failing: int = 0
    #: What this call created or changed on the server before the run.
    applied: Applied = field(default_factory=lambda: Applied("unchanged", (), 0, 0))

    def explain(self) -> str:
        """The verdict for a person: the reasons, the figures and the flipped items."""
        return explain(self)

    def __repr__(self) -> str:
        # Short: pytest prints it under a failed `assert verdict.passed, verdict.explain()`.
        word = "passed" if self.passed else "failed"
        return f"<Verdict {word}: run {self.run_id} of eval {self.name}>"

    def assert_passed(self) -> None:
        """Raise AssertionError with :meth:`explain` as its message unless it passed."""
        if not self.passed:
            raise AssertionError(self.explain())


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "—" if value is None else pattern.format(value)


def _quote(text: str | None) -> str:
    if text is None:
        return "(no output)"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + "…")


def _figure_lines(verdict: Verdict) -> list[str]:
    from pawl.demo.summary import fmt_p

    f = verdict.figures
    interval = f" [{f.interval[0]:.2f}, {f.interval[1]:.2f}]" if f.interval else ""
    lines = [
        f"  pass rate {_fmt(f.pass_rate)}{interval} over {f.scored} of {f.items} items scored"
        f" ({f.errored} errored)"
    ]
    if verdict.baseline_run_id is not None:
        lines.append(
            f"  vs baseline {verdict.baseline_run_id}: Δ {_fmt(f.delta, '{:+.2f}')} over "
            f"{f.compared} items, {f.improved} improved, {f.regressed} regressed, "
            f"p = {fmt_p(f.p_value)}"
        )
    return lines


def _flipped_lines(verdict: Verdict) -> list[str]:
    if not verdict.flipped:
        return []
    total = len(verdict.flipped) + verdict.more_flipped
    lines = [f"flipped items ({total}, regressions first):"]
    for item in verdict.flipped:
        arrow = "pass → fail" if item.direction == REGRESSED else "fail → pass"
        question = f" {_quote(item.question)}" if item.question else ""
        lines.append(f"  {item.direction} ({arrow}) {item.dataset_item_id}:{question}")
        lines.append(f"      baseline: {_quote(item.baseline_output)}")
        lines.append(f"      now:      {_quote(item.candidate_output)}")
    if verdict.more_flipped:
        lines.append(f"  … and {verdict.more_flipped} more (see the console)")
    return lines


def _failing_lines(verdict: Verdict) -> list[str]:
    flipped = {item.dataset_item_id for item in verdict.flipped}
    others = [item for item in verdict.failing if item.dataset_item_id not in flipped]
    if not others:
        return []
    unlisted = max(0, len(others) - EXPLAINED_FAILING) + verdict.more_failing
    heading = "other failing items" if flipped else "failing items"
    lines = [f"{heading} ({len(others) + verdict.more_failing}):"]
    for item in others[:EXPLAINED_FAILING]:
        question = f" {_quote(item.question)}" if item.question else ""
        lines.append(f"  {item.dataset_item_id}:{question}")
        lines.append(f"      output: {_quote(item.output)}")
    if unlisted > 0:
        lines.append(f"  … and {unlisted} more (see the console)")
    return lines


def explain(verdict: Verdict) -> str:
    """:meth:`Verdict.explain`, a pure function of the verdict."""
    word = "PASSED" if verdict.passed else "FAILED"
    run = f"run {verdict.run_id}, {verdict.status}"
    lines = [f"pawl eval {verdict.name} ({verdict.eval_id}): {word} ({run})"]
    lines += _figure_lines(verdict)
    lines.append("reasons:")
    lines += [f"  • {reason}" for reason in verdict.reasons]
    lines += _flipped_lines(verdict)
    lines += _failing_lines(verdict)
    lines.append(f"console: {verdict.console_url}")
    return "\n".join(lines)


# --- building a verdict from a run (pure) --------------------------------------------------


def figures_of(run: Run) -> Figures:
    from pawl.demo.summary import ChangeFigure, RateFigure

    aggregate = run.aggregate_scores or {}
    rate = RateFigure.of(aggregate)
    interval = (rate.low, rate.high) if rate.low is not None and rate.high is not None else None
    change = ChangeFigure.of(aggregate.get("baseline"))
    moved: dict[str, Any] = {}
    if change is not None:
        moved = {
            "delta": change.delta,
            "p_value": change.p_value,
            "compared": change.compared,
            "improved": change.improved,
            "regressed": change.regressed,
        }
    return Figures(
        pass_rate=rate.rate,
        interval=interval,
        interval_level=rate.level,
        scored=rate.scored,
        errored=run.errored_count,
        items=run.item_count,
        **moved,
    )


def reasons_of(run: Run, notes: Sequence[str] = ()) -> tuple[str, ...]:
    """The gates in words (``pawl run``'s sentences), then what else decided the verdict."""
    from pawl.demo.summary import reason_sentence

    reasons = [reason_sentence(reason) for reason in run.verdict_reasons or []]
    if run.status != "completed":
        reasons.append(f"the run ended {run.status}: {run.failure_reason or 'no reason given'}")
    return (*reasons, *notes)
