"""The ``tool`` scorer: a project tool grades each item (bring your own algorithm).

Input: the item's variables (what a ``json_logic`` expression reads), with the scorer's
``preset_parameters`` merged in at the top level (the config refuses presets that would
overwrite the engine's keys). Output: a JSON object ``{score: 0..1, passed?, reasoning?}``.

Verdict: the tool's own ``passed`` wins; else ``score >= pass_threshold``; with neither,
the item errors. A failed call, an answer that is not such an object, or an out-of-range
score errors the item too (errors are not zeros), with a message naming the scorer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chalicelib.domain.tools import SERVER_CALLABLE
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.decorators import scorer
from chalicelib.plugins.scorer_contract import (
    ItemContext,
    ScoreOutcome,
    ScorerFailed,
    ScoringEnv,
    ValidationEnv,
)
from chalicelib.scoring.configs import RESERVED_TOOL_KEYS, ToolScorerConfig
from chalicelib.store import tools
from chalicelib.tools import (
    MISSING_TOOL_CONTEXT_KEY,
    TOOL_ANSWER_INVALID,
    MissingContextKey,
    ToolFailed,
    call_tool,
)

TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
TOOL_VERDICT_MISSING = "TOOL_VERDICT_MISSING"


class AnswerRefused(Exception):
    def __init__(self, message: str, code: str = TOOL_ANSWER_INVALID) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def outcome_from_answer(answer: dict[str, Any], pass_threshold: float | None) -> ScoreOutcome:
    """Read ``{score, passed?, reasoning?}`` and resolve the verdict. Pure.

    Keys beside these are ignored (tools add their own); ``null`` counts as absent.
    """
    score = answer.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise AnswerRefused('the answer needs a numeric "score" from 0 to 1')
    if not 0 <= score <= 1:
        raise AnswerRefused(f"score {score} is outside 0-1")
    passed = answer.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise AnswerRefused('"passed" must be true or false')
    reasoning = answer.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise AnswerRefused('"reasoning" must be a string')
    if passed is None:
        if pass_threshold is None:
            raise AnswerRefused(
                'the tool answered no "passed" and the scorer has no pass_threshold: '
                "there is no verdict",
                TOOL_VERDICT_MISSING,
            )
        passed = score >= pass_threshold
    return ScoreOutcome(score=float(score), passed=passed, reasoning=reasoning)


def _field(resource: Any, name: str) -> Any:
    """A field of a looked-up resource: a :class:`Tool`, or a mapping from another lookup."""
    if isinstance(resource, Mapping):
        return resource.get(name)
    return getattr(resource, name, None)


def _check_action(
    tool_id: str, tool_type: str, config: Mapping[str, Any], action: str | None
) -> None:
    if tool_type != "builtin":
        if action is not None:
            raise ValidationFailed(
                f"tool {tool_id} is a {tool_type} tool: it has no actions to name", field="action"
            )
        return
    actions = config.get("actions")
    if action is None or (actions is not None and action not in actions):
        offered = f" ({', '.join(actions)})" if actions else ""
        raise ValidationFailed(
            f"tool {tool_id} is a builtin tool: name one of its actions{offered}", field="action"
        )


def _check(config: ToolScorerConfig, env: ValidationEnv) -> None:
    tool = env.lookup("tool", config.tool_id)
    if tool is None:
        raise ValidationFailed(f"tool {config.tool_id} not found in this project", field="tool_id")
    tool_type = str(_field(tool, "type"))
    if tool_type not in SERVER_CALLABLE:
        raise ValidationFailed(
            f"tool {config.tool_id} is a {tool_type} tool: it waits for a calling client, "
            "and an eval run scores server-side",
            field="tool_id",
        )
    tool_config = _field(tool, "config") or {}
    _check_action(config.tool_id, tool_type, tool_config, config.action)
    pinned = sorted(RESERVED_TOOL_KEYS & set(tool_config.get("preset_parameters") or {}))
    if pinned:
        raise ValidationFailed(
            f"tool {config.tool_id} presets {pinned}, which would overwrite the item "
            "context the scorer sends it",
            field="tool_id",
        )


@scorer("tool", check=_check, named=True)
def tool_scorer(config: ToolScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
    who = f"tool scorer {config.name!r}"
    tool = tools.find_project_tool(env.project_id, config.tool_id)
    if tool is None:
        raise ScorerFailed(f"{who}: tool {config.tool_id} no longer exists", TOOL_NOT_FOUND)
    payload = {**(config.preset_parameters or {}), **item.as_variables()}
    try:
        answer = call_tool(tool, payload, tool_context=env.tool_context, action=config.action)
        return outcome_from_answer(answer, config.pass_threshold)
    except MissingContextKey as exc:
        raise ScorerFailed(f"{who}: {exc}", MISSING_TOOL_CONTEXT_KEY) from None
    except ToolFailed as exc:
        raise ScorerFailed(f"{who}: {exc.message}", exc.code) from None
    except AnswerRefused as exc:
        raise ScorerFailed(f"{who}: {exc.message}", exc.code) from None
