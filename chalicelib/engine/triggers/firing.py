"""Executing one firing: record it, claim it, start the eval run, record the outcome.

A firing is a row before it does anything (``pending``), claimed once (``running``), and
ends ``succeeded`` — the run was started, queued, ``result.result_id`` is its id — or
``failed`` with the reason (a deleted target, a stale ``agent_version``, an unusable
baseline, an empty dataset: every run-start rule of the engine), in which case no run
exists. The run's id is derived from the firing's, and the run row is a conditional put,
so one firing can never start two runs — not even when a firing whose executor died is
taken over (:func:`resume`) after the run was written. A webhook call's firing is written
with its receipts (:func:`fire_once`): a request accepted within :data:`REPLAY_WINDOW_S` is
answered with the firing it started, however often it is sent again.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from chalicelib import clock, ids
from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import COMPLETED
from chalicelib.domain.triggers import (
    MAX_CAUSATION_DEPTH,
    FiringError,
    FiringResult,
    Trigger,
    TriggerFiring,
)
from chalicelib.engine.start import StartOptions, start_run
from chalicelib.engine.triggers import targets
from chalicelib.errors import ConcurrentUpdate, PawlError, ValidationFailed
from chalicelib.store import agents, run_lists, runs
from chalicelib.store import triggers as store
from chalicelib.store.pagination import Window

log = logging.getLogger("pawl.triggers")

#: Runs read (newest first) when looking for the ``"latest"`` completed baseline.
LATEST_BASELINE_SCAN = 200
#: A firing still pending or running this long after it was claimed lost its executor
#: (starting a queued run takes well under a second).
FIRING_GRACE_S = 300
#: How long an accepted inbound request is remembered: a repeat within it starts nothing.
REPLAY_WINDOW_S = 24 * 3600
#: Rounds of "look for a receipt, else write one" before a lost race is answered 409.
_RECEIPT_ROUNDS = 3
_RECEIPT_BACKOFF_S = 0.05

#: Authorizes a firing's run start as whoever bound the trigger (``api.triggers``; installed
#: by ``wiring.build``, so the engine does not import the API): raises the PawlError that
#: fails the firing. Arguments: the trigger, its eval, the start's ``agent_version`` and
#: ``baseline_run_id`` (what a run start's body would name).
BindingCheck = Callable[[Trigger, Eval, Mapping[str, Any]], None]
_binding_check: BindingCheck | None = None


def install_binding_check(check: BindingCheck | None) -> None:
    global _binding_check
    _binding_check = check


def _check_binding(trigger: Trigger, evaluation: Eval, start: Mapping[str, Any]) -> None:
    if _binding_check is None:  # fail closed: an unwired process starts nothing
        raise RuntimeError("trigger firings are not wired: call chalicelib.wiring.build()")
    _binding_check(trigger, evaluation, start)


def fire(
    trigger: Trigger,
    source: str,
    fire_input: dict[str, Any] | None = None,
    *,
    firing_id: str | None = None,
    causation: Sequence[str] = (),
) -> TriggerFiring:
    """Record and execute a firing of ``trigger``; a repeated ``firing_id`` answers the first
    (and takes it over when its executor died)."""
    effective = {**(trigger.input or {}), **(fire_input or {})}
    row = store.firing_row(
        firing_id or ids.new_id("trigger_firing"), trigger, source, effective, list(causation)
    )
    if not store.create_firing(row):
        return resume(row.id) or store.get_firing(row.id)
    return execute(trigger, row.id)


def fire_once(
    trigger: Trigger, source: str, fire_input: dict[str, Any], receipts: Sequence[str]
) -> TriggerFiring:
    """Fire ``trigger`` unless one of ``receipts`` was accepted within the replay window:
    then answer that firing (taking it over when its executor died) and start nothing.

    The firing and its receipts are one conditional write, so of two copies of a request
    racing each other exactly one records a firing; the other reads it on its next round.
    """
    now = clock.now()
    since = clock.iso(now - timedelta(seconds=REPLAY_WINDOW_S))
    expires_at = now + timedelta(seconds=REPLAY_WINDOW_S)
    effective = {**(trigger.input or {}), **fire_input}
    for round_no in range(_RECEIPT_ROUNDS):
        if round_no:  # DynamoDB may cancel both of two conflicting transactions: spread them
            time.sleep(random.uniform(0, _RECEIPT_BACKOFF_S * round_no))
        original = store.receipted_firing(receipts, since)
        if original is not None:
            firing = resume(original) or store.find_firing(original)
            if firing is not None:
                return firing
            # Its receipt is visible and its firing not yet: one transaction wrote both, but
            # moto in-process applies a transaction's items one by one. Look again.
            continue
        row = store.firing_row(ids.new_id("trigger_firing"), trigger, source, effective, [])
        if store.create_receipted_firing(row, receipts, since, expires_at):
            return execute(trigger, row.id)
    raise ConcurrentUpdate(
        f"trigger {trigger.id}: the same request is being accepted concurrently; retry it"
    )


def execute(trigger: Trigger, firing_id: str) -> TriggerFiring:
    """Run a recorded pending firing (only the caller that claims it does)."""
    if not store.claim_firing(firing_id):
        return store.get_firing(firing_id)
    return _run_claimed(trigger, store.get_firing(firing_id))


def stale_before() -> str:
    return clock.iso(clock.now() - timedelta(seconds=FIRING_GRACE_S))


def resume(firing_id: str) -> TriggerFiring | None:
    """Take over a firing left pending or running past the grace period; None if it was not
    (finished, in progress, or another caller took it over)."""
    if not store.take_over_firing(firing_id, stale_before()):
        return None
    firing = store.get_firing(firing_id)
    trigger = store.find_trigger(firing.trigger_id)
    if trigger is None:
        gone = FiringError(
            code="RESOURCE_NOT_FOUND",
            message=f"trigger {firing.trigger_id} was deleted before this firing ran",
        )
        return store.finish_firing(firing_id, None, gone)
    log.warning("firing %s of %s: resumed after its executor stopped", firing_id, trigger.id)
    return _run_claimed(trigger, firing)


def resume_stalled() -> list[str]:
    """Resume every firing a crash left unfinished (the scheduler's sweep)."""
    resumed = []
    for firing_id in store.unfinished_firing_ids(stale_before()):
        try:
            if resume(firing_id) is not None:
                resumed.append(firing_id)
        except Exception:
            log.exception("firing %s could not be resumed", firing_id)
    return resumed


def causation_refusal(trigger: Trigger, causation: Sequence[str]) -> FiringError | None:
    """The loop guard of an event firing: None when it may extend the chain."""
    if trigger.id in causation:
        why = "the trigger is already in the event's causal chain (a loop)"
    elif len(causation) >= MAX_CAUSATION_DEPTH:
        why = f"the event's causal chain is already {len(causation)} firings deep"
    else:
        return None
    return FiringError(
        code="TRIGGER_CAUSATION_LIMIT",
        message=f"trigger {trigger.id} refused to fire: {why}",
        meta={"causation": list(causation), "max_depth": MAX_CAUSATION_DEPTH},
    )


def _run_claimed(trigger: Trigger, firing: TriggerFiring) -> TriggerFiring:
    causation = store.firing_causation(firing.id)
    refusal = causation_refusal(trigger, causation) if firing.source == "event" else None
    if refusal is not None:
        return store.finish_firing(firing.id, None, refusal)
    try:
        result = _start_eval_run(trigger, firing, [*causation, trigger.id])
    except PawlError as exc:
        log.info("firing %s of %s failed: %s", firing.id, trigger.id, exc.message)
        error = FiringError(code=exc.code, message=exc.message, meta=_plain(exc.meta))
        return store.finish_firing(firing.id, None, error)
    except Exception:
        log.exception("firing %s of %s raised", firing.id, trigger.id)
        error = FiringError(code="INTERNAL_ERROR", message="the firing failed unexpectedly")
        return store.finish_firing(firing.id, None, error)
    return store.finish_firing(firing.id, result, None)


def _plain(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, str | int | float | bool) else str(v) for k, v in meta.items()}


