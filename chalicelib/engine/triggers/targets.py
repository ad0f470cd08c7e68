"""What a trigger may target (an eval, in pawl) and what its input may carry.

An eval target forwards ``input.agent_version`` (a version number, ``"latest"``: the
agent's current version at fire time, or ``"canary"``: its active release's canary at
fire time, which fails the firing when no release is active) and ``input.baseline_run_id``
(a run id, or ``"latest"``: the eval's newest completed run at fire time, none when it has
none);
every other key is ignored. Their *shape* is checked when a trigger is written and again
at fire time (a webhook body may override them); whether they still name something is
only known at fire time, where a stale value fails the firing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib import ids
from chalicelib.domain.catalog import Eval
from chalicelib.domain.triggers import SUPPORTED_TARGETS, TriggerSpec
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.store import evals

LATEST = "latest"
CANARY = "canary"


@dataclass(frozen=True)
class EvalInput:
    """The start options an eval target takes from the effective input."""

    agent_version: int | str | None = None
    baseline_run_id: str | None = None


def _input_invalid(message: str, field: str) -> ValidationFailed:
    return ValidationFailed(message, field=field, code="TRIGGER_INPUT_INVALID")


def eval_input(effective: dict[str, Any] | None) -> EvalInput:
    """The eval options of an input, or 400 ``TRIGGER_INPUT_INVALID`` naming the bad key."""
    given = effective or {}
    version = given.get("agent_version")
    valid_version = version is None or version in (LATEST, CANARY)
    valid_version = valid_version or (
        isinstance(version, int) and not isinstance(version, bool) and version >= 1
    )
    if not valid_version:
        raise _input_invalid(
            'input.agent_version must be a version number (>= 1), "latest" or "canary"',
            "input.agent_version",
        )
    baseline = given.get("baseline_run_id")
    if (
        baseline is not None
        and baseline != LATEST
        and not (isinstance(baseline, str) and ids.is_id("eval_run", baseline))
    ):
        raise _input_invalid(
            'input.baseline_run_id must be a run id (evrun_...) or "latest"',
            "input.baseline_run_id",
        )
    return EvalInput(agent_version=version, baseline_run_id=baseline)


def target_not_found(target_id: str) -> ValidationFailed:
    return ValidationFailed(
        f"target {target_id} does not exist in the trigger's project",
        field="target_id",
        code="TRIGGER_TARGET_NOT_FOUND",
    )


def find_eval_target(project_id: str, target_id: str) -> Eval:
    """The eval a trigger targets, in the trigger's project (else 400, no existence leak)."""
    try:
        found = evals.get_eval(target_id) if ids.is_id("eval", target_id) else None
    except NotFound:
        found = None
    if found is None or found.project_id != project_id:
        raise target_not_found(target_id)
    return found


def not_allowed(message: str, field: str) -> ValidationFailed:
    return ValidationFailed(message, field=field, code="TRIGGER_ACTION_NOT_ALLOWED")


def check_target(project_id: str, spec: TriggerSpec) -> None:
    """The target is supported, exists in the project, and the input fits it."""
    if spec.target_type not in SUPPORTED_TARGETS:
        raise ValidationFailed(
            f"target_type {spec.target_type!r} is not supported by pawl: a trigger can start "
            'an eval run only (target_type "eval")',
            field="target_type",
            code="TRIGGER_TARGET_NOT_SUPPORTED",
        )
    if spec.action is not None:
        raise not_allowed("action applies to tool targets only", "action")
    eval_input(spec.input)
    find_eval_target(project_id, spec.target_id)
