"""The items whose verdict flipped between a baseline run and its candidate, for the report.

The counts are the API's (``baseline_comparison.flipped``); these are the items behind them,
read from ``list-eval-results`` of both runs and reduced per item as the engine reduces
trials (:func:`chalicelib.stats.outcomes.reduce_trials`, the eval's ``trial_reducer``).
The report shows the first :data:`MAX_SHOWN`, regressions first, and says how many more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.stats.outcomes import ScorerScore, TrialOutcome, reduce_trials
from pawl.transport import PawlClient, Run

MAX_SHOWN = 50
REGRESSED = "regressed"
IMPROVED = "improved"

Json = dict[str, Any]


@dataclass(frozen=True)
class ItemVerdict:
    dataset_item_id: str
    passed: bool
    #: The output of the item's first scored trial (None: the agent gave none).
    output: str | None
    #: The item's last user message, the question the outputs answer.
    question: str | None


@dataclass(frozen=True)
class FlippedItem:
    dataset_item_id: str
    direction: str  # REGRESSED (pass -> fail) or IMPROVED (fail -> pass)
    question: str | None
    baseline_output: str | None
    candidate_output: str | None


@dataclass(frozen=True)
class Flips:
    shown: list[FlippedItem]
    #: Flipped items beyond :data:`MAX_SHOWN` the report leaves out.
    more: int

    @property
    def total(self) -> int:
        return len(self.shown) + self.more


def _trial(result: Mapping[str, Any], item_id: str) -> TrialOutcome:
    scores = tuple(
        ScorerScore(str(s["scorer"]), float(s["score"]), bool(s["passed"]))
        for s in result.get("scores") or []
    )
    errored = result.get("error") is not None or result.get("passed") is None
    return TrialOutcome(item_id, int(result.get("trial") or 1), errored, scores)


def _question(result: Mapping[str, Any]) -> str | None:
    users = [m for m in result.get("input") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    return content if isinstance(content, str) else None


def item_verdicts(
    results: Iterable[Mapping[str, Any]], reducer: str = "all"
) -> dict[str, ItemVerdict]:
    """Each scored item's verdict; errored items (every trial errored) are left out, as in
    the API's figures, and so are results whose dataset item was deleted."""
    by_item: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for result in results:
        item_id = result.get("dataset_item_id")
        if isinstance(item_id, str):
            by_item[item_id].append(result)
    verdicts = {}
    for item_id, rows in by_item.items():
        rows.sort(key=lambda row: int(row.get("trial") or 1))
        outcome = reduce_trials([_trial(row, item_id) for row in rows], reducer)
        if outcome.errored or outcome.passed is None:
            continue
        scored = next(row for row in rows if _trial(row, item_id).errored is False)
        verdicts[item_id] = ItemVerdict(
            item_id, outcome.passed, scored.get("output"), _question(scored)
        )
    return verdicts


def flipped_items(
    baseline: Mapping[str, ItemVerdict], candidate: Mapping[str, ItemVerdict]
) -> list[FlippedItem]:
    """Items scored in both runs whose verdict differs: regressions first, then by item id."""
    flipped = [
        FlippedItem(
            item_id,
            IMPROVED if now.passed else REGRESSED,
            now.question or baseline[item_id].question,
            baseline[item_id].output,
            now.output,
        )
        for item_id, now in candidate.items()
        if item_id in baseline and baseline[item_id].passed != now.passed
    ]
    return sorted(flipped, key=lambda f: (f.direction != REGRESSED, f.dataset_item_id))


def capped(flipped: list[FlippedItem], limit: int = MAX_SHOWN) -> Flips:
    return Flips(shown=flipped[:limit], more=max(0, len(flipped) - limit))


def fetch_flips(client: PawlClient, candidate: Run, baseline: Run) -> Flips:
    """The flipped items of ``candidate`` against ``baseline``, read through the API."""
    reducer = str(client.get_eval(candidate.eval_id).get("trial_reducer") or "all")
    before = item_verdicts(client.iter_results(baseline.eval_id, baseline.id), reducer)
    after = item_verdicts(client.iter_results(candidate.eval_id, candidate.id), reducer)
    return capped(flipped_items(before, after))
