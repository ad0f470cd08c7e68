"""The run row's record of a sliced settle, and where each slice's partial is kept.

The settle claim (``runs.claim_settle``) stays the one conditional write that decides
who settles. A claimant that slices the settle records how many slices it cut
(:func:`plan`); each slice worker stores its partial in S3 and then adds its number to
the run's set of done slices (:func:`count_done`), one conditional update that answers
how many are done. Adding to a set is idempotent, so a redelivered slice never counts
twice, and whichever update completes the set is the one that combines; a redelivery
after that sees the set complete too and combines again, which settles nothing twice
(the terminal write is conditional).
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib import clock
from chalicelib.domain.runs import RUNNING
from chalicelib.store import blobs
from chalicelib.store.base import serialized_writes
from chalicelib.store.models import RunModel


def partial_key(run_id: str, slices: int, number: int) -> str:
    """Where slice ``number`` of ``slices`` keeps its partial (the plan in the key, so a
    partial of another plan is never read)."""
    return f"runs/{run_id}/settle/{slices:04d}/slice-{number:04d}.json"


def plan(run_id: str, slices: int) -> set[int] | None:
    """Record that the claimed settle of ``run_id`` is cut into ``slices``: the slices
    already done under that plan (none, unless a reaper re-drives a stuck settle, which
    then reuses the partials stored so far; a different earlier plan's are forgotten).
    None when the run is no longer running and claimed."""
    claimed = (
        RunModel.id.exists() & (RunModel.status == RUNNING) & (RunModel.settle_claimed == True)  # noqa: E712
    )
    now = clock.now_iso()
    model = RunModel(id=run_id)
    with serialized_writes():
        same = model.update_if(
            [RunModel.last_activity_at.set(now)], claimed & (RunModel.settle_slices == slices)
        )
        if not same and not model.update_if(
            [
                RunModel.settle_slices.set(slices),
                RunModel.settle_parts_done.remove(),
                RunModel.last_activity_at.set(now),
            ],
            claimed,
        ):
            return None
    # update() leaves the row's new values on the instance (ReturnValues ALL_NEW).
    return {int(number) for number in model.settle_parts_done or ()}


def count_done(run_id: str, slices: int, number: int) -> int | None:
    """Slice ``number`` is stored: how many slices of the plan are done now, or None when
    the run ended or was re-planned meanwhile (the slice's work is then not used)."""
    model = RunModel(id=run_id)
    condition = (
        RunModel.id.exists() & (RunModel.status == RUNNING) & (RunModel.settle_slices == slices)
    )
    with serialized_writes():
        if not model.update_if(
            [
                RunModel.settle_parts_done.add({number}),
                RunModel.last_activity_at.set(clock.now_iso()),
            ],
            condition,
        ):
            return None
    # update() leaves the row's new values on the instance (ReturnValues ALL_NEW).
    return len(model.settle_parts_done or ())


def store_partial(run_id: str, slices: int, number: int, state: dict[str, Any]) -> None:
    body = json.dumps(state, separators=(",", ":"), allow_nan=False).encode("utf-8")
    blobs.put_bytes(partial_key(run_id, slices, number), body, "application/json")


def load_partial(run_id: str, slices: int, number: int) -> dict[str, Any]:
    body = blobs.get_bytes(partial_key(run_id, slices, number))
    if body is None:  # counted done only after it was stored, and nothing deletes it
        raise RuntimeError(f"run {run_id}: slice {number} of {slices} counted but not stored")
    state: dict[str, Any] = json.loads(body)
    return state
