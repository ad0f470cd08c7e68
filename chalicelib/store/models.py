"""Every DynamoDB table pawl uses. Access patterns and keys: ``docs/dynamodb.md``.

JSON-shaped fields (messages, metadata, configs, aggregates) are stored as JSON strings
(``JSONAttribute``): they are read and written whole, never queried into.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    IncludeProjection,
    KeysOnlyProjection,
)

from chalicelib.store.base import IdModel, PawlModel, register


class _ByProject(GlobalSecondaryIndex["IdModel"]):
    """Resources of one project, oldest first."""

    class Meta:
        index_name = "by_project"
        projection = AllProjection()

    project_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


class ProjectScoped:
    """Mixin for a resource that belongs to one project and lists oldest first in it.

    ``created_key`` is ``<created_at with microseconds>#<id>`` (see
    :func:`chalicelib.store.project_scoped.creation_stamp`); the helpers of
    :mod:`chalicelib.store.project_scoped` read and write these attributes. PynamoDB
    gives every model its own copy of the index.
    """

    project_id = UnicodeAttribute()
    created_at = UnicodeAttribute()
    created_key = UnicodeAttribute()
    by_project = _ByProject()


@register
class ProjectModel(IdModel):
    class Meta:
        short_name = "projects"

    name = UnicodeAttribute()
    default_ai_provider_id = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()


@register
class NameClaimModel(PawlModel):
    """One row per (project, kind, name): the conditional write that makes names unique."""

    class Meta:
        short_name = "names"

    key = UnicodeAttribute(hash_key=True)
    resource_id = UnicodeAttribute()


@register
class ApiKeyModel(ProjectScoped, IdModel):
    class Meta:
        short_name = "api-keys"

    name = UnicodeAttribute()
    key_hash = UnicodeAttribute()
    prefix = UnicodeAttribute()
    # The policies attached to the key, in the order given; absent or empty: none, the
    # key reaches all of its project. Each policy lists the key in its ``key_ids``.
    policy_ids: ListAttribute[str] = ListAttribute(null=True)  # a list of strings


@register
class PolicyModel(IdModel):
    """A global IAM policy (not project-scoped, as SOAT has it).

    ``key_ids`` holds the keys it is attached to, written in the same transaction as the
    key: a delete conditioned on it being absent cannot strand a key (see store/policies.py).
    """

    class Meta:
        short_name = "policies"

    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    document = JSONAttribute()
    key_ids = UnicodeSetAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()


@register
class AgentModel(ProjectScoped, IdModel):
    class Meta:
        short_name = "agents"

    name = UnicodeAttribute()
    version = NumberAttribute()
    type = UnicodeAttribute()
    config = JSONAttribute()
    output_schema = JSONAttribute(null=True)
    updated_at = UnicodeAttribute()
    # How many evals bind this agent, and a revision bumped by every eval write that
    # binds it: agent delete/update condition on them (see store/evals.py).
    eval_refs = NumberAttribute(default=0)
    refs_rev = NumberAttribute(default=0)
    # The staged rollout (``AgentRelease`` as JSON), absent when none is active, and a
    # revision bumped by every release write: promote/abort condition on it.
    active_release = JSONAttribute(null=True)
    release_rev = NumberAttribute(default=0)


@register
class AgentVersionModel(PawlModel):
    """Immutable snapshot written by every agent create or update."""

    class Meta:
        short_name = "agent-versions"

    agent_id = UnicodeAttribute(hash_key=True)
    version = NumberAttribute(range_key=True)
    name = UnicodeAttribute()
    type = UnicodeAttribute()
    config = JSONAttribute()
    output_schema = JSONAttribute(null=True)
    label = UnicodeAttribute(null=True)
    eval_run_id = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()


@register
class DatasetModel(ProjectScoped, IdModel):
    class Meta:
        short_name = "datasets"

    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    updated_at = UnicodeAttribute()


class _ItemsByDataset(GlobalSecondaryIndex["DatasetItemModel"]):
    class Meta:
        index_name = "by_dataset"
        projection = AllProjection()

    dataset_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


@register
class DatasetItemModel(IdModel):
    class Meta:
        short_name = "dataset-items"

    dataset_id = UnicodeAttribute()
    project_id = UnicodeAttribute()
    input = JSONAttribute()
    expected_output = UnicodeAttribute(null=True)
    metadata = JSONAttribute()
    source_generation_id = UnicodeAttribute(null=True)
    #: The input messages' contents and the expected output, case-folded, for ``?q=``
    #: (``store.datasets.search_text``); absent on an item written before it existed or
    #: whose text passes ``SEARCH_TEXT_MAX_BYTES`` (those are matched case-sensitively).
    search_text = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    created_key = UnicodeAttribute()
    by_dataset = _ItemsByDataset()


class _EvalsByDataset(GlobalSecondaryIndex["EvalModel"]):
    class Meta:
        index_name = "by_dataset"
        projection = KeysOnlyProjection()

    dataset_id = UnicodeAttribute(hash_key=True)


class _EvalsByAgent(GlobalSecondaryIndex["EvalModel"]):
    class Meta:
        index_name = "by_agent"
        projection = KeysOnlyProjection()

    agent_id = UnicodeAttribute(hash_key=True)


@register
class EvalModel(ProjectScoped, IdModel):
    class Meta:
        short_name = "evals"

    name = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    dataset_id = UnicodeAttribute()
    scorers = JSONAttribute()
    pass_threshold = NumberAttribute(null=True)
    group_by = UnicodeAttribute(null=True)
    trials = NumberAttribute(default=1)
    trial_reducer = UnicodeAttribute(default="all")
    max_regression = NumberAttribute(null=True)
    on_inconclusive = UnicodeAttribute(null=True)  # absent on evals created before it: "pass"
    max_concurrency = NumberAttribute(null=True)  # absent on evals created before it existed
    max_cost_usd = NumberAttribute(null=True)
    updated_at = UnicodeAttribute()
    #: The eval's run rows, added in the write that creates (or withdraws) a run: the
    #: runs list's ``total``. Read only when ``runs_counted`` (an eval created before the
    #: counter has it partial or absent; its total is a COUNT query).
    run_count = NumberAttribute(null=True)
    runs_counted = BooleanAttribute(null=True)
    by_dataset = _EvalsByDataset()
    by_agent = _EvalsByAgent()


class _RunsByEval(GlobalSecondaryIndex["RunModel"]):
    """Runs of one eval; queried newest first."""

    class Meta:
        index_name = "by_eval"
        projection = AllProjection()

    eval_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


class _ActiveRuns(GlobalSecondaryIndex["RunModel"]):
    """Sparse: only non-terminal runs carry ``active``; the reaper scans it."""

    class Meta:
        index_name = "active"
        projection = KeysOnlyProjection()

    active = UnicodeAttribute(hash_key=True)
    last_activity_at = UnicodeAttribute(range_key=True)


class _RunsByAgent(GlobalSecondaryIndex["RunModel"]):
    """Runs of one agent: whether it has run history (formation teardown, agent delete)."""

    class Meta:
        index_name = "by_agent"
        projection = KeysOnlyProjection()

    agent_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


@register
class RunModel(IdModel):
    class Meta:
        short_name = "runs"

    eval_id = UnicodeAttribute()
    project_id = UnicodeAttribute()
    status = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    agent_version = NumberAttribute()
    decider_versions = JSONAttribute(null=True)
    baseline_run_id = UnicodeAttribute(null=True)
    trigger_id = UnicodeAttribute(null=True)
    #: The trigger ids whose firings led to this run (event triggers' loop guard).
    causation = JSONAttribute(null=True)
    metadata = JSONAttribute()
    tool_context = JSONAttribute(null=True)
    eval_snapshot = JSONAttribute()
    item_count = NumberAttribute(default=0)
    completed_count = NumberAttribute(default=0)
    errored_count = NumberAttribute(default=0)
    # completed + errored, kept beside them so a condition can compare it with item_count
    # (DynamoDB conditions cannot add).
    recorded_count = NumberAttribute(default=0)
    #: Result rows with ``passed`` true / false, added in the same transaction as the rows:
    #: the ``?outcome=`` list's total. Read only when ``outcomes_counted`` (a run created
    #: before these counters has them partial or absent; its total is a COUNT query).
    passed_count = NumberAttribute(null=True)
    failed_count = NumberAttribute(null=True)
    outcomes_counted = BooleanAttribute(null=True)
    #: What the run's recorded results spent (USD), added in the transaction that records
    #: them: the spend guard reads it (``max_cost_usd``).
    spent_usd = NumberAttribute(default=0)
    fanout_done = BooleanAttribute(default=False)
    #: How many hash keys the run's results, frozen items and counters are spread over
    #: (``store.shards``); absent: one (every run from before sharding, and small runs).
    shards = NumberAttribute(null=True)
    #: The counter rows' sums were written onto this row when the settle was claimed: a
    #: sharded run read after it needs no counter rows.
    counters_folded = BooleanAttribute(null=True)
    aggregate_scores = JSONAttribute(null=True)
    #: The figures of ``aggregate_scores`` a list of runs shows (pass rate, its interval,
    #: the baseline delta and p), written beside it at settle (``{}`` when it is null), so a
    #: summary list never reads the whole aggregate. Absent: settled before it existed.
    headline = JSONAttribute(null=True)
    passed = BooleanAttribute(null=True)
    verdict_reasons = JSONAttribute(null=True)
    failure_reason = UnicodeAttribute(null=True)
    failure_code = UnicodeAttribute(null=True)
    settle_claimed = BooleanAttribute(default=False)
    #: A sliced settle (``engine.settle_slices``): how many slices it was cut into, and the
    #: numbers of the slices whose partial is stored (a set: a redelivered slice adds
    #: nothing, so the slice that completes it is known).
    settle_slices = NumberAttribute(null=True)
    settle_parts_done = NumberSetAttribute(null=True)

    #: An ``early_stop`` run's test settings (seed, margin, alpha, method); absent otherwise.
    early_stop = JSONAttribute(null=True)
    #: Its decision, set once (conditional) by the worker whose look decided, and what it saw.
    stop_decision = UnicodeAttribute(null=True)
    stop_detail = JSONAttribute(null=True)
    #: Its paired counts, added in the transaction that records the results (invariant 3),
    #: and the work items skipped after the decision (they count in ``recorded_count``).
    pair_both = NumberAttribute(null=True)
    pair_improved = NumberAttribute(null=True)
    pair_regressed = NumberAttribute(null=True)
    pair_neither = NumberAttribute(null=True)
    skipped_count = NumberAttribute(null=True)
    started_at = UnicodeAttribute(null=True)
    finished_at = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    created_key = UnicodeAttribute()
    last_activity_at = UnicodeAttribute()
    active = UnicodeAttribute(null=True)
    by_eval = _RunsByEval()
    by_agent = _RunsByAgent()
    active_runs = _ActiveRuns()


@register
class FrozenItemModel(PawlModel):
    """The frozen item set of a run, written by fan-out (and by a sync start).

    Two kinds of row: an item too large to ride in a work message has its own (keyed by
    its id, read by id); the others are packed many to a row (``items``, keyed
    ``page#<first item id>``), so freezing a page of small items is one write.
    """

    class Meta:
        short_name = "run-items"

    run_id = UnicodeAttribute(hash_key=True)
    dataset_item_id = UnicodeAttribute(range_key=True)
    input = JSONAttribute(null=True)
    expected_output = UnicodeAttribute(null=True)
    metadata = JSONAttribute(null=True)
    items = JSONAttribute(null=True)


class _ResultsByGeneration(GlobalSecondaryIndex["ResultModel"]):
    class Meta:
        index_name = "by_generation"
        projection = KeysOnlyProjection()

    generation_id = UnicodeAttribute(hash_key=True)


@register
class ResultModel(PawlModel):
    """One row per (run, item, trial); created with a conditional write, never overwritten."""

    class Meta:
        short_name = "results"

    run_id = UnicodeAttribute(hash_key=True)
    result_key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    eval_id = UnicodeAttribute()
    dataset_item_id = UnicodeAttribute()
    trial = NumberAttribute(default=1)
    input = JSONAttribute()
    expected_output = UnicodeAttribute(null=True)
    output = UnicodeAttribute(null=True)
    output_s3_key = UnicodeAttribute(null=True)
    generation_id = UnicodeAttribute(null=True)
    scores = JSONAttribute()
    passed = BooleanAttribute(null=True)
    error = JSONAttribute(null=True)
    usage = JSONAttribute(null=True)
    attempts = NumberAttribute(null=True)
    created_at = UnicodeAttribute()
    by_generation = _ResultsByGeneration()


class _GenerationsByProject(GlobalSecondaryIndex["GenerationModel"]):
    """A project's generations, newest first (``list-generations``); ``status`` and
    ``agent_id`` are projected so a filter drops index entries, never reads rows."""

    class Meta:
        index_name = "by_project"
        projection = IncludeProjection(["status", "agent_id"])

    project_id = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class _GenerationsByAgent(GlobalSecondaryIndex["GenerationModel"]):
    """An agent's generations, newest first: ``list-generations?agent_id=``, the count an
    agent delete refuses with, and what a forced delete removes (the blob keys with them)."""

    class Meta:
        index_name = "by_agent"
        projection = IncludeProjection(
            ["status", "project_id", "run_id", "output_s3_key", "object_s3_key"]
        )

    agent_id = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


@register
class GenerationModel(IdModel):
    class Meta:
        short_name = "generations"

    project_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    agent_version = NumberAttribute()
    run_id = UnicodeAttribute(null=True)
    dataset_item_id = UnicodeAttribute(null=True)
    input = JSONAttribute(null=True)
    output = UnicodeAttribute(null=True)
    output_s3_key = UnicodeAttribute(null=True)
    object = JSONAttribute(null=True)
    object_s3_key = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    error = JSONAttribute(null=True)
    usage = JSONAttribute(null=True)
    latency_ms = NumberAttribute(default=0)
    source = UnicodeAttribute(null=True)
    content_purged = BooleanAttribute(default=False)
    #: An eval generation's content lives on its result row only (one copy): the result's
    #: hash key and range key. Absent: the content is on this row (a standalone generation,
    #: or an eval generation written before).
    result_partition = UnicodeAttribute(null=True)
    result_key = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    by_project = _GenerationsByProject()
    by_agent = _GenerationsByAgent()


@register
class WebhookModel(ProjectScoped, IdModel):
    """A project's webhook subscription. ``secret`` (sealed) signs deliveries; only the
    create, rotate-secret and get-secret routes return it.

    ``name`` and ``active`` are absent on rows written before they existed: such a webhook
    reads as named after its URL's host, and active.
    """

    class Meta:
        short_name = "webhooks"

    url = UnicodeAttribute()
    events = ListAttribute(of=UnicodeAttribute)
    secret = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    description = UnicodeAttribute(null=True)
    active = BooleanAttribute(null=True)


class _DeliveriesByWebhook(GlobalSecondaryIndex["DeliveryModel"]):
    """Deliveries of one webhook; queried newest first."""

    class Meta:
        index_name = "by_webhook"
        projection = AllProjection()

    webhook_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


class _PendingDeliveries(GlobalSecondaryIndex["DeliveryModel"]):
    """Sparse: only pending deliveries carry ``pending``; the sweeper finds overdue ones."""

    class Meta:
        index_name = "pending"
        projection = KeysOnlyProjection()

    pending = UnicodeAttribute(hash_key=True)
    next_attempt_at = UnicodeAttribute(range_key=True)


@register
class DeliveryModel(IdModel):
    """One webhook delivery (an event handed to one webhook) and its attempts.

    ``id`` is derived from (event id, webhook id), so the sink's conditional put makes a
    repeated event a no-op instead of a second delivery.
    """

    class Meta:
        short_name = "webhook-deliveries"

    webhook_id = UnicodeAttribute()
    project_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    event = UnicodeAttribute()
    status = UnicodeAttribute()
    attempts = NumberAttribute(default=0)
    last_status_code = NumberAttribute(null=True)
    last_error = UnicodeAttribute(null=True)
    next_attempt_at = UnicodeAttribute(null=True)
    payload = UnicodeAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    created_key = UnicodeAttribute()
    #: ``"1"`` while pending (the sparse ``pending`` index), removed once final.
    pending = UnicodeAttribute(null=True)
    #: The attempt a worker is making now, and until when its claim holds: a duplicate
    #: message for the same attempt (stale, or re-enqueued by the sweeper) does not POST.
    claimed_attempt = NumberAttribute(null=True)
    claim_expires_at = UnicodeAttribute(null=True)
    last_attempt_at = UnicodeAttribute(null=True)
    #: The start of the last answer's body (``chalicelib.webhooks.delivery``).
    response_body = UnicodeAttribute(null=True)
    #: The delivery a redelivery re-sends.
    redelivery_of = UnicodeAttribute(null=True)
    by_webhook = _DeliveriesByWebhook()
    pending_deliveries = _PendingDeliveries()


@register
class AiProviderModel(ProjectScoped, IdModel):
    """A project's OpenAI-compatible model endpoint. ``api_key_env`` is a variable *name*."""

    class Meta:
        short_name = "ai-providers"

    name = UnicodeAttribute()
    base_url = UnicodeAttribute()
    api_key_env = UnicodeAttribute(null=True)
    #: The project secret whose value is the key (``store/secrets.py``), or absent.
    secret_id = UnicodeAttribute(null=True)
    default_model = UnicodeAttribute()
    updated_at = UnicodeAttribute()


@register
class SecretModel(ProjectScoped, IdModel):
    """A project secret: ``sealed_value`` is ``secretbox.seal``ed (purpose ``project-secret``)
    and never leaves the store except to the call that uses it."""

    class Meta:
        short_name = "secrets"

    name = UnicodeAttribute()
    sealed_value = UnicodeAttribute(null=True)
    updated_at = UnicodeAttribute()


@register
class ToolModel(ProjectScoped, IdModel):
    """A project's tool: ``type`` selects how it is called, ``config`` holds its settings."""

    class Meta:
        short_name = "tools"

    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    type = UnicodeAttribute()
    config = JSONAttribute()
    updated_at = UnicodeAttribute()


@register
class DeciderModel(ProjectScoped, IdModel):
    """A project's decider: its current question set and backend (``version`` names it)."""

    class Meta:
        short_name = "deciders"

    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    version = NumberAttribute()
    questions = JSONAttribute()
    backend = JSONAttribute()
    updated_at = UnicodeAttribute()


@register
class DeciderVersionModel(PawlModel):
    """Immutable snapshot written by every decider create or update."""

    class Meta:
        short_name = "decider-versions"

    decider_id = UnicodeAttribute(hash_key=True)
    version = NumberAttribute(range_key=True)
    name = UnicodeAttribute()
    questions = JSONAttribute()
    backend = JSONAttribute()
    created_at = UnicodeAttribute()


@register
class DecisionModel(IdModel):
    """One decision, written once when it settled (append-only)."""

    class Meta:
        short_name = "decisions"

    project_id = UnicodeAttribute()
    decider_id = UnicodeAttribute()
    decider_version = NumberAttribute()
    status = UnicodeAttribute()
    input = JSONAttribute(null=True)
    input_s3_key = UnicodeAttribute(null=True)
    answers = JSONAttribute(null=True)
    error = JSONAttribute(null=True)
    metadata = JSONAttribute()
    usage = JSONAttribute()
    latency_ms = NumberAttribute(default=0)
    created_at = UnicodeAttribute()


class _DueSchedules(GlobalSecondaryIndex["TriggerModel"]):
    """Sparse: only active schedule triggers carry ``due``; the scheduler reads the due ones."""

    class Meta:
        index_name = "due"
        projection = KeysOnlyProjection()

    due = UnicodeAttribute(hash_key=True)
    next_fire_at = UnicodeAttribute(range_key=True)


class _EventListeners(GlobalSecondaryIndex["TriggerModel"]):
    """Sparse: only active event triggers carry ``listening`` (their project id)."""

    class Meta:
        index_name = "listening"
        projection = AllProjection()

    listening = UnicodeAttribute(hash_key=True)


@register
class TriggerModel(ProjectScoped, IdModel):
    """A project's trigger. ``secret`` (webhook type) is sealed and never listed."""

    class Meta:
        short_name = "triggers"

    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    type = UnicodeAttribute()
    target_type = UnicodeAttribute()
    target_id = UnicodeAttribute()
    action = UnicodeAttribute(null=True)
    input = JSONAttribute(null=True)
    cron = UnicodeAttribute(null=True)
    event_pattern = UnicodeAttribute(null=True)
    active = BooleanAttribute()
    policy_id = UnicodeAttribute(null=True)
    secret = UnicodeAttribute(null=True)
    #: A webhook trigger that takes only timestamped signatures (absent on older rows: false).
    require_timestamp = BooleanAttribute(null=True)
    #: The project key that bound the trigger (absent: the admin key, or an older row).
    bound_by_key_id = UnicodeAttribute(null=True)
    next_fire_at = UnicodeAttribute(null=True)
    updated_at = UnicodeAttribute()
    #: ``"1"`` on an active schedule trigger (the sparse ``due`` index), else absent.
    due = UnicodeAttribute(null=True)
    #: The project id on an active event trigger (the sparse ``listening`` index).
    listening = UnicodeAttribute(null=True)
    due_schedules = _DueSchedules()
    event_listeners = _EventListeners()


class _FiringsByTrigger(GlobalSecondaryIndex["FiringModel"]):
    """Firings of one trigger; queried newest first."""

    class Meta:
        index_name = "by_trigger"
        projection = AllProjection()

    trigger_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)


