"""The continuous-score worked examples of ``docs/statistics.md`` (titles ``Continuous: …``)
recomputed through the statistics the settle pass runs: each item's trials reduced as the
engine reduces them, the comparison fed pair by pair. The API-level executor of every
example (``tests/api/test_statistics_examples.py``) runs them through real runs; this
checks their figures where they are made, without a server."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chalicelib.stats import BaselineComparator, ScorerScore, TrialOutcome, reduce_trials

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
BLOCK = re.compile(r"```json pawl-example\n(.*?)```", re.DOTALL)


def _examples() -> list[dict[str, Any]]:
    blocks = [json.loads(text) for text in BLOCK.findall(DOC.read_text(encoding="utf-8"))]
    return [block for block in blocks if block["title"].startswith("Continuous:")]


def _side(item_id: str, scores: list[float], group: str | None) -> Any:
    trials = [
        TrialOutcome(item_id, n, False, (ScorerScore("numeric", float(s), s >= 0.5),))
        for n, s in enumerate(scores, start=1)
    ]
    return reduce_trials(trials, "all", group=group)


def _run(example: dict[str, Any]) -> dict[str, Any]:
    group_by = example["eval"].get("group_by")
    comparator = BaselineComparator("evrun_baseline", group_by)
    for index, item in enumerate(example["items"]):
        item_id = f"dsit_{index:04d}"
        label = (item.get("metadata") or {}).get(group_by) if group_by else None
        group = label if isinstance(label, str) else None
        comparator.add(
            _side(item_id, item["current"], group), _side(item_id, item["baseline"], group)
        )
    return {"aggregate_scores": {"baseline": comparator.result()}}


def _at(body: Any, path: str) -> Any:
    for part in path.split("."):
        body = body[part]
    return body


def _decimals(text: float) -> int:
    exponent = Decimal(repr(text)).as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def test_the_doc_has_the_continuous_examples() -> None:
    assert len(_examples()) >= 3


@pytest.mark.parametrize("example", _examples(), ids=lambda e: e["title"])
def test_each_continuous_example_holds(example: dict[str, Any]) -> None:
    body = _run(example)
    for path, expected in example["expect"].items():
        actual = _at(body, path)
        if isinstance(expected, float) and not isinstance(expected, bool):
            assert round(actual, _decimals(expected)) == expected, (path, actual)
        else:
            assert actual == expected, (path, actual)
