"""Python agents for engine tests and the benchmark (``tests.support.agents:<name>``).

``scripted`` reads the last user message and acts on it, so one agent covers every
behaviour a dataset item can ask for:

- ``echo:<text>``   answer ``<text>``
- ``big:<n>``       answer ``n`` characters
- ``pause``         answer ``status: requires_action``
- ``fail``          raise (a failed generation)
- ``context``       answer the forwarded tool_context as JSON
- ``flip:<text>``   answer ``<text>`` on an item's first call, ``flipped`` on later ones
- ``trials:<marks>`` answer ``yes`` on an item's n-th call when the n-th mark is ``1``, else
                    ``no`` (``|`` between marks is ignored: ``11110|11000`` scripts a
                    baseline's five trials, then a candidate's)
- ``block``         wait until :data:`RELEASE` is set (bounded), then answer ``released``
- anything else     answer it unchanged

Every call is recorded in :data:`CALLS` (thread-safe) so tests can count agent calls.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

CALLS: list[dict[str, Any]] = []
_lock = threading.Lock()
RELEASE = threading.Event()
ENTERED = threading.Semaphore(0)
BLOCK_TIMEOUT_S = 20


#: The usage a ``paid:<text>`` answer reports.
PAID_USAGE = {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001}


def reset() -> None:
    with _lock:
        CALLS.clear()
        _SCORE_RUNS.clear()
        _SCORE_CALLS.clear()
    RELEASE.clear()
    # An earlier test may have blocked several calls and waited for one: its other entries
    # must not tell this test that its own call is executing.
    while ENTERED.acquire(blocking=False):
        pass


def calls_for(item_id: str) -> int:
    with _lock:
        return sum(1 for c in CALLS if c.get("dataset_item_id") == item_id)


def wait_until_blocked(dataset_item_id: str, timeout_s: float = BLOCK_TIMEOUT_S) -> bool:
    """Wait until the ``block`` call for this item is in the agent (True), ignoring entries
    of calls another test left behind."""
    deadline = time.monotonic() + timeout_s
    while ENTERED.acquire(timeout=max(0.0, deadline - time.monotonic())):
        if calls_for(dataset_item_id):
            return True
    return False


def _last_user_text(payload: dict[str, Any]) -> str:
    for message in reversed(payload.get("input") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def scripted(payload: dict[str, Any]) -> dict[str, Any]:
    text = _last_user_text(payload)
    command, _, argument = text.partition(":")
    item = payload.get("dataset_item_id")
    with _lock:
        CALLS.append(payload)
        # Counted under the same lock as the append: trials of an item may run at once.
        if command == "trials":
            number = sum(1 for c in CALLS if c.get("dataset_item_id") == item)
    if command == "trials":
        marks = argument.replace("|", "")
        return {"output": "yes" if number <= len(marks) and marks[number - 1] == "1" else "no"}
    if command == "echo":
        return {"output": argument}
    if command == "paid":  # an answer that reports usage, as a hosted model's would
        return {"output": argument, "usage": PAID_USAGE}
    if command == "flip":  # trials that disagree: a flaky item
        first = calls_for(str(payload.get("dataset_item_id"))) == 1
        return {"output": argument if first else "flipped"}
    if command == "big":
        return {"output": "x" * int(argument)}
    if text == "pause":
        return {"output": "", "status": "requires_action"}
    if text == "fail":
        raise RuntimeError("the scripted agent was told to fail")
    if text == "context":
        return {"output": json.dumps(payload.get("tool_context") or {}, sort_keys=True)}
    if text == "block":
        ENTERED.release()
        RELEASE.wait(BLOCK_TIMEOUT_S)
        return {"output": "released"}
    return {"output": text}


def instant(payload: dict[str, Any]) -> dict[str, Any]:
    """The cheapest possible agent (benchmarks): answers the last user message."""
    return {"output": _last_user_text(payload)}


#: The ``scores`` agent's memory: per dataset item, the runs that called it (in order), and
#: per (run, item) how many calls it answered. Cleared by :func:`reset`.
_SCORE_RUNS: dict[str, list[str]] = {}
_SCORE_CALLS: dict[tuple[str, str], int] = {}


def scores(payload: dict[str, Any]) -> dict[str, Any]:
    """Answer a score from the sequences the item's text holds, for the numeric scorer.

    The text is ``scores:<run 1>|<run 2>|...``, each run a comma-separated list of trial
    scores: the first run that calls for an item answers from the first list, the next run
    from the second, and a run's n-th call for the item answers its n-th score. Keyed by run
    rather than by a global call count, so a run that skips items (early stop) or a retried
    generation in one run never shifts another run's scores.
    """
    with _lock:
        CALLS.append(payload)
        item = str(payload.get("dataset_item_id"))
        run = str(payload.get("run_id"))
        seen = _SCORE_RUNS.setdefault(item, [])
        if run not in seen:
            seen.append(run)
        call = _SCORE_CALLS.get((run, item), 0)
        _SCORE_CALLS[(run, item)] = call + 1
        role = seen.index(run)
    _, _, argument = _last_user_text(payload).partition(":")
    runs = [run_scores.split(",") for run_scores in argument.split("|")]
    if role >= len(runs) or call >= len(runs[role]):
        raise RuntimeError(f"no score scripted for run #{role + 1}, call #{call + 1}")
    return {"output": runs[role][call].strip()}
