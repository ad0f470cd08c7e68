"""Evals as code: :func:`evaluate` names a dataset, an agent and scorers, runs them on a pawl
server and answers a :class:`Verdict`.

What it names is created or updated idempotently (:mod:`pawl.evaluation_apply`: a formation
for the agent, dataset and eval, the items synced by content), so calling it twice with the
same arguments creates nothing new and the second run pairs item for item with the first.
The verdict is the server's (the eval's gates: ``threshold``, ``max_regression`` against the
baseline), worded as ``pawl run`` words it (:mod:`pawl.demo.summary`), with the items whose
verdict flipped against the baseline (:mod:`pawl.demo.flips`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pawl.demo.flips import (
    MAX_SHOWN,
    FlippedItem,
    Flips,
    ItemVerdict,
    capped,
    flipped_items,
    item_verdicts,
)
from pawl.evaluation_apply import Applied, DesiredItem, EvaluationError
from pawl.transport import DEFAULT_SERVER, NO_KEY_MESSAGE, PawlClient, Run, RunWaitTimeout
from pawl.verdict import Figures, Verdict, explain, figures_of, reasons_of

__all__ = [
    "Applied",
    "EvaluationError",
    "Figures",
    "FlippedItem",
    "ItemVerdict",
    "Verdict",
    "evaluate",
    "explain",
]

LATEST = "latest"
#: A formation's name (chalicelib.api.formations), which the eval's name is too.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$")
DEFAULT_TIMEOUT_S = 3600.0

#: A dataset: items (``{"input", "expected_output"?, "metadata"?}``), a .jsonl/.csv path,
#: or the id of a dataset that already exists.
DatasetArg = Sequence[Mapping[str, Any]] | str | os.PathLike[str]


# --- evaluate -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    server: str
    api_key: str
    project_id: str | None


def _settings(server: str | None, api_key: str | None, project_id: str | None) -> _Settings:
    key = api_key or os.environ.get("PAWL_API_KEY")
    if not key:
        raise EvaluationError(NO_KEY_MESSAGE.replace("--api-key", "api_key="))
    return _Settings(
        server=server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER,
        api_key=key,
        project_id=project_id or os.environ.get("PAWL_PROJECT_ID"),
    )


def _eval_properties(
    scorers: Sequence[Mapping[str, Any]],
    threshold: float | None,
    max_regression: float | None,
    group_by: str | None,
    trials: int,
) -> dict[str, Any]:
    if threshold is None and max_regression is None:
        raise EvaluationError(
            "evaluate needs a gate: threshold= (a pass rate to reach) and/or max_regression= "
            "(the largest significant drop against the baseline)"
        )
    if not scorers or not all(isinstance(s, Mapping) for s in scorers):
        raise EvaluationError("scorers: give a non-empty list of scorer objects ({'type': ...})")
    return {
        "scorers": [dict(s) for s in scorers],
        "pass_threshold": threshold,
        "max_regression": max_regression,
        "group_by": group_by,
        "trials": trials,
    }


def _baseline(client: PawlClient, eval_id: str, baseline: str | None) -> tuple[str | None, str]:
    """The baseline run's id and, when there is none, a note saying why."""
    if baseline is None:
        return None, "no baseline asked for (baseline=None): nothing to compare with"
    if baseline != LATEST:
        return baseline, ""
    latest = client.latest_completed_run(eval_id)
    if latest is None:
        return None, "no baseline yet: this eval has no completed run to compare with"
    return latest.id, ""


def _run(
    client: PawlClient,
    eval_id: str,
    baseline: str | None,
    metadata: Mapping[str, str] | None,
    timeout_s: float,
) -> tuple[Run, list[str]]:
    baseline_id, note = _baseline(client, eval_id, baseline)
    queued = client.start_run(eval_id, baseline_run_id=baseline_id, metadata=dict(metadata or {}))
    notes = [note] if note else []
    try:
        return client.wait_for_run(eval_id, queued.id, timeout_s=timeout_s), notes
    except RunWaitTimeout as exc:
        notes.append(f"{exc}: the run keeps going on the server, with no verdict yet")
        return exc.run, notes


