"""What a CI report says about one run: its figures, and each item's outcome with the
scorers' reasons, the error, and whether its verdict flipped against the baseline.

Pure: results in (``list-eval-results`` rows as JSON), a :class:`CiReport` out. The
terminal lines (:mod:`pawl.demo.ci`), the JUnit file (:mod:`pawl.demo.ci_junit`) and the
Markdown (:mod:`pawl.demo.ci_markdown`) all render one :class:`CiReport`, so they agree.
Trials are reduced per item as the engine reduces them (``chalicelib.stats``, the eval's
``trial_reducer``), so an item's outcome here is the one the run's figures count.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.stats.outcomes import ScorerScore, TrialOutcome, reduce_trials
from pawl.demo.summary import Comparison

PASSED = "passed"
FAILED = "failed"
ERRORED = "errored"
REGRESSED = "regressed"
IMPROVED = "improved"
#: The longest label a line, a test name or a table cell shows (the whole text is elsewhere).
LABEL_CHARS = 80

Json = Mapping[str, Any]
#: C0 and C1 controls (ESC among them), zero-width and bidi formatting characters.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")


@dataclass(frozen=True)
class ItemReport:
    """One dataset item of the run, its trials reduced."""

    dataset_item_id: str
    #: The item's last user message: what a person recognises the item by (None: no text).
    question: str | None
    outcome: str  # PASSED, FAILED or ERRORED
    trial_count: int
    flaky: bool
    #: One line per failing scorer of the trial shown: ``scorer: score 0.00: reasoning``.
    failures: tuple[str, ...]
    #: ``CODE: message`` of an errored item's first trial.
    error: str | None
    #: REGRESSED (pass -> fail) or IMPROVED (fail -> pass) against the baseline; else None.
    flip: str | None
    output: str | None

    @property
    def label(self) -> str:
        """The item id and the start of its question, on one line."""
        question = one_line(self.question or "")
        return f"{self.dataset_item_id} {shorten(question)}" if question else self.dataset_item_id

    @property
    def reason(self) -> str:
        """Why the item did not pass, on one line (empty for a passed item)."""
        if self.error:
            return one_line(self.error)
        return one_line(self.failures[0]) if self.failures else ""


@dataclass(frozen=True)
class CiReport:
    """A finished run as ``pawl run`` reports it."""

    eval_id: str
    eval_name: str
    comparison: Comparison
    items: tuple[ItemReport, ...]
    console_url: str
    #: The run's compare page (None: the run has no baseline).
    compare_url: str | None
    #: Said when there was no baseline to compare with (``--baseline latest-or-none``).
    baseline_note: str | None = None

    def with_outcome(self, outcome: str) -> list[ItemReport]:
        return [item for item in self.items if item.outcome == outcome]

    @property
    def flipped(self) -> list[ItemReport]:
        """Regressions first, then improvements, each in item order."""
        moved = [item for item in self.items if item.flip is not None]
        return sorted(moved, key=lambda item: item.flip != REGRESSED)


def one_line(text: str) -> str:
    """``text`` on one line, control and bidi-override characters as spaces (a terminal
    escape in an agent's output must not recolour a CI log, nor an override reorder it)."""
    return " ".join(_CONTROL.sub(" ", text).split())


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _trial(row: Json, item_id: str) -> TrialOutcome:
    scores = tuple(
        ScorerScore(str(s["scorer"]), float(s["score"]), bool(s["passed"]))
        for s in row.get("scores") or []
    )
    errored = row.get("error") is not None or row.get("passed") is None
    return TrialOutcome(item_id, int(row.get("trial") or 1), errored, scores)


def question_of(row: Json) -> str | None:
    users = [
        m for m in row.get("input") or [] if isinstance(m, Mapping) and m.get("role") == "user"
    ]
    content = users[-1].get("content") if users else None
    return content if isinstance(content, str) else None


def failure_lines(row: Json) -> tuple[str, ...]:
    """Each failing scorer of one result: its score and, when it gave one, its reasoning."""
    lines = []
    for score in row.get("scores") or []:
        if score.get("passed"):
            continue
        line = f"{score.get('scorer')}: score {float(score.get('score') or 0):.2f}"
        reasoning = score.get("reasoning")
        lines.append(f"{line}: {reasoning}" if reasoning else line)
    return tuple(lines)


def error_text(row: Json) -> str | None:
    error = row.get("error")
    if not isinstance(error, Mapping):
        return None
    return f"{error.get('code') or 'ERROR'}: {error.get('message') or ''}".rstrip(": ")


def _own_outcome(trial: TrialOutcome) -> str:
    return ERRORED if trial.errored else (PASSED if trial.passed else FAILED)


def item_report(rows: list[Json], reducer: str, flip: str | None) -> ItemReport:
    """One item from its result rows (one per trial, any order). The trial quoted is the
    first whose own outcome is the item's."""
    rows = sorted(rows, key=lambda row: int(row.get("trial") or 1))
    item_id = str(rows[0]["dataset_item_id"])
    trials = [_trial(row, item_id) for row in rows]
    reduced = reduce_trials(trials, reducer)
    outcome = ERRORED if reduced.errored else (PASSED if reduced.passed else FAILED)
    shown = next(
        (r for r, t in zip(rows, trials, strict=True) if _own_outcome(t) == outcome), rows[0]
    )
    return ItemReport(
        dataset_item_id=item_id,
        question=question_of(shown),
        outcome=outcome,
        trial_count=reduced.trial_count,
        flaky=reduced.flaky,
        failures=failure_lines(shown) if outcome == FAILED else (),
        error=error_text(shown) if outcome == ERRORED else None,
        flip=flip,
        output=shown.get("output") if isinstance(shown.get("output"), str) else None,
    )


def item_reports(
    results: Iterable[Json], reducer: str = "all", flips: Mapping[str, str] | None = None
) -> tuple[ItemReport, ...]:
    """Every item of a run in the order its results came; ``flips`` maps an item id to
    REGRESSED or IMPROVED. Results of a deleted dataset item (no item id) are left out,
    as the run's figures leave them out."""
    by_item: dict[str, list[Json]] = defaultdict(list)
    for row in results:
        item_id = row.get("dataset_item_id")
        if isinstance(item_id, str):
            by_item[item_id].append(row)
    flips = flips or {}
    return tuple(
        item_report(rows, reducer, flips.get(item_id)) for item_id, rows in by_item.items()
    )
