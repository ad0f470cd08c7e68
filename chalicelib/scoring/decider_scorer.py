"""The ``decider`` scorer: each item is graded by one decision of a project decider.

The decision's input is the scorer's ``input`` mapping (JSON Logic) over the item's
variables, or those variables themselves. It is asked under the decider version the run
pinned at start (:func:`resolve_decider_versions`), with metadata ``{eval_id,
eval_run_id, dataset_item_id}``. The scorer's ``score`` rule, evaluated over
``{answers, answers_by_name}``, must yield a number in 0-1; the item passes when it is
at least ``pass_threshold``. A failed decision, or a score that is not such a number,
errors the item with the decision's id and code (errors are not zeros).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from chalicelib.deciders.backends import bind_backend
from chalicelib.deciders.decide import decide
from chalicelib.domain.deciders import Decider, DeciderVersion, Decision
from chalicelib.errors import ValidationFailed
from chalicelib.jsonvalues import jsonlogic
from chalicelib.plugins import decorators
from chalicelib.plugins.scorer_contract import (
    ItemContext,
    ScoreOutcome,
    ScorerFailed,
    ScoringEnv,
    UsageRecord,
    ValidationEnv,
)
from chalicelib.scoring.configs import DeciderScorerConfig
from chalicelib.store import deciders

DECIDER_NOT_FOUND = "DECIDER_NOT_FOUND"
DECIDER_INPUT_FAILED = "DECIDER_INPUT_FAILED"
DECIDER_SCORE_INVALID = "DECIDER_SCORE_INVALID"


def score_from_answers(rule: Any, decision: Decision) -> float:
    """The ``score`` rule over the decision's answers: a number in 0-1, or ValueError. Pure."""
    data = {"answers": decision.answers or [], "answers_by_name": decision.answers_by_name or {}}
    try:
        value = jsonlogic.evaluate(rule, data)
    except Exception as exc:  # the library raises anything from ZeroDivisionError to KeyError
        raise ValueError(f"the score rule could not be evaluated ({type(exc).__name__})") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"the score rule yielded {value!r}, not a number")
    if not 0 <= value <= 1:
        raise ValueError(f"the score rule yielded {value}, outside 0-1")
    return float(value)


def _pinned_version(parsed: DeciderScorerConfig, env: ScoringEnv, who: str) -> DeciderVersion:
    number = env.decider_versions.get(parsed.name)
    if number is None:  # a run started before pinning existed: today's version
        decider = deciders.find_project_decider(env.project_id, parsed.decider_id)
        if decider is None:
            raise ScorerFailed(
                f"{who}: decider {parsed.decider_id} no longer exists", DECIDER_NOT_FOUND
            )
        number = decider.version
    version = deciders.find_version(parsed.decider_id, number)
    if version is None:
        raise ScorerFailed(
            f"{who}: decider {parsed.decider_id} has no version {number}", DECIDER_NOT_FOUND
        )
    return version


def _decision_input(parsed: DeciderScorerConfig, item: ItemContext, who: str) -> Any:
    variables = item.as_variables()
    if parsed.input is None:
        return variables
    try:
        return jsonlogic.evaluate_mapping(parsed.input, variables)
    except Exception as exc:  # same library, same range of exceptions
        raise ScorerFailed(
            f"{who}: the input mapping could not be evaluated ({type(exc).__name__}: {exc})",
            DECIDER_INPUT_FAILED,
        ) from None


def _usage(decision: Decision) -> tuple[UsageRecord, ...]:
    usage = decision.usage
    return (
        UsageRecord(
            source=usage.source,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            model=usage.model,
        ),
    )


def _check(config: DeciderScorerConfig, env: ValidationEnv) -> None:
    decider = env.lookup("decider", config.decider_id)
    if decider is None:
        raise ValidationFailed(
            f"decider {config.decider_id} not found in this project", field="decider_id"
        )
    if not isinstance(decider, Decider):
        return  # found by another lookup (a plugin's, a test's): existence is all it says
    try:  # a decider whose backend is gone would fail every item: refuse it up front
        bind_backend(decider.project_id, decider.backend)
    except ValidationFailed as exc:
        raise ValidationFailed(
            f"decider {decider.id} cannot answer: {exc.message}",
            field="decider_id",
            code=exc.code,
        ) from None


@decorators.scorer("decider", check=_check, named=True)
def decider_scorer(config: DeciderScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
    who = f"decider scorer {config.name!r}"
    version = _pinned_version(config, env, who)
    metadata = {
        "eval_id": env.eval_id,
        "eval_run_id": env.run_id,
        "dataset_item_id": env.dataset_item_id,
    }
    value = _decision_input(config, item, who)
    try:
        decision = decide(env.project_id, version, value, metadata, metered=False)
    except ValidationFailed as exc:  # the backend went away since the run started
        raise ScorerFailed(f"{who}: the decider cannot answer: {exc.message}", exc.code) from None
    if decision.status != "completed":
        code = decision.error.code if decision.error else "DECISION_FAILED"
        detail = decision.error.message if decision.error else "no answers"
        raise ScorerFailed(
            f"{who}: decision {decision.id} failed ({code}): {detail}",
            code,
            decision_id=decision.id,
        )
    try:
        score = score_from_answers(config.score, decision)
    except ValueError as exc:
        raise ScorerFailed(
            f"{who}: decision {decision.id}: {exc}",
            DECIDER_SCORE_INVALID,
            decision_id=decision.id,
        ) from None
    return ScoreOutcome(
        score=score,
        passed=score >= config.pass_threshold,
        decision_id=decision.id,
        usage=_usage(decision),
    )


def resolve_decider_versions(
    scorers: Iterable[Mapping[str, Any]], project_id: str | None = None
) -> dict[str, int] | None:
    """``{scorer name: current decider version}`` to pin at run start; None with no deciders.

    A decider that is gone (or, with ``project_id``, in another project) is a 400 naming
    the scorer's ``decider_id``.
    """
    pinned: dict[str, int] = {}
    for index, scorer in enumerate(scorers):
        if scorer.get("type") != "decider":
            continue
        decider_id = str(scorer.get("decider_id"))
        decider = (
            deciders.find_decider(decider_id)
            if project_id is None
            else deciders.find_project_decider(project_id, decider_id)
        )
        if decider is None:
            raise ValidationFailed(
                f"decider {decider_id} not found in this project",
                field=f"scorers.{index}.decider_id",
            )
        pinned[str(scorer["name"])] = decider.version
    return pinned or None
