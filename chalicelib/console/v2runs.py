"""A ``/v2`` (OpenWOP) run on the console's run page: the run is a pawl run of its suite's
eval (same id), so the eval, run and item pages show it as any run; what only ``/v2``
knows — its suite, modes and the paired verdict against its ``baselineRunId`` — is read
through the ``/v2`` routes themselves (:func:`chalicelib.api.routing.dispatch`, their
``openwop:GetRun`` action and tenancy), as the signed-in key."""

from __future__ import annotations

from typing import Any

from chalicelib.api.auth import Caller
from chalicelib.console import figures, reads
from chalicelib.domain.runs import TERMINAL_STATUSES
from chalicelib.errors import PawlError


def v2_view(caller: Caller, run_id: str) -> dict[str, Any] | None:
    """The run as ``/v2`` shows it, with its paired verdict once terminal; None when it is
    no ``/v2`` run of the key's project (or the key may not read it there)."""
    if caller.project_id is None:  # /v2 takes a project key: the admin's answer is a 403
        return None
    try:
        run = reads.get(caller, "/v2/runs/{runId}", runId=run_id)
        regression = None
        if run.get("baselineRunId") and run.get("status") in TERMINAL_STATUSES:
            summary = reads.get(caller, "/v2/runs/{runId}/eval-summary", runId=run_id)
            regression = summary.get("regression")
    except PawlError:
        return None
    return {"run": run, "regression": paired_view(regression) if regression else None}


def paired_view(regression: dict[str, Any]) -> dict[str, Any]:
    """The ``regression`` block of an EvalSummary, as text for the page."""
    return {
        "baseline_run_id": regression.get("baselineRunId"),
        "verdict": regression.get("verdict"),
        "score_delta": figures.signed_percent(regression.get("scoreDelta")),
        "paired": regression.get("pairedTaskCount"),
        "improved": regression.get("improvedCount"),
        "regressed": regression.get("regressedCount"),
        "p_value": figures.p_value(regression.get("pValue")),
    }
