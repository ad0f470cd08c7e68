"""Usage events: written beside what they meter, read back by project, run or eval.

Events are not written one row each. A work batch's events go in one usage row inside the
transaction that records its results (:func:`batch_row`, used by ``store.results``), so
metering adds no AWS call per item; a standalone generation or decision writes its row in
the same call as its own row. A row holds its events as one JSON list; readers expand
it. Keys and indexes: ``docs/dynamodb.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chalicelib import ids
from chalicelib.domain.deciders import Decision
from chalicelib.domain.runs import Generation, ResultRecord
from chalicelib.domain.usage import SOURCE_DECIDER, UsageComponent, UsageEvent
from chalicelib.store.pagination import (
    Listing,
    Window,
    is_count,
    malformed_cursor,
    pack_cursor,
    unpack_cursor,
)
from chalicelib.store.project_scoped import creation_stamp
from chalicelib.store.usage_models import UsageModel

#: Rows read per query page while listing (a row holds one batch's events).
_ROWS_PER_PAGE = 25
#: A row key is a timestamp, '#' and an id: far shorter than this.
_MAX_CURSOR_KEY = 200
#: The fields a row keeps per event (the row holds project, run, eval and time).
_EVENT_FIELDS = (
    "id",
    "source",
    "provider",
    "model",
    "ai_provider_id",
    "agent_id",
    "generation_id",
    "dataset_item_id",
    "trial",
    "decision_id",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)


@dataclass(frozen=True)
class UsageFilter:
    """What a list or aggregate reads: every filter optional, time bounds inclusive."""

    source: str | None = None
    eval_id: str | None = None
    run_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


# --- writing ----------------------------------------------------------------------------------


def _compact(event: dict[str, Any]) -> dict[str, Any]:
    return {k: event[k] for k in _EVENT_FIELDS if event.get(k) not in (None, 0, 0.0)}


def new_row(
    project_id: str,
    events: list[dict[str, Any]],
    *,
    run_id: str | None = None,
    eval_id: str | None = None,
) -> UsageModel:
    """A usage row holding ``events`` (each gets its ``ue_`` id here), stamped now."""
    created_at, usage_key = creation_stamp(ids.new_id("usage_row"))
    return UsageModel(
        project_id=project_id,
        usage_key=usage_key,
        created_at=created_at,
        run_id=run_id,
        eval_id=eval_id,
        events=[_compact({**e, "id": ids.new_id("usage_event")}) for e in events],
    )


def batch_row(run_id: str, records: Iterable[ResultRecord]) -> UsageModel | None:
    """The usage row of a work batch's records; None when none of them spent anything."""
    events: list[dict[str, Any]] = []
    project_id = eval_id = None
    for record in records:
        result, generation = record.result, record.generation
        if not result.usage or generation is None:
            continue  # spend comes from a generation and what scored it
        project_id, eval_id = generation.project_id, record.eval_id
        for entry in result.usage:
            events.append(
                {
                    **entry.model_dump(),
                    "agent_id": generation.agent_id,
                    "generation_id": generation.id,
                    "dataset_item_id": result.dataset_item_id,
                    "trial": result.trial,
                }
            )
    if project_id is None or not events:
        return None
    return new_row(project_id, events, run_id=run_id, eval_id=eval_id)


def generation_row(generation: Generation) -> UsageModel | None:
    """The usage row of a generation outside any eval (``source`` null), if it spent."""
    usage = generation.usage or {}
    if not usage:
        return None
    event = {
        "source": generation.source,
        "agent_id": generation.agent_id,
        "generation_id": generation.id,
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "cost_usd": float(usage.get("cost_usd") or 0.0),
    }
    return new_row(generation.project_id, [event])


def decision_row(decision: Decision) -> UsageModel:
    """The usage row of a decision asked outside a run (``source: decider``)."""
    usage = decision.usage
    event = {
        "source": SOURCE_DECIDER,
        "model": usage.model,
        "decision_id": decision.id,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
    }
    return new_row(decision.project_id, [event])


def row_cost(row: UsageModel | None) -> float:
    if row is None:
        return 0.0
    return sum(float(e.get("cost_usd") or 0.0) for e in row.events)


# --- reading ----------------------------------------------------------------------------------


def _stamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _range(f: UsageFilter, resume_at: str | None) -> Any:
    """The key condition: ``since``/``until`` inclusive, and not before ``resume_at``."""
    lower = max(k for k in (f.since and _stamp(f.since), resume_at, "") if k is not None)
    # '~' sorts after every id character, so the whole microsecond of ``until`` is in.
    upper = f"{_stamp(f.until)}#~" if f.until else None
    if lower and upper:
        return UsageModel.usage_key.between(lower, upper)
    if lower:
        return UsageModel.usage_key >= lower
    if upper:
        return UsageModel.usage_key <= upper
    return None