class _UnfinishedFirings(GlobalSecondaryIndex["FiringModel"]):
    """Sparse: only pending or running firings carry ``unfinished``; the sweep resumes the
    ones a crash interrupted."""

    class Meta:
        index_name = "unfinished"
        projection = KeysOnlyProjection()

    unfinished = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


@register
class FiringModel(ProjectScoped, IdModel):
    """One activation of a trigger. Its id is derived from what caused it (a schedule slot,
    a delivery id, an event), so the conditional put makes a repeat a no-op."""

    class Meta:
        short_name = "trigger-firings"

    trigger_id = UnicodeAttribute()
    source = UnicodeAttribute()
    status = UnicodeAttribute()
    input = JSONAttribute(null=True)
    result = JSONAttribute(null=True)
    error = JSONAttribute(null=True)
    #: The trigger ids of the causal chain this firing extends (event triggers).
    causation = JSONAttribute(null=True)
    started_at = UnicodeAttribute(null=True)
    completed_at = UnicodeAttribute(null=True)
    #: ``"1"`` until the firing is terminal (the sparse ``unfinished`` index).
    unfinished = UnicodeAttribute(null=True)
    by_trigger = _FiringsByTrigger()
    unfinished_firings = _UnfinishedFirings()


@register
class TriggerReceiptModel(PawlModel):
    """A signed inbound request a webhook trigger accepted: the replay guard.

    ``key`` is ``<trigger id>#signature#<sha256 of the signature's HMAC>`` or
    ``<trigger id>#delivery#<delivery id>``; a repeat within the window names the same
    firing. The window is enforced by comparing ``accepted_at`` (moto never expires an
    item); ``expires_at`` lets DynamoDB's TTL delete the row afterwards.
    """

    class Meta:
        short_name = "trigger-receipts"

    key = UnicodeAttribute(hash_key=True)
    firing_id = UnicodeAttribute()
    accepted_at = UnicodeAttribute()
    expires_at = TTLAttribute()


