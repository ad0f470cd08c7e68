"""Usage: the metered calls of a project, listed (``/usage/events``) or rolled up
(``/usage/aggregate``), filtered by source, eval, run and time.

Both read one project: a project key its own (another named is 403
``API_KEY_PROJECT_SCOPE``); the admin key names it with ``project_id``. A run or eval of
another project matches nothing, like one that does not exist.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from chalicelib.api.access import on_project
from chalicelib.api.routing import Call, ListQuery, endpoint, page
from chalicelib.domain.base import Page
from chalicelib.domain.usage import GroupBy, UsageAggregate, UsageEvent
from chalicelib.engine import usage as rollups
from chalicelib.ids import EvalId, EvalRunId, ProjectId
from chalicelib.store import usage
from chalicelib.store.usage import UsageFilter

bp = Blueprint(__name__)

TAG = "usage"


_ISO_8601 = re.compile(
    r"\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?"
)


def _iso_8601(value: Any) -> Any:
    """Only an ISO 8601 date or date-time: pydantic alone would read ``0.5`` as a Unix time."""
    if not isinstance(value, str) or not _ISO_8601.fullmatch(value):
        raise ValueError("must be an ISO 8601 date-time, such as 2026-07-01T00:00:00Z")
    return value


Moment = Annotated[datetime, BeforeValidator(_iso_8601)]


class _Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    source: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        pattern=r"^[a-z_]+$",
        description="eval, eval_judge, embedding or decider",
    )
    eval_id: EvalId | None = None
    eval_run_id: EvalRunId | None = None
    since: Moment | None = Field(None, alias="from", description="Inclusive (ISO 8601)")
    until: Moment | None = Field(None, alias="to", description="Inclusive (ISO 8601)")


class UsageEventsQuery(_Filters, ListQuery):
    pass


class UsageAggregateQuery(_Filters):
    group_by: GroupBy


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)  # a time without an offset is UTC


def _filter(query: _Filters) -> UsageFilter:
    # ``from`` after ``to`` is an empty window: it matches nothing (no refusal).
    since, until = _utc(query.since), _utc(query.until)
    return UsageFilter(
        source=query.source,
        eval_id=query.eval_id,
        run_id=query.eval_run_id,
        since=since,
        until=until,
    )


@endpoint(
    bp,
    "/api/v1/usage/events",
    "GET",
    access=on_project("usage:ListUsageEvents", listing=True),
    query=UsageEventsQuery,
    response=Page[UsageEvent],
    tag=TAG,
    operation_id="listUsageEvents",
)
def list_usage_events(call: Call[Any, UsageEventsQuery]) -> dict[str, Any]:
    """List a project's usage events, oldest first: one per metered call."""
    query = call.query
    project_id = call.caller.listing_project(query.project_id)
    f = _filter(query)
    return page(usage.list_events(project_id, f, query.window()))


@endpoint(
    bp,
    "/api/v1/usage/aggregate",
    "GET",
    access=on_project("usage:GetUsage"),
    query=UsageAggregateQuery,
    response=UsageAggregate,
    tag=TAG,
    operation_id="getUsageAggregate",
)
def get_usage_aggregate(call: Call[Any, UsageAggregateQuery]) -> UsageAggregate:
    """Roll a project's usage up by source, eval, model or day (groups sum to the totals)."""
    query = call.query
    project_id = call.caller.listing_project(query.project_id)
    return rollups.aggregate(project_id, _filter(query), query.group_by)
