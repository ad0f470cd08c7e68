"""Execute one (run, item, trial): call the pinned agent, score its answer, build the record.

This is the only place an item is executed. ``wait: true`` runs, the queue worker and
recovery all come through :func:`execute`; an agent called outside an eval comes through
:func:`call_agent`, the same agent call without the scoring. Nothing here writes: the
caller records what it returns.

Errors are not zeros: a generation that failed or did not complete, or a scorer that
could not reach a verdict, makes an *errored* result (``error`` set, no scores), never a
score of 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from chalicelib import clock, ids, outbound
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest
from chalicelib.domain.runs import (
    BUDGET_EXCEEDED,
    GENERATION_COMPLETED,
    GENERATION_FAILED,
    EvalResult,
    FrozenItem,
    Generation,
    RecordedError,
    ResultRecord,
    ScoreEntry,
    UsageEntry,
)
from chalicelib.engine.context import BoundAgent, RunContext
from chalicelib.scoring.contract import ItemContext, ScorerFailed, ScoringEnv, UsageRecord

EVAL_SOURCE = "eval"
GENERATION_FAILED_CODE = "GENERATION_FAILED"
GENERATION_NOT_COMPLETED_CODE = "GENERATION_NOT_COMPLETED"
SCORING_FAILED_CODE = "EVAL_SCORING_FAILED"
ITEM_FAILED_CODE = "EVAL_ITEM_FAILED"
RUN_ENDED_CODE = "EVAL_RUN_ENDED"
RUN_ENDED_MESSAGE = (
    "Not scored: the run was cancelled (or ended) while this item's agent call was in flight"
)
MESSAGE_CHARS = 1000


def _reply_or_failure(agent: BoundAgent, request: AgentRequest) -> AgentReply:
    try:
        reply: AgentReply = agent.adapter.invoke(agent.config, request)
    except AdapterFailed as exc:
        return AgentReply(
            status=GENERATION_FAILED,
            error={"code": GENERATION_FAILED_CODE, "message": str(exc)[:MESSAGE_CHARS]},
        )
    return reply


def call_agent(
    agent: BoundAgent,
    project_id: str,
    messages: list[dict[str, Any]],
    tool_context: dict[str, str],
    *,
    run_id: str | None = None,
    dataset_item_id: str | None = None,
    source: str | None = None,
    should_continue: Callable[[], bool] | None = None,
) -> Generation:
    """Call the agent once and describe the call as a generation (not yet stored)."""
    request = AgentRequest(
        input=messages,
        agent_id=agent.agent_id,
        agent_version=agent.version.version,
        project_id=project_id,
        run_id=run_id,
        dataset_item_id=dataset_item_id,
        tool_context=dict(tool_context),
        output_schema=agent.version.output_schema,
        should_continue=should_continue,
    )
    started = time.perf_counter()
    reply = _reply_or_failure(agent, request)
    latency_ms = int((time.perf_counter() - started) * 1000)
    error = None
    if reply.status == GENERATION_FAILED:
        raw = reply.error or {}
        error = RecordedError(
            code=str(raw.get("code") or GENERATION_FAILED_CODE),
            message=str(raw.get("message") or "the agent call failed")[:MESSAGE_CHARS],
        )
    return Generation(
        id=ids.new_id("generation"),
        project_id=project_id,
        agent_id=agent.agent_id,
        agent_version=agent.version.version,
        run_id=run_id,
        dataset_item_id=dataset_item_id,
        input=messages,
        output=reply.output if reply.status != GENERATION_FAILED else None,
        object=reply.object,
        status=reply.status,
        error=error,
        usage=asdict(reply.usage) if reply.usage is not None else None,
        latency_ms=latency_ms,
        source=source,
        created_at=clock.now_iso(),
    )


def _generation_error(generation: Generation) -> RecordedError:
    if generation.status == GENERATION_FAILED:
        detail = generation.error.message if generation.error else "the agent call failed"
        return RecordedError(code=GENERATION_FAILED_CODE, message=f"Generation failed: {detail}")
    return RecordedError(
        code=GENERATION_NOT_COMPLETED_CODE,
        message=f"Generation did not complete (status {generation.status!r})",
    )


def _agent_usage(generation: Generation, model: str | None) -> list[UsageEntry]:
    usage = generation.usage or {}
    if not usage:
        return []
    return [
        UsageEntry(
            source=EVAL_SOURCE,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=float(usage.get("cost_usd") or 0.0),
            model=model,
        )
    ]


def _scorer_usage(records: Iterable[UsageRecord]) -> list[UsageEntry]:
    return [
        UsageEntry(
            source=r.source,
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            cost_usd=r.cost_usd,
            model=r.model,
        )
        for r in records
    ]


def _score_all(
    ctx: RunContext, item: FrozenItem, generation: Generation, spend: list[UsageEntry]
) -> list[ScoreEntry] | RecordedError:
    """Every scorer of the snapshot, in its order; the first that cannot decide errors the item.

    Whatever a scorer spent (a judge completion, an embedding, a decision) is appended to
    ``spend``, including the spend of a scorer that then failed to reach a verdict. Once
    the run has ended no scorer that may call out (a judge, a tool, an embedding, a
    decision) is started: the item errors with ``EVAL_RUN_ENDED``, keeping its output
    and what was spent; a scorer that scores in-process still scores.
    """
    context = ItemContext(
        input=item.input,
        output=generation.output,
        expected=item.expected_output,
        item_metadata=item.metadata,
        object=generation.object,
        has_object=ctx.agent.version.output_schema is not None,
        output_schema=ctx.agent.version.output_schema,
    )
    env = ScoringEnv(
        project_id=ctx.state.project_id,
        eval_id=ctx.eval_id,
        run_id=ctx.run_id,
        dataset_item_id=item.dataset_item_id,
        tool_context=dict(ctx.state.tool_context),
        decider_versions=dict(ctx.state.run.decider_versions or {}),
        should_continue=ctx.should_continue,
    )
    entries = []
    for scorer in ctx.scorers:
        if scorer.calls_out and not ctx.should_continue():
            return RecordedError(code=RUN_ENDED_CODE, message=RUN_ENDED_MESSAGE)
        try:
            outcome = scorer.impl.score(scorer.config, context, env)
        except ScorerFailed as exc:
            spend += _scorer_usage(_failed_usage(exc))
            return RecordedError(
                code=exc.code or SCORING_FAILED_CODE,
                message=f"Scoring failed: {scorer.key}: {exc.message}"[:MESSAGE_CHARS],
            )
        spend += _scorer_usage(outcome.usage)
        entries.append(
            ScoreEntry(
                scorer=scorer.key,
                score=float(outcome.score),
                passed=bool(outcome.passed),
                reasoning=outcome.reasoning,
                decision_id=outcome.decision_id,
            )
        )
    return entries


def _failed_usage(exc: ScorerFailed) -> tuple[UsageRecord, ...]:
    usage = exc.meta.get("usage")
    if isinstance(usage, UsageRecord):
        return (usage,)
    if isinstance(usage, list | tuple):
        return tuple(u for u in usage if isinstance(u, UsageRecord))
    return ()


def _result(
    ctx: RunContext, item: FrozenItem, trial: int, generation: Generation | None
) -> EvalResult:
    return EvalResult(
        id=ids.new_id("eval_result"),
        run_id=ctx.run_id,
        dataset_item_id=item.dataset_item_id,
        trial=trial,
        input=item.input,
        expected_output=item.expected_output,
        generation_id=generation.id if generation else None,
        created_at=clock.now_iso(),
    )


def execute(ctx: RunContext, item: FrozenItem, trial: int) -> ResultRecord:
    """Run the agent on one frozen item and score it: the record to write."""
    with outbound.listening(outbound.AttemptCounter()) as counter:
        generation = call_agent(
            ctx.agent,
            ctx.state.project_id,
            item.input,
            ctx.state.tool_context,
            run_id=ctx.run_id,
            dataset_item_id=item.dataset_item_id,
            source=EVAL_SOURCE,
            should_continue=ctx.should_continue,
        )
    result = _result(ctx, item, trial, generation)
    # Agents that make no outbound call (python, lambda) were called once.
    result.attempts = max(1, counter.attempts)
    # A model agent names its model; other agent types do not say what they called.
    result.usage = _agent_usage(generation, getattr(ctx.agent.config, "model", None))
    if generation.status != GENERATION_COMPLETED:
        result.error = _generation_error(generation)
        return ResultRecord(eval_id=ctx.eval_id, result=result, generation=generation)
    result.output = generation.output
    scored = _score_all(ctx, item, generation, result.usage)
    if isinstance(scored, RecordedError):
        result.error = scored  # the output it was graded on is kept beside the error
    else:
        result.scores = scored
        result.passed = all(entry.passed for entry in scored)
    return ResultRecord(eval_id=ctx.eval_id, result=result, generation=generation)


def errored_record(
    ctx: RunContext, item: FrozenItem, trial: int, reason: str, code: str = ITEM_FAILED_CODE
) -> ResultRecord:
    """The record of an item that kept failing for reasons of our own (its last delivery)."""
    result = _result(ctx, item, trial, None)
    result.error = RecordedError(code=code, message=reason[:MESSAGE_CHARS])
    return ResultRecord(eval_id=ctx.eval_id, result=result, generation=None)


def not_started_record(ctx: RunContext, item: FrozenItem, trial: int, reason: str) -> ResultRecord:
    """The record of an item the spend guard did not start: errored, ``BUDGET_EXCEEDED``."""
    return errored_record(ctx, item, trial, reason, code=BUDGET_EXCEEDED)
