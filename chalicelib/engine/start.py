"""Start a run: check every rule, then write — a refused start creates nothing.

Rules, all checked before the first write: the dataset is not empty; a ``wait: true`` run
has at most :data:`SYNC_ITEM_LIMIT` items (read in one query, and those are the items it
runs); a named ``agent_version`` exists; a named
``baseline_run_id`` is a completed or failed run of this eval (one message whatever
the reason, so a caller never learns about another tenant's runs); every
``tool_context`` key can be a header name; and the eval's scorers are runnable against
the pinned agent version (the authoritative check).

The run then carries a snapshot of the eval, so editing the eval cannot change it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from chalicelib import ids
from chalicelib.domain.catalog import AgentVersion, DatasetItem, Eval
from chalicelib.domain.runs import (
    BASELINE_STATUSES,
    QUEUED,
    RUNNING,
    EvalRun,
    EvalSnapshot,
    FrozenItem,
    RunState,
    WorkItem,
)
from chalicelib.engine import concurrency, early_stop, item_batch, messages, releases
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.outbound.tool_context import is_reserved_context_key, is_valid_context_key
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.decider_scorer import resolve_decider_versions
from chalicelib.scoring.validation import check_eval_runnable
from chalicelib.store import agents, datasets, project_scoped, runs
from chalicelib.store import shards as sharding

log = logging.getLogger("pawl.engine.start")

SYNC_ITEM_LIMIT = 25
BASELINE_REFUSAL = "baseline_run_id must name a completed or failed run of this eval"


@dataclass(frozen=True)
class StartOptions:
    wait: bool = False
    agent_version: int | None = None
    baseline_run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tool_context: dict[str, str] = field(default_factory=dict)
    #: Overrides the eval's ``max_concurrency`` for this run.
    max_concurrency: int | None = None
    #: Overrides the eval's ``max_cost_usd`` (the spend guard) for this run.
    max_cost_usd: float | None = None
    #: Set when a trigger firing starts the run: the trigger (kept on the run), the causal
    #: chain of trigger ids that led here, and the run id derived from the firing (so a
    #: firing executed twice cannot start two runs: the run row is a conditional put).
    trigger_id: str | None = None
    causation: tuple[str, ...] = ()
    run_id: str | None = None
    #: Run the items in a seeded random order and stop once a sequential test decides
    #: regressed / not worse against the baseline (``engine.early_stop``).
    early_stop: bool = False
    #: The order's seed; without one it is derived from the run id (and kept on the run).
    early_stop_seed: int | None = None


@dataclass(frozen=True)
class StartPlan:
    """A start that passed every rule: what the run will be, and (sync) its items."""

    state: RunState
    items: list[FrozenItem]


def clean_tool_context(tool_context: dict[str, str]) -> dict[str, str]:
    """Drop the reserved identity keys; refuse a key that cannot become a header name."""
    kept = {}
    for key, value in tool_context.items():
        if is_reserved_context_key(key):
            continue
        if not is_valid_context_key(key):
            raise ValidationFailed(
                f"tool_context key {key!r} cannot become an HTTP header name "
                "(letters, digits and !#$%&'*+-.^_`|~ only)",
                field=f"tool_context.{key}",
                code="INVALID_TOOL_CONTEXT_KEY",
            )
        kept[key] = value
    return kept


def _first_items(evaluation: Eval, wait: bool) -> list[DatasetItem]:
    """The dataset's first items: one, or (``wait``) one more than a sync run may hold.

    One Query. (``count_items`` counts with ``Select=COUNT``, which PynamoDB pages item
    by item when a limit is set: O(dataset) calls for a check that needs one.)
    """
    page_size = SYNC_ITEM_LIMIT + 1 if wait else 1
    first_page = next(datasets.iter_item_pages(evaluation.dataset_id, page_size=page_size), [])
    items = first_page[:page_size]
    if not items:
        raise ValidationFailed(
            f"dataset {evaluation.dataset_id} has no items: there is nothing to run",
            field="dataset_id",
        )
    if wait and len(items) > SYNC_ITEM_LIMIT:
        raise ValidationFailed(
            f"wait: true runs at most {SYNC_ITEM_LIMIT} items; dataset "
            f"{evaluation.dataset_id} has {len(items)} or more. Start it with wait: false.",
            field="wait",
            limit=SYNC_ITEM_LIMIT,
            item_count_at_least=len(items),
        )
    return items


def _pinned_version(evaluation: Eval, requested: int | None) -> AgentVersion:
    if requested is None:  # the release's stable version, else the live one
        agent = agents.get_agent(evaluation.agent_id)
        return agents.get_agent_version(agent.id, releases.run_version(agent))
    try:
        return agents.get_agent_version(evaluation.agent_id, requested)
    except NotFound:
        raise ValidationFailed(
            f"agent {evaluation.agent_id} has no version {requested}", field="agent_version"
        ) from None


def _check_baseline(evaluation: Eval, baseline_run_id: str, candidate: EvalRun) -> None:
    baseline = runs.find_run(baseline_run_id)
    usable = (
        baseline is not None
        and baseline.run.eval_id == evaluation.id
        and baseline.status in BASELINE_STATUSES
    )
    if usable and baseline is not None:
        refusals = plugins().baseline_refusals(
            eval=evaluation, candidate=candidate, baseline=baseline.run
        )
        if refusals:
            log.info("baseline %s refused by plugins: %s", baseline_run_id, refusals)
            usable = False
    if not usable:
        raise ValidationFailed(BASELINE_REFUSAL, field="baseline_run_id")


def _frozen(items: list[DatasetItem]) -> list[FrozenItem]:
    return [
        FrozenItem(
            dataset_item_id=item.id,
            input=[m.model_dump() for m in item.input],
            expected_output=item.expected_output,
            metadata=item.metadata,
        )
        for item in items
    ]


def _new_state(
    evaluation: Eval, options: StartOptions, version: AgentVersion, tool_context: dict[str, str]
) -> RunState:
    run_id = options.run_id or ids.new_id("eval_run")
    # The same stamp items carry: the fan-out freezes the items created up to this key.
    now, created_key = project_scoped.creation_stamp(run_id)
    snapshot = EvalSnapshot.model_validate(evaluation.model_dump(mode="json"))
    if options.max_concurrency is not None:
        snapshot.max_concurrency = options.max_concurrency
    if options.max_cost_usd is not None:
        snapshot.max_cost_usd = options.max_cost_usd
    run = EvalRun(
        id=run_id,
        eval_id=evaluation.id,
        agent_version=version.version,
        decider_versions=None,  # pinned in plan_run, once every other rule has passed
        status=RUNNING if options.wait else QUEUED,
        baseline_run_id=options.baseline_run_id,
        trigger_id=options.trigger_id,
        metadata=options.metadata,
        passed_count=0,  # the row's counters start at 0 (store.runs writes them)
        failed_count=0,
        started_at=now if options.wait else None,
        created_at=now,
    )
    return RunState(
        run=run,
        snapshot=snapshot,
        tool_context=tool_context,
        causation=list(options.causation),
        last_activity_at=now,
        created_key=created_key,
    )


def plan_run(evaluation: Eval, options: StartOptions) -> StartPlan:
    """Check every start rule (reads only) and describe the run to write."""
    tool_context = clean_tool_context(options.tool_context)
    concurrency.check_max_concurrency(options.max_concurrency)
    first_items = _first_items(evaluation, options.wait)
    version = _pinned_version(evaluation, options.agent_version)
    state = _new_state(evaluation, options, version, tool_context)
    if options.early_stop:
        state.early_stop = early_stop.settings_for(
            evaluation,
            state.id,
            baseline_run_id=options.baseline_run_id,
            wait=options.wait,
            seed=options.early_stop_seed,
        )
    elif options.early_stop_seed is not None:
        raise ValidationFailed(
            "early_stop_seed applies only with early_stop: true", field="early_stop_seed"
        )
    if options.baseline_run_id is not None:
        _check_baseline(evaluation, options.baseline_run_id, state.run)
    check_eval_runnable(evaluation, version.output_schema)
    # One decider version per decider scorer for the whole run (invariant 7).
    state.run.decider_versions = resolve_decider_versions(evaluation.scorers, evaluation.project_id)
    items = _frozen(first_items) if options.wait else []
    if options.wait:
        state.run.item_count = len(items) * state.snapshot.trials
        state.shards = sharding.shard_count(state.run.item_count)
        state.fanout_done = True
    return StartPlan(state=state, items=items)


def start_run(evaluation: Eval, options: StartOptions) -> EvalRun:
    """Start a run: ``wait`` runs it here and returns it terminal; otherwise it is queued."""
    plan = plan_run(evaluation, options)
    state = plan.state
    if not options.wait:
        # The run row first, then the message that makes it execute. A message that cannot
        # be sent withdraws the row, so the refusal (5xx) leaves nothing behind and a
        # client's retry starts the only run.
        runs.create_run(state)
        try:
            messages.send_fanout(messages.FanoutMessage(run_id=state.id))
        except Exception:
            runs.withdraw_run(state.id, state.run.eval_id)
            raise
        return state.run
    runs.create_run(state, plan.items)
    # The path a queue worker takes, as one batch executed at the run's concurrency. There
    # is no redelivery here (final=True), so an item that raises is recorded as errored at
    # once.
    received = [
        item_batch.ReceivedWork(
            WorkItem(
                run_id=state.id,
                dataset_item_id=item.dataset_item_id,
                trial=trial,
                item=item,
                shards=state.shards,
            ),
            final=True,
        )
        for item in plan.items
        for trial in range(1, state.snapshot.trials + 1)
    ]
    item_batch.process(received)
    return runs.get_run(state.id).run
