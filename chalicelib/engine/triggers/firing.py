"""Executing one firing: record it, claim it, start the eval run, record the outcome.

A firing is a row before it does anything (``pending``), claimed once (``running``), and
ends ``succeeded`` — the run was started, queued, ``result.result_id`` is its id — or
``failed`` with the reason (a deleted target, a stale ``agent_version``, an unusable
baseline, an empty dataset: every run-start rule of the engine), in which case no run
exists. The run's id is derived from the firing's, and the run row is a conditional put,
so one firing can never start two runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from chalicelib import ids
from chalicelib.domain.runs import COMPLETED
from chalicelib.domain.triggers import FiringError, FiringResult, Trigger, TriggerFiring
from chalicelib.engine.start import StartOptions, start_run
from chalicelib.engine.triggers import targets
from chalicelib.errors import PawlError
from chalicelib.store import agents, runs
from chalicelib.store import triggers as store

log = logging.getLogger("pawl.triggers")

#: Runs read (newest first) when looking for the ``"latest"`` completed baseline.
LATEST_BASELINE_SCAN = 200


def fire(
    trigger: Trigger,
    source: str,
    fire_input: dict[str, Any] | None = None,
    *,
    firing_id: str | None = None,
    causation: Sequence[str] = (),
    refusal: FiringError | None = None,
) -> TriggerFiring:
    """Record and execute a firing of ``trigger``; a repeated ``firing_id`` returns the first.

    ``refusal`` records the firing as failed without starting anything (a loop guard).
    """
    effective = {**(trigger.input or {}), **(fire_input or {})}
    row = store.firing_row(
        firing_id or ids.new_id("trigger_firing"), trigger, source, effective, list(causation)
    )
    if not store.create_firing(row):
        return store.get_firing(row.id)
    return execute(trigger, row.id, refusal)


def execute(trigger: Trigger, firing_id: str, refusal: FiringError | None = None) -> TriggerFiring:
    """Run a recorded pending firing (only the caller that claims it does)."""
    if not store.claim_firing(firing_id):
        return store.get_firing(firing_id)
    if refusal is not None:
        return store.finish_firing(firing_id, None, refusal)
    firing = store.get_firing(firing_id)
    causation = [*store.firing_causation(firing_id), trigger.id]
    try:
        result = _start_eval_run(trigger, firing, causation)
    except PawlError as exc:
        log.info("firing %s of %s failed: %s", firing_id, trigger.id, exc.message)
        error = FiringError(code=exc.code, message=exc.message, meta=_plain(exc.meta))
        return store.finish_firing(firing_id, None, error)
    except Exception:
        log.exception("firing %s of %s raised", firing_id, trigger.id)
        error = FiringError(code="INTERNAL_ERROR", message="the firing failed unexpectedly")
        return store.finish_firing(firing_id, None, error)
    return store.finish_firing(firing_id, result, None)


def _plain(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, str | int | float | bool) else str(v) for k, v in meta.items()}


def _latest_baseline(eval_id: str) -> str | None:
    """The eval's newest completed run (None when it has none yet)."""
    found, cursor = runs.list_runs(eval_id, 100, None)
    seen = 0
    while True:
        for run in found:
            if run.status == COMPLETED:
                return run.id
        seen += len(found)
        if cursor is None or seen >= LATEST_BASELINE_SCAN:
            return None
        found, cursor = runs.list_runs(eval_id, 100, cursor)


def _start_eval_run(trigger: Trigger, firing: TriggerFiring, causation: list[str]) -> FiringResult:
    evaluation = targets.find_eval_target(trigger.project_id, trigger.target_id)
    wanted = targets.eval_input(firing.input)
    version = wanted.agent_version
    if version == targets.LATEST:
        version = agents.get_agent(evaluation.agent_id).version
    baseline = wanted.baseline_run_id
    if baseline == targets.LATEST:
        baseline = _latest_baseline(evaluation.id)
    options = StartOptions(
        wait=False,
        agent_version=version if isinstance(version, int) else None,
        baseline_run_id=baseline,
        trigger_id=trigger.id,
        causation=tuple(causation),
        run_id=ids.derived_id("eval_run", firing.id),
    )
    run = start_run(evaluation, options)
    return FiringResult(target_type="eval", result_id=run.id, status=run.status)