def _items(client: PawlClient, run: Run) -> tuple[Flips, list[ItemVerdict]]:
    """The flipped items against the baseline and the failing ones, from the runs' results
    (reduced per item as the engine reduces trials: the eval's ``trial_reducer``)."""
    reducer = str(client.get_eval(run.eval_id).get("trial_reducer") or "all")
    now = item_verdicts(client.iter_results(run.eval_id, run.id), reducer)
    failing = sorted((v for v in now.values() if not v.passed), key=lambda v: v.dataset_item_id)
    if not run.baseline_run_id:
        return Flips([], 0), failing
    before = item_verdicts(client.iter_results(run.eval_id, run.baseline_run_id), reducer)
    return capped(flipped_items(before, now)), failing


def _verdict(
    client: PawlClient, name: str, settings: _Settings, run: Run, notes: list[str], applied: Applied
) -> Verdict:
    from chalicelib.domain import console_links

    flips, failing = _items(client, run) if run.status == "completed" else (Flips([], 0), [])
    if run.status == "completed" and run.passed is None:
        notes.append("no gate applied: no threshold, and no baseline for max_regression")
    return Verdict(
        passed=run.status == "completed" and run.passed is not False,
        reasons=reasons_of(run, notes),
        figures=figures_of(run),
        flipped=tuple(flips.shown),
        more_flipped=flips.more,
        failing=tuple(failing[:MAX_SHOWN]),
        more_failing=max(0, len(failing) - MAX_SHOWN),
        run_id=run.id,
        eval_id=run.eval_id,
        name=name,
        status=run.status,
        console_url=console_links.run_url(settings.server, run.eval_id, run.id),
        baseline_run_id=run.baseline_run_id,
        applied=applied,
    )


def evaluate(
    name: str,
    *,
    dataset: DatasetArg,
    agent: str,
    scorers: Sequence[Mapping[str, Any]],
    threshold: float | None = None,
    baseline: str | None = LATEST,
    max_regression: float | None = None,
    group_by: str | None = None,
    trials: int = 1,
    agent_headers: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
    server: str | None = None,
    api_key: str | None = None,
    project_id: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Verdict:
    """Make the eval ``name`` match these arguments on the server, run it, wait, judge it.

    ``dataset``: a list of items, a ``.jsonl``/``.csv`` path (as ``pawl datasets import``
    reads it) or an existing dataset id. ``agent``: an http agent's URL, or an existing agent
    id. ``scorers``: the eval's ``scorers`` list. ``baseline``: ``"latest"`` (the newest
    completed run of the eval, when there is one), a run id, or None. ``threshold`` and
    ``max_regression`` are the eval's gates (at least one is needed). ``server``/``api_key``/
    ``project_id`` default to ``$PAWL_SERVER``/``$PAWL_API_KEY``/``$PAWL_PROJECT_ID``.

    Raises :class:`EvaluationError` for an argument it cannot use (before anything is
    written), ``pawl.transport.ApiError`` when the server refuses a request and
    ``ServerUnreachable`` when there is no server.
    """
    from pawl.evaluation_apply import agent_source, dataset_source, ensure, template_for

    if not isinstance(name, str) or not NAME.match(name):
        raise EvaluationError(
            f"name: {name!r} must start with a letter or digit and hold only letters, digits, "
            "'_', '.' and '-' (at most 200): it names the eval, its dataset, agent and formation"
        )
    settings = _settings(server, api_key, project_id)
    properties = _eval_properties(scorers, threshold, max_regression, group_by, trials)
    source = dataset_source(dataset)
    items: list[DesiredItem] | None = None if isinstance(source, str) else source
    dataset_id = source if isinstance(source, str) else None
    template = template_for(name, agent_source(agent), dataset_id, properties, agent_headers)
    with PawlClient(settings.server, settings.api_key) as client:
        target = ensure(client, name, template, items, settings.project_id)
        run, notes = _run(client, target.eval_id, baseline, metadata, timeout_s)
        return _verdict(client, name, settings, run, notes, target.applied)