def _rows(project_id: str, f: UsageFilter, resume_at: str | None = None) -> Iterator[UsageModel]:
    """The project's usage rows the filter can match, oldest first."""
    condition = _range(f, resume_at)
    rows: Iterable[UsageModel]
    if f.run_id is not None:
        rows = UsageModel.by_run.query(
            f.run_id, range_key_condition=condition, page_size=_ROWS_PER_PAGE
        )
    elif f.eval_id is not None:
        rows = UsageModel.by_eval.query(
            f.eval_id, range_key_condition=condition, page_size=_ROWS_PER_PAGE
        )
    else:
        rows = UsageModel.query(
            project_id,
            range_key_condition=condition,
            consistent_read=True,
            page_size=_ROWS_PER_PAGE,
        )
    for row in rows:
        # An index is keyed by run or eval id alone: another project's rows are not ours.
        if row.project_id != project_id:
            continue
        if f.eval_id is not None and row.eval_id != f.eval_id:
            continue
        yield row


def _events(row: UsageModel, source: str | None) -> list[UsageEvent]:
    return [
        _event(row, stored)
        for stored in row.events
        if source is None or stored.get("source") == source
    ]


def _event(row: UsageModel, stored: dict[str, Any]) -> UsageEvent:
    tokens_in, tokens_out = int(stored.get("input_tokens", 0)), int(stored.get("output_tokens", 0))
    return UsageEvent(
        **{k: v for k, v in stored.items() if k in _EVENT_FIELDS},
        project_id=row.project_id,
        eval_id=row.eval_id,
        eval_run_id=row.run_id,
        components=[
            UsageComponent(component="input_tokens", quantity=tokens_in),
            UsageComponent(component="output_tokens", quantity=tokens_out),
        ],
        created_at=row.created_at,
    )


def iter_events(project_id: str, f: UsageFilter) -> Iterator[UsageEvent]:
    """Every event the filter matches, oldest first (the aggregate reads them all)."""
    for row in _rows(project_id, f):
        yield from _events(row, f.source)


def list_events(project_id: str, f: UsageFilter, window: Window) -> Listing[UsageEvent]:
    """One page of events, oldest first, by cursor or by ``offset``.

    A row holds many events, so the cursor names the row to resume in and how many of its
    matching events were already returned (with the page's position and the total).
    ``total`` is counted once per listing, by reading the matching rows (as the aggregate
    does); an ``offset`` skips events from the first matching row.
    """
    scope = _cursor_scope(project_id, f)
    position = _decode_cursor(window.cursor, scope)
    total = position.total if position.total is not None else count_events(project_id, f)
    before = position.before if window.cursor else window.offset
    to_skip = 0 if window.cursor else window.offset
    page: list[UsageEvent] = []
    for row in _rows(project_id, f, position.row_key):
        events = _events(row, f.source)
        consumed = position.skip if row.usage_key == position.row_key else 0
        dropped = min(to_skip, max(0, len(events) - consumed))
        consumed, to_skip = consumed + dropped, to_skip - dropped
        room = window.limit - len(page)
        page.extend(events[consumed : consumed + room])
        if len(page) >= window.limit:
            after = _Position(row.usage_key, consumed + room, before + len(page), total)
            return Listing(page, _encode_cursor(after, scope), window.limit, before, total)
    return Listing(page, None, window.limit, before, total)


def count_events(project_id: str, f: UsageFilter) -> int:
    return sum(len(_events(row, f.source)) for row in _rows(project_id, f))


@dataclass(frozen=True)
class _Position:
    row_key: str | None = None
    skip: int = 0
    before: int = 0
    total: int | None = None


def _cursor_scope(project_id: str, f: UsageFilter) -> str:
    """The list a cursor belongs to: a project's events under one filter."""
    return f"usage|{project_id}|{f!r}"


def _encode_cursor(position: _Position, scope: str) -> str:
    return pack_cursor(
        {"k": position.row_key, "i": position.skip, "o": position.before, "t": position.total},
        scope,
    )


def _decode_cursor(cursor: str | None, scope: str) -> _Position:
    if not cursor:
        return _Position()
    value = unpack_cursor(cursor, scope)
    if (
        not isinstance(value, dict)
        or set(value) != {"k", "i", "o", "t"}
        or not isinstance(value["k"], str)
        or not 0 < len(value["k"]) <= _MAX_CURSOR_KEY
        or not all(is_count(value[name]) for name in ("i", "o", "t"))
    ):
        raise malformed_cursor()
    return _Position(value["k"], value["i"], value["o"], value["t"])