@register
class OpenwopModel(PawlModel):
    """The ``/v2`` (OpenWOP) records, one table keyed by kind-prefixed strings.

    ``pk`` / ``sk`` per record kind (see ``store/openwop.py`` and ``docs/dynamodb.md``):
    a suite version ``suite#<project>#<suiteId>`` / ``<version>``; the eval that runs a
    suite version on an agent ``eval#<project>#<suiteId>@<version>`` / ``<agentId>``; a v2
    run ``run#<runId>`` / ``-``; an idempotency key ``idem#<project>#<key>`` / ``-``.
    """

    class Meta:
        short_name = "openwop"

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    project_id = UnicodeAttribute()
    record = JSONAttribute()
    created_at = UnicodeAttribute()


@register
class ConsoleRevocationModel(PawlModel):
    """A console session that was signed out, or every session of a key before a moment.

    ``key`` is ``session#<session id>`` (one session: ``revoked_before`` unset) or
    ``key#<keyed hash of the API key>`` ("sign out everywhere": every session of the key
    that started at or before ``revoked_before``, epoch seconds). A cookie is refused by
    its idle expiry 12 h after its last use, and no cookie of a revoked session is used
    after its revocation, so ``expires_at`` (revocation + 12 h) lets DynamoDB's TTL delete
    the row once it can no longer matter.
    """

    class Meta:
        short_name = "console-revocations"

    key = UnicodeAttribute(hash_key=True)
    revoked_at = UnicodeAttribute()
    revoked_before = NumberAttribute(null=True)
    expires_at = TTLAttribute()