def _latest_baseline(eval_id: str) -> str | None:
    """The eval's newest completed run (None when it has none yet)."""
    cursor: str | None = None
    seen = 0
    while True:
        found = run_lists.list_run_summaries(eval_id, Window(limit=100, cursor=cursor))
        for run in found.items:
            if run.status == COMPLETED:
                return run.id
        seen += len(found.items)
        cursor = found.next_cursor
        if cursor is None or seen >= LATEST_BASELINE_SCAN:
            return None


def _canary(agent_id: str) -> int:
    """The canary of the agent's active release (a firing without one fails, starting nothing)."""
    release = agents.get_agent(agent_id).active_release
    if release is None:
        raise ValidationFailed(
            f'input.agent_version is "canary" but agent {agent_id} has no active release',
            field="input.agent_version",
            code="NO_ACTIVE_RELEASE",
        )
    return release.canary_version


def _start_eval_run(trigger: Trigger, firing: TriggerFiring, causation: list[str]) -> FiringResult:
    run_id = ids.derived_id("eval_run", firing.id)
    already = runs.find_run(run_id)  # a taken-over firing whose run was written
    if already is not None:
        return FiringResult(target_type="eval", result_id=run_id, status=already.status)
    evaluation = targets.find_eval_target(trigger.project_id, trigger.target_id)
    wanted = targets.eval_input(firing.input)
    version = wanted.agent_version
    if version == targets.LATEST:
        version = agents.get_agent(evaluation.agent_id).version
    elif version == targets.CANARY:
        version = _canary(evaluation.agent_id)
    baseline = wanted.baseline_run_id
    if baseline == targets.LATEST:
        baseline = _latest_baseline(evaluation.id)
    pinned = version if isinstance(version, int) else None
    _check_binding(trigger, evaluation, {"agent_version": pinned, "baseline_run_id": baseline})
    options = StartOptions(
        wait=False,
        agent_version=pinned,
        baseline_run_id=baseline,
        trigger_id=trigger.id,
        causation=tuple(causation),
        run_id=run_id,
    )
    run = start_run(evaluation, options)
    return FiringResult(target_type="eval", result_id=run.id, status=run.status)
