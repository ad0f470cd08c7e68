"""The usage table. Access patterns and keys: ``docs/dynamodb.md``."""

from __future__ import annotations

from pynamodb.attributes import JSONAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.store.base import PawlModel, register


class _UsageByRun(GlobalSecondaryIndex["UsageModel"]):
    """Sparse: the usage rows of one eval run, oldest first."""

    class Meta:
        index_name = "by_run"
        projection = AllProjection()

    run_id = UnicodeAttribute(hash_key=True)
    usage_key = UnicodeAttribute(range_key=True)


class _UsageByEval(GlobalSecondaryIndex["UsageModel"]):
    """Sparse: the usage rows of one eval's runs, oldest first."""

    class Meta:
        index_name = "by_eval"
        projection = AllProjection()

    eval_id = UnicodeAttribute(hash_key=True)
    usage_key = UnicodeAttribute(range_key=True)


@register
class UsageModel(PawlModel):
    """One recording's usage events: a work batch's (written in the transaction that
    records its results) or a standalone generation's or decision's (beside its row).

    ``usage_key`` is ``<created_at with microseconds>#<row id>``: a project's rows in
    time order, and the event time range is a key condition.
    """

    class Meta:
        short_name = "usage"

    project_id = UnicodeAttribute(hash_key=True)
    usage_key = UnicodeAttribute(range_key=True)
    created_at = UnicodeAttribute()
    run_id = UnicodeAttribute(null=True)
    eval_id = UnicodeAttribute(null=True)
    #: The events, each a dict of :class:`chalicelib.domain.usage.UsageEvent` fields
    #: without the ones the row holds (project, run, eval, time).
    events = JSONAttribute()
    by_run = _UsageByRun()
    by_eval = _UsageByEval()
