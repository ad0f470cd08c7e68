"""The conformance fixtures every tenant can run (RFC 0251 §Conformance).

Two versions of one suite, and the built-in agent they run on. The agent answers each
task's input unchanged (an echo), so a task passes exactly when its expected value is
its input: ``base-only`` expects something else and fails; the two shared tasks are
identical in both versions and pass.
"""

from __future__ import annotations

import copy
from typing import Any

CONFORMANCE_AGENT_ID = "conformance-eval-agent"
SUITE_ID = "core.openwop.evals.conformance-regression"
BASE_ID = "conformance-eval-regression-base"
CANDIDATE_ID = "conformance-eval-regression-candidate"


def _golden(task_id: str, text: str, expected: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "input": text,
        "expected": {"kind": "golden", "match": {"strategy": "exact", "value": expected}},
    }


_SHARED_A = _golden("shared-a", "alpha", "alpha")
_SHARED_B = _golden("shared-b", "bravo", "bravo")

_DOCUMENTS: dict[str, dict[str, Any]] = {
    BASE_ID: {
        "suiteId": SUITE_ID,
        "version": "1.0.0",
        "modes": ["golden", "regression"],
        "tasks": [_golden("base-only", "charlie", "not charlie"), _SHARED_A, _SHARED_B],
    },
    CANDIDATE_ID: {
        "suiteId": SUITE_ID,
        "version": "1.1.0",
        "modes": ["golden", "regression"],
        "tasks": [_SHARED_A, _SHARED_B, _golden("candidate-only", "delta", "delta")],
    },
}

FIXTURE_IDS: tuple[str, ...] = tuple(_DOCUMENTS)


def fixture(fixture_id: str) -> dict[str, Any] | None:
    """A fixture's suite document (a copy), or None for an unknown id."""
    document = _DOCUMENTS.get(fixture_id)
    return copy.deepcopy(document) if document is not None else None
