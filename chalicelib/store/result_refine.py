"""A run's results filtered and sorted beyond what a DynamoDB key range can say.

``list-eval-results`` (pawl additions) filters by outcome including ``flaky`` (an item
whose scored trials disagree), by the item's group under the eval's ``group_by``, by one
scorer and a range of its score, by text in the output, and sorts by that scorer's
score. None of these is a key condition, and ``flaky`` and the group need more than one
row to decide, so a refined page reads **every result row of the run** (lean: keys,
outcome and scores; the output too, from S3 when offloaded, only with ``text``; the
items' metadata in BatchGetItems only with ``group``), then fetches its own rows whole
(one BatchGetItem). Each page costs one pass over the run: linear in its results, and
the unrefined listing (:func:`chalicelib.store.results.list_results`) is untouched.

The cursor is signed like every other (:func:`~chalicelib.store.pagination.pack_cursor`)
for a scope naming the run and the whole refinement, and holds the sort key of the last
row served: the next page starts strictly after it, so results recorded meanwhile never
repeat or shift a row already seen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from chalicelib.domain.runs import EvalResult, RunState
from chalicelib.store import blobs, results
from chalicelib.store import shards as sharding
from chalicelib.store.models import ResultModel
from chalicelib.store.outcome_rows import batch_get_metadata
from chalicelib.store.pagination import (
    Listing,
    Window,
    is_count,
    malformed_cursor,
    pack_cursor,
    unpack_cursor,
)
from chalicelib.store.results import from_model

#: The outcomes a refined listing filters by: the row outcomes and ``flaky``.
REFINED_OUTCOMES = ("passed", "failed", "errored", "flaky")
_LEAN = ["run_id", "result_key", "dataset_item_id", "passed", "error", "scores"]
_BATCH_GET = 100
#: A row's place in a listing: (has no score, signed score, result key).
SortKey = tuple[int, float, str]


@dataclass(frozen=True)
class Refinement:
    """What a refined listing keeps and how it orders it (None: not asked)."""

    outcome: str | None = None
    group_by: str | None = None
    group: str | None = None
    scorer: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    text: str | None = None
    #: None: item then trial order; else by ``scorer``'s score (rows without one last).
    descending: bool | None = None
    item_id: str | None = None

    def scope(self, run_id: str) -> str:
        return f"ResultModel.refined|{run_id}|{json.dumps(asdict(self), sort_keys=True)}"


@dataclass(frozen=True)
class _Row:
    key: str
    item_id: str
    passed: bool | None
    errored: bool
    score: float | None
    output: str | None


def _score_of(scores: Any, scorer: str | None) -> float | None:
    for entry in scores or []:
        if isinstance(entry, dict) and entry.get("scorer") == scorer:
            value = entry.get("score")
            return float(value) if isinstance(value, int | float) else None
    return None


def _lean_rows(run_id: str, shards: int, refine: Refinement) -> list[_Row]:
    wanted = [*_LEAN, "output", "output_s3_key"] if refine.text is not None else _LEAN
    rows = []
    if refine.item_id:
        within = ResultModel.result_key.startswith(f"{refine.item_id}#")
        key = sharding.item_partition(run_id, refine.item_id, shards)
        models: Iterable[ResultModel] = ResultModel.query(
            key, range_key_condition=within, consistent_read=True, attributes_to_get=wanted
        )
    else:
        models = results.iter_rows(run_id, shards, [*wanted, "run_id", "result_key"])
    for model in models:
        output = None
        if refine.text is not None:
            output = model.output
            if output is None and model.output_s3_key:
                output = blobs.get_text(model.output_s3_key)
        rows.append(
            _Row(
                key=model.result_key,
                item_id=model.dataset_item_id,
                passed=model.passed,
                errored=model.error is not None,
                score=_score_of(model.scores, refine.scorer),
                output=output,
            )
        )
    return rows


def flaky_items(rows: Iterable[_Row]) -> set[str]:
    """Items whose scored (not errored) trials disagree on ``passed``, as the aggregate's
    ``flaky_item_count`` counts them."""
    verdicts: dict[str, set[bool | None]] = {}
    for row in rows:
        if not row.errored:
            verdicts.setdefault(row.item_id, set()).add(row.passed)
    return {item_id for item_id, seen in verdicts.items() if len(seen) > 1}


def _outcome_keeps(row: _Row, outcome: str | None, flaky: set[str]) -> bool:
    if outcome is None:
        return True
    if outcome == "flaky":
        return row.item_id in flaky
    if outcome == "errored":
        return row.errored
    return not row.errored and row.passed is (outcome == "passed")


def _score_keeps(row: _Row, refine: Refinement) -> bool:
    if refine.scorer is None:
        return True
    if row.score is None:
        return False
    low, high = refine.min_score, refine.max_score
    return (low is None or row.score >= low) and (high is None or row.score <= high)


def _groups(rows: list[_Row], refine: Refinement) -> dict[str, Any]:
    if refine.group is None or refine.group_by is None:
        return {}
    metadata = batch_get_metadata(row.item_id for row in rows)
    return {item_id: (meta or {}).get(refine.group_by) for item_id, meta in metadata.items()}


def matching(rows: list[_Row], refine: Refinement) -> list[_Row]:
    """The rows the refinement keeps, in its order."""
    flaky = flaky_items(rows) if refine.outcome == "flaky" else set()
    groups = _groups(rows, refine)
    needle = refine.text.casefold() if refine.text is not None else None
    kept = [
        row
        for row in rows
        if _outcome_keeps(row, refine.outcome, flaky)
        and _score_keeps(row, refine)
        and (refine.group is None or groups.get(row.item_id) == refine.group)
        and (needle is None or needle in (row.output or "").casefold())
    ]
    return sorted(kept, key=lambda row: sort_key(row, refine.descending))


def sort_key(row: _Row, descending: bool | None) -> SortKey:
    if descending is None or row.score is None:
        return (0 if descending is None else 1, 0.0, row.key)
    return (0, -row.score if descending else row.score, row.key)


def _after(cursor: str | None, scope: str) -> tuple[SortKey, int] | None:
    if not cursor:
        return None
    value = unpack_cursor(cursor, scope)
    if not isinstance(value, dict) or set(value) != {"a", "o"}:
        raise malformed_cursor()
    after, offset = value["a"], value["o"]
    if not (isinstance(after, list) and len(after) == 3 and is_count(offset)):
        raise malformed_cursor()
    flag, score, key = after
    if flag not in (0, 1) or not isinstance(score, int | float) or not isinstance(key, str):
        raise malformed_cursor()
    return (flag, float(score), key), offset


def _whole(run_id: str, shards: int, keys: list[str]) -> list[EvalResult]:
    found: dict[str, ResultModel] = {}
    for model in results.get_many([(run_id, key) for key in keys], {run_id: shards}):
        found[model.result_key] = model
    return [from_model(found[key]) for key in keys if key in found]


def list_refined(run: RunState, window: Window, refine: Refinement) -> Listing[EvalResult]:
    """One page of the run's results the refinement keeps, in its order (see the module)."""
    scope = refine.scope(run.id)
    after = _after(window.cursor, scope)
    kept = matching(_lean_rows(run.id, run.shards, refine), refine)
    total = len(kept) if window.counted else None
    if after is None:
        offset, remaining = window.offset, kept[window.offset :]
    else:
        position, offset = after
        remaining = [row for row in kept if sort_key(row, refine.descending) > position]
    served = remaining[: window.limit]
    next_cursor = None
    if len(remaining) > len(served):
        last = sort_key(served[-1], refine.descending)
        next_cursor = pack_cursor({"a": list(last), "o": offset + len(served)}, scope)
    items = _whole(run.id, run.shards, [row.key for row in served])
    return Listing(items, next_cursor, window.limit, offset, total)
