"""The trial-aware worked examples of docs/statistics.md, through the statistics directly:
each ``json pawl-example`` block in the ``items`` form with ``trials > 1`` is reduced,
aggregated, compared and judged as settle does, and its ``expect`` paths checked (floats
to the decimals written). The API runs the same blocks (tests/api/test_statistics_examples.py);
this checks the documented figures even where that harness is not present."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chalicelib.stats import (
    BaselineComparator,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    merge_join,
    reduce_trials,
    verdict,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
BLOCK = re.compile(r"```json pawl-example\n(.*?)\n```", re.DOTALL)


def trial_examples() -> list[dict[str, Any]]:
    blocks = [json.loads(text) for text in BLOCK.findall(DOC.read_text())]
    return [b for b in blocks if "items" in b and int(b["eval"].get("trials", 1)) > 1]


def _item(index: int, scores: list[float], reducer: str) -> Any:
    trials = [
        TrialOutcome(
            dataset_item_id=f"dsit_{index:04d}",
            trial=number,
            errored=False,
            # A trial passes when its score is at least 0.5 (the examples' format).
            scores=(ScorerScore("numeric", float(score), score >= 0.5),),
        )
        for number, score in enumerate(scores, start=1)
    ]
    return reduce_trials(trials, reducer)


def settle_example(example: dict[str, Any]) -> dict[str, Any]:
    settings = example["eval"]
    trials, reducer = int(settings["trials"]), settings.get("trial_reducer", "all")
    items = example["items"]
    current = [_item(n, item["current"], reducer) for n, item in enumerate(items)]
    aggregator = RunAggregator(None, trials)
    for item in current:
        aggregator.add(item)
    aggregate = aggregator.result()
    comparison = None
    if any("baseline" in item for item in items):
        before = [_item(n, i["baseline"], reducer) for n, i in enumerate(items) if "baseline" in i]
        comparator = BaselineComparator("evrun_baseline", None, trials)
        for here, there in merge_join(current, before):
            comparator.add(here, there)
        comparison = aggregate["baseline"] = comparator.result()
    passed, reasons = verdict(
        aggregate,
        settings.get("pass_threshold"),
        settings.get("max_regression"),
        comparison,
        on_inconclusive=settings.get("on_inconclusive", "pass"),
    )
    return {"aggregate_scores": aggregate, "passed": passed, "verdict_reasons": reasons}


def lookup(document: Any, path: str) -> Any:
    for part in path.split("."):
        name, *indexes = re.split(r"\[(\d+)\]", part)
        if name:
            document = document[name]
        for index in (i for i in indexes if i):
            document = document[int(index)]
    return document


def check(actual: Any, expected: Any, path: str) -> None:
    if isinstance(expected, float) and not isinstance(expected, bool):
        decimals = max(0, -Decimal(repr(expected)).as_tuple().exponent)  # type: ignore[operator]
        assert round(actual, decimals) == expected, (path, actual, expected)
    else:
        assert actual == expected, (path, actual, expected)


def test_the_doc_has_the_trial_examples() -> None:
    titles = [example["title"] for example in trial_examples()]
    assert len(titles) >= 4, titles


@pytest.mark.parametrize("example", trial_examples(), ids=lambda e: e["title"][:40])
def test_each_trial_example_holds(example: dict[str, Any]) -> None:
    settled = settle_example(example)
    for path, expected in example["expect"].items():
        check(lookup(settled, path), expected, path)
