"""Asking a decider: one decision, answered by its backend, recorded once it settled.

Everything that can refuse the request (a backend that is gone or cannot answer) is
checked before anything is written, so a refusal is a 400, never a failed decision. A
backend that fails or answers outside the questions settles the decision ``failed`` with
a code; either way exactly one decision row is written.
"""

from __future__ import annotations

import time
from typing import Any

from chalicelib import clock, ids
from chalicelib.deciders.answer_validation import (
    DECISION_ANSWER_INVALID,
    AnswerInvalid,
    answers_from_object,
)
from chalicelib.deciders.backends import DecisionFailed, bind_backend
from chalicelib.domain.deciders import DeciderVersion, Decision, DecisionError, DecisionUsage
from chalicelib.store import deciders

MESSAGE_CHARS = 1000


def decide(
    project_id: str,
    version: DeciderVersion,
    value: Any,
    metadata: dict[str, Any],
    *,
    metered: bool = True,
) -> Decision:
    """Answer ``version``'s questions about ``value``; the recorded decision is returned.

    ``metered=False`` (a run's decider scorer): no usage event of its own, because the
    run records the decision's spend with the item's (``store.usage.batch_row``).
    """
    backend = bind_backend(project_id, version.backend)
    created_at = clock.now_iso()
    started = time.monotonic()
    answers: list[dict[str, Any]] | None = None
    error: DecisionError | None = None
    usage = DecisionUsage()
    try:
        reply = backend.answer(version.questions, value)
        usage = reply.usage
        answers = answers_from_object(version.questions, reply.answer)
    except DecisionFailed as exc:
        usage = exc.usage
        error = DecisionError(code=exc.code, message=exc.message[:MESSAGE_CHARS])
    except AnswerInvalid as exc:
        error = DecisionError(code=DECISION_ANSWER_INVALID, message=str(exc)[:MESSAGE_CHARS])
    decision = Decision(
        id=ids.new_id("decision"),
        project_id=project_id,
        decider_id=version.decider_id,
        decider_version=version.version,
        status="failed" if error else "completed",
        input=value,
        answers=answers,
        answers_by_name={a["name"]: a for a in answers} if answers is not None else None,
        error=error,
        metadata=metadata,
        usage=usage,
        latency_ms=int((time.monotonic() - started) * 1000),
        created_at=created_at,
    )
    deciders.record_decision(decision, metered=metered)
    return decision
